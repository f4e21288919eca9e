// Queue events: the setting that turns a queue's events stream on (written
// by the task scripts, see event in task_common.lua) and the reads of that
// stream.

package rdb

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// EventsField is the field of a queue's live settings (KeySpace.TaskConfig)
// holding the length cap of its events stream (KeySpace.TaskEvents): while
// it is there, every task script that moves a task appends an entry.
const EventsField = "ev"

// SetEvents turns the events of the queue whose live settings hash is
// config on with a length cap of maxLen entries (XADD MAXLEN ~), or off
// with maxLen 0 (the history is kept, bounded, until turned on again or
// deleted with the queue's keys).
func SetEvents(ctx context.Context, c redis.Cmdable, config string, maxLen int64) error {
	if maxLen <= 0 {
		return c.HDel(ctx, config, EventsField).Err()
	}
	return c.HSet(ctx, config, EventsField, maxLen).Err()
}

// EventsCap returns the length cap of the queue's events, 0 when they are
// off.
func EventsCap(ctx context.Context, c redis.Cmdable, config string) (int64, error) {
	v, err := c.HGet(ctx, config, EventsField).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n, nil
}

// An Event is an entry of a queue's events stream.
type Event struct {
	ID      string // the entry's ID (its first part: the time in Unix ms)
	Task    string // t
	State   string // s
	Prev    string // p ("" = none: the task was created)
	Attempt string // a
	Error   string // e
}

func eventOf(m redis.XMessage) Event {
	e := Event{ID: m.ID}
	e.Task, _ = m.Values["t"].(string)
	e.State, _ = m.Values["s"].(string)
	e.Prev, _ = m.Values["p"].(string)
	e.Attempt, _ = m.Values["a"].(string)
	e.Error, _ = m.Values["e"].(string)
	return e
}

// ReadEvents reads up to n events of the stream events after the entry ID
// after, waiting up to block for one (XREAD; block < 0: not at all); none
// is not an error.
func ReadEvents(ctx context.Context, c redis.Cmdable, events, after string, n int64, block time.Duration) ([]Event, error) {
	res, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{events, after}, Count: n, Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, s := range res {
		for _, m := range s.Messages {
			out = append(out, eventOf(m))
		}
	}
	return out, nil
}

// LastEventID returns the ID of the newest entry of the stream events, "0-0"
// when it has none.
func LastEventID(ctx context.Context, c redis.Cmdable, events string) (string, error) {
	res, err := c.XRevRangeN(ctx, events, "+", "-", 1).Result()
	if err != nil {
		return "", err
	}
	if len(res) == 0 {
		return "0-0", nil
	}
	return res[0].ID, nil
}
