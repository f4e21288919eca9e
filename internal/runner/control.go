package runner

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Control notices, XADDed to the processor's control stream with the fields
// "type", "executor" and, for noticeAssigned, "version", for
// noticeReleased, "partition".
const (
	noticeJoin     = "join"
	noticeLeave    = "leave"
	noticeDead     = "dead"
	noticeAssigned = "assigned"
	noticeReleased = "released" // a partition lock was released: its next owner may take it now
)

// announce adds a notice; n is the version of noticeAssigned, the partition
// of noticeReleased.
func (e *Executor) announce(ctx context.Context, kind, executor string, n int64) error {
	return e.group.Announce(ctx, noticeFields(kind, executor, n)...)
}

// noticeFields returns the field, value list of a notice.
func noticeFields(kind, executor string, n int64) []any {
	vals := []any{"type", kind, "executor", executor}
	switch kind {
	case noticeAssigned:
		vals = append(vals, "version", strconv.FormatInt(n, 10))
	case noticeReleased:
		vals = append(vals, "partition", strconv.FormatInt(n, 10))
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

// released returns the partition of a noticeReleased: its lock is free, so
// an executor waiting to take it can try at once.
func released(values map[string]any) (int, bool) {
	if kind, _ := values["type"].(string); kind != noticeReleased {
		return 0, false
	}
	ps, _ := values["partition"].(string)
	p, err := strconv.Atoi(ps)
	return p, err == nil && p >= 0
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
			} else if p, ok := released(m.Values); ok {
				e.freed(p)
			}
		}
	}
}
