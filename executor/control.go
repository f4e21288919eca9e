package executor

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
	vals := []any{"type", kind, "executor", executor}
	switch kind {
	case noticeAssigned:
		vals = append(vals, "version", strconv.FormatInt(n, 10))
	case noticeReleased:
		vals = append(vals, "partition", strconv.FormatInt(n, 10))
	}
	return e.group.Announce(ctx, vals...)
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
			from, _ := m.Values["executor"].(string)
			switch m.Values["type"] {
			case noticeAssigned:
				e.poke()
			case noticeReleased:
				ps, _ := m.Values["partition"].(string)
				if n, err := strconv.Atoi(ps); err == nil {
					e.freed(n)
				}
			case noticeJoin, noticeLeave, noticeDead:
				if from != e.id {
					e.poke()
				}
			}
		}
	}
}
