package executor

import (
	"context"
	"errors"
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

// controlLen caps the control stream (XADD MAXLEN ~).
const controlLen = 1000

func (e *Executor) controlKey() string { return e.keys.Control(e.stream.Name(), e.processor) }

func (e *Executor) announce(ctx context.Context, kind, executor string, version int64) error {
	vals := []any{"type", kind, "executor", executor}
	if kind == noticeAssigned {
		vals = append(vals, "version", strconv.FormatInt(version, 10))
	}
	return e.client.XAdd(ctx, &redis.XAddArgs{Stream: e.controlKey(), MaxLen: controlLen, Approx: true, Values: vals}).Err()
}

// listen reads the control stream from the last ID it has seen, never from
// "$", so no notice is missed between two reads. Joins, leaves and deaths
// of others make e check the membership; a new assignment makes e apply it.
func (e *Executor) listen(ctx context.Context) {
	last := "0-0"
	if msgs, err := e.client.XRevRangeN(ctx, e.controlKey(), "+", "-", 1).Result(); err == nil && len(msgs) > 0 {
		last = msgs[0].ID
	}
	reader := redis.Cmdable(e.client)
	if e.own != nil {
		reader = e.own
	}
	for ctx.Err() == nil {
		res, err := reader.XRead(ctx, &redis.XReadArgs{Streams: []string{e.controlKey(), last}, Count: 100, Block: e.opts.ReadBlock}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				e.log.Debug("control read failed", "error", err)
				sleepCtx(ctx, 100*time.Millisecond)
			}
			continue
		}
		for _, s := range res {
			for _, m := range s.Messages {
				last = m.ID
				from, _ := m.Values["executor"].(string)
				switch m.Values["type"] {
				case noticeAssigned:
					e.poke()
				case noticeJoin, noticeLeave, noticeDead:
					if from != e.id {
						e.poke()
					}
				}
			}
		}
	}
}
