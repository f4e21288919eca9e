package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
)

// Flags of "leat tasks edit".
const (
	flagRunNow     = "run-now"
	flagEditAt     = "at"
	flagEditIn     = "delay"
	flagNewPayload = "payload"
)

// editFlags are the changes "leat tasks edit" makes, applied in this
// order: payload, priority, then when it runs.
func editFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagNewPayload, Usage: "replace the task's payload with this JSON (checked as enqueue's)"},
		&cli.StringFlag{Name: flagPriority, Usage: "move the task to this priority level of its queue"},
		&cli.BoolFlag{Name: flagRunNow, Usage: "make a scheduled or retrying task ready now"},
		&cli.DurationFlag{Name: flagEditIn, Usage: "make the task due this long from now"},
		&cli.TimestampFlag{Name: flagEditAt, Usage: "make the task due at this time (RFC 3339)", Layout: time.RFC3339},
	}
}

// editTask is "leat tasks edit ID": it changes a task that waits to run.
func editTask(c *cli.Context, q *rawQueue) error {
	id := c.Args().Get(0)
	timing := 0
	for _, f := range []string{flagRunNow, flagEditIn, flagEditAt} {
		if c.IsSet(f) {
			timing++
		}
	}
	if timing > 1 {
		return usageError{errors.New("--run-now, --delay and --at are exclusive")}
	}
	if timing == 0 && !c.IsSet(flagNewPayload) && !c.IsSet(flagPriority) {
		return usageError{errors.New("say what to change: --payload, --priority, --run-now, --delay or --at")}
	}
	if c.IsSet(flagEditIn) && c.Duration(flagEditIn) < 0 {
		return usageError{fmt.Errorf("--delay %s: want a duration of at least 0", c.Duration(flagEditIn))}
	}
	var done []string
	check := func(err error) error {
		switch {
		case err == nil:
			return nil
		case errors.Is(err, task.ErrFinished), errors.Is(err, task.ErrKeyedInLine), errors.Is(err, task.ErrNotFound), errors.Is(err, task.ErrBadEdit):
			err = usageError{err}
		}
		if len(done) > 0 {
			return fmt.Errorf("%w (already changed: %s)", err, strings.Join(done, ", "))
		}
		return err
	}
	if c.IsSet(flagNewPayload) {
		p := strings.TrimSpace(c.String(flagNewPayload))
		if !json.Valid([]byte(p)) {
			return usageError{fmt.Errorf("--payload: not valid JSON: %.80q", p)}
		}
		if err := check(q.SetPayload(c.Context, id, json.RawMessage(p))); err != nil {
			return err
		}
		done = append(done, "payload")
	}
	if c.IsSet(flagPriority) {
		if err := check(q.SetPriority(c.Context, id, c.String(flagPriority))); err != nil {
			return err
		}
		done = append(done, "priority "+c.String(flagPriority))
	}
	switch {
	case c.Bool(flagRunNow):
		if err := check(q.RunNow(c.Context, id)); err != nil {
			return err
		}
		done = append(done, "ready now")
	case c.IsSet(flagEditIn), c.IsSet(flagEditAt):
		at := time.Now().Add(c.Duration(flagEditIn))
		if c.IsSet(flagEditAt) {
			at = *c.Timestamp(flagEditAt)
		}
		if err := check(q.Reschedule(c.Context, id, at)); err != nil {
			return err
		}
		done = append(done, "due "+at.UTC().Format(time.RFC3339))
	}
	_, err := fmt.Fprintf(c.App.Writer, "%s: %s\n", id, strings.Join(done, ", "))
	return err
}
