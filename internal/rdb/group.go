package rdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Group is the Redis state of one processor (a consumer group) of one
// stream: membership, assignment, control stream, stop reports and dead
// letters, all under the tag {APP:STREAM:PROCESSOR}.
type Group struct {
	c         redis.UniversalClient
	k         KeySpace
	stream    string
	processor string
}

// NewGroup returns the group state of processor on stream.
func NewGroup(c redis.UniversalClient, k KeySpace, stream, processor string) Group {
	return Group{c: c, k: k, stream: stream, processor: processor}
}

// MembersKey is the key of the members sorted set.
func (g Group) MembersKey() string { return g.k.Members(g.stream, g.processor) }

// AssignmentKey is the key of the assignment.
func (g Group) AssignmentKey() string { return g.k.Assignment(g.stream, g.processor) }

// AdminKey is the key of the admin lock.
func (g Group) AdminKey() string { return g.k.Admin(g.stream, g.processor) }

// ControlKey is the key of the control stream.
func (g Group) ControlKey() string { return g.k.Control(g.stream, g.processor) }

// Leave removes member from the membership (ZREM).
func (g Group) Leave(ctx context.Context, member string) error {
	return g.c.ZRem(ctx, g.MembersKey(), member).Err()
}

// Alive counts the members whose heartbeat has not expired, on the server's
// clock (TIME, then ZCOUNT deadline >= now).
func (g Group) Alive(ctx context.Context) (int64, error) {
	now, err := ServerTime(ctx, g.c)
	if err != nil {
		return 0, err
	}
	return g.c.ZCount(ctx, g.MembersKey(), strconv.FormatInt(now.UnixMilli(), 10), "+inf").Result()
}

