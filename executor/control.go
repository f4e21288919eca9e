package executor

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Control notices, XADDed to the processor's control stream with the fields
// "type", "executor" and, for noticeAssigned, "version".
const (
	noticeJoin     = "join"
	noticeLeave    = "leave"
	noticeDead     = "dead"
	noticeAssigned = "assigned"
)

func (e *Executor) announce(ctx context.Context, kind, executor string, version int64) error {
	return e.group.Announce(ctx, noticeFields(kind, executor, version)...)
}

// noticeFields returns the field, value list of a notice.
func noticeFields(kind, executor string, version int64) []any {
	vals := []any{"type", kind, "executor", executor}
	if kind == noticeAssigned {
		vals = append(vals, "version", strconv.FormatInt(version, 10))
	}
	return vals
}

// wakes reports whether the notice with fields values, read by executor
// self, makes it check the membership or the assignment: a new assignment,
// or another executor that joined, left or died. Other notices (unknown
// types, written by a newer version) are ignored.
func wakes(self string, values map[string]any) bool {
	from, _ := values["executor"].(string)
	kind, _ := values["type"].(string)
	switch kind {
	case noticeAssigned:
		return true
	case noticeJoin, noticeLeave, noticeDead:
		return from != self
	}
	return false
}

// listen reads the control stream from the last ID it has seen, never from
// "$", so no notice is missed between two reads. Joins, leaves and deaths
// of others make e check the membership; a new assignment makes e apply it.
func (e *Executor) listen(ctx context.Context) {
	last, err := e.group.LastNotice(ctx)
	if err != nil {
		last = "0-0"
	}
	reader := redis.Cmdable(e.client)
	if e.own != nil {
		reader = e.own
	}
	for ctx.Err() == nil {
		msgs, err := e.group.Notices(ctx, reader, last, e.opts.ReadBlock)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Debug("control read failed", "error", err)
				sleepCtx(ctx, 100*time.Millisecond)
			}
			continue
		}
		for _, m := range msgs {
			last = m.ID
			if wakes(e.id, m.Values) {
				e.poke()
			}
		}
	}
}
