// Editing a task that waits to run (task_edit.lua).

package rdb

import (
	"context"
	_ "embed"
	"strconv"
	"time"
)

var (
	//go:embed task_edit.lua
	editSrc string
	edit    = script("task_edit.lua", editSrc)
)

// Edits of EditTask.
const (
	EditNow     = "now"
	EditAt      = "at"
	EditLevel   = "level"
	EditPayload = "payload"
)

// Outcomes of EditTask.
const (
	EditOK      = "ok"
	EditMissing = "missing"
	EditRunning = "running"
	EditEnded   = "ended"
	EditKeyed   = "keyed"
)

// EditTask changes task id if it waits to run (task_edit.lua): makes it
// ready now, due at a time, at another priority level, or its payload.
// It returns the task's state before and the outcome (EditOK, or why
// nothing changed).
//
// KEYS: Keys, then the task's hash. ARGV: task ID, what, its argument.
func EditTask(ctx context.Context, c Client, k []string, id, what string, at time.Time, level int, payload []byte) (state, outcome string, err error) {
	var arg any = ""
	switch what {
	case EditAt:
		arg = strconv.FormatInt(at.UnixMilli(), 10)
	case EditLevel:
		arg = strconv.Itoa(level)
	case EditPayload:
		arg = payload
	}
	v, err := edit.Run(ctx, c, taskKeys(k, k[0]+id), id, what, arg).StringSlice()
	if err != nil {
		return "", "", err
	}
	return v[0], v[1], nil
}