// Assignment returns the stored assignment (JSON), nil when there is none
// (GET).
func (g Group) Assignment(ctx context.Context) ([]byte, error) {
	b, err := g.c.Get(ctx, g.AssignmentKey()).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

// ControlLen caps the control stream (XADD MAXLEN ~).
const ControlLen = 1000

// Announce adds a notice of fields and values to the control stream.
func (g Group) Announce(ctx context.Context, vals ...any) error {
	return g.c.XAdd(ctx, &redis.XAddArgs{Stream: g.ControlKey(), MaxLen: ControlLen, Approx: true, Values: vals}).Err()
}

// LastNotice returns the ID of the control stream's last notice, "0-0" when
// it has none.
func (g Group) LastNotice(ctx context.Context) (string, error) {
	msgs, err := g.c.XRevRangeN(ctx, g.ControlKey(), "+", "-", 1).Result()
	if err != nil || len(msgs) == 0 {
		return "0-0", err
	}
	return msgs[0].ID, nil
}

// Notices waits up to block for notices after the ID after, on reader (a
// connection of the caller's choice, as the wait holds it), and returns them;
// none when the wait timed out.
func (g Group) Notices(ctx context.Context, reader redis.Cmdable, after string, block time.Duration) ([]redis.XMessage, error) {
	res, err := reader.XRead(ctx, &redis.XReadArgs{Streams: []string{g.ControlKey(), after}, Count: 100, Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []redis.XMessage
	for _, s := range res {
		out = append(out, s.Messages...)
	}
	return out, nil
}

// WriteReport records the stop report of partition p in the quarantine
// hash; build makes it from the server's time (TIME, then HSET).
func (g Group) WriteReport(ctx context.Context, p int, build func(now time.Time) ([]byte, error)) error {
	now, err := ServerTime(ctx, g.c)
	if err != nil {
		return err
	}
	b, err := build(now)
	if err != nil {
		return err
	}
	return g.c.HSet(ctx, g.k.Quarantine(g.stream, g.processor), strconv.Itoa(p), b).Err()
}

// Report returns the stop report of partition p, nil when there is none
// (HGET).
func (g Group) Report(ctx context.Context, p int) ([]byte, error) {
	b, err := g.c.HGet(ctx, g.k.Quarantine(g.stream, g.processor), strconv.Itoa(p)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

// ClearReport deletes the stop report of partition p (HDEL).
func (g Group) ClearReport(ctx context.Context, p int) error {
	return g.c.HDel(ctx, g.k.Quarantine(g.stream, g.processor), strconv.Itoa(p)).Err()
}

// DeadLetters appends entries (field, value, ... lists) to the dead-letter
// stream, capped at about maxLen, in one pipelined round trip.
func (g Group) DeadLetters(ctx context.Context, entries [][]any, maxLen int64) error {
	key := g.k.DeadLetter(g.stream, g.processor)
	pipe := g.c.Pipeline()
	for _, vals := range entries {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: maxLen, Approx: true, Values: vals})
	}
	_, err := pipe.Exec(ctx)
	return err
}

// ServerTime returns the Redis server's time (TIME).
func ServerTime(ctx context.Context, c redis.UniversalClient) (time.Time, error) {
	return c.Time(ctx).Result()
}

// ErrNotHeld is returned by Fenced when the lock does not hold the value.
var ErrNotHeld = errors.New("rdb: lock not held")

// maxFencedTries bounds the optimistic retries of a fenced write whose
// transaction failed because the lock key changed (a refresh touches it).
const maxFencedTries = 5

// Fenced runs fn's commands in a MULTI/EXEC transaction that Redis executes
// only while lock holds value: WATCH lock, GET lock, MULTI, fn's commands,
// EXEC. A transaction aborted because the lock key changed meanwhile (the
// holder's own refresh, or a takeover) is tried again, a few times. It
// returns ErrNotHeld when the lock holds another value or none.
func Fenced(ctx context.Context, c redis.UniversalClient, lock, value string, fn func(redis.Pipeliner) error) error {
	for try := 1; ; try++ {
		err := c.Watch(ctx, func(tx *redis.Tx) error {
			v, err := tx.Get(ctx, lock).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if v != value {
				return ErrNotHeld
			}
			_, err = tx.TxPipelined(ctx, fn)
			return err
		}, lock)
		if errors.Is(err, redis.TxFailedErr) && try < maxFencedTries {
			continue
		}
		return err
	}
}

// Processors returns the full names ("stream/processor") the processor
// registry of the app of k records (HKEYS).
func Processors(ctx context.Context, c redis.UniversalClient, k KeySpace) ([]string, error) {
	return c.HKeys(ctx, k.Processors()).Result()
}

// RecordProcessor writes the definition of a processor to the registry
// (HSET).
func RecordProcessor(ctx context.Context, c redis.UniversalClient, k KeySpace, fullName string, def []byte) error {
	return c.HSet(ctx, k.Processors(), fullName, def).Err()
}

// ProcessorDefinition returns the definition the registry records for the
// processor called fullName ("stream/processor") (HGET), and whether it
// records one.
func ProcessorDefinition(ctx context.Context, c redis.UniversalClient, k KeySpace, fullName string) ([]byte, bool, error) {
	raw, err := c.HGet(ctx, k.Processors(), fullName).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return raw, true, nil
}

// RecordedTables returns the names of the tables the registry records for
// the processor called fullName ("stream/processor"), as its workers wrote
// them (app.ProcessorDefinition): none when it records no such processor.
func RecordedTables(ctx context.Context, c redis.UniversalClient, k KeySpace, fullName string) ([]string, error) {
	raw, ok, err := ProcessorDefinition(ctx, c, k, fullName)
	if err != nil || !ok {
		return nil, err
	}
	var def struct {
		Tables []struct {
			Name string `json:"name"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		return nil, fmt.Errorf("processor %s: its registry entry: %w", fullName, err)
	}
	names := make([]string, len(def.Tables))
	for i, t := range def.Tables {
		names[i] = t.Name
	}
	return names, nil
}
