package rdb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// EachRawEntry reads raw XREADGROUP replies, RESP2 and RESP3, as go-redis
// reads its parsed ones: new entries with binary
// values, an empty read, pending entries read again, one of them deleted
// (no fields), a read inside MULTI/EXEC, and an error reply.
func TestEachRawEntry(t *testing.T) {
	t.Parallel()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc, prefix := protoClient(t, proto)
			ctx := context.Background()
			key := prefix + ":s"
			rc.XGroupCreateMkStream(ctx, key, "g", "0")
			var ids []string
			for i := range 3 {
				ids = append(ids, rc.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"key", fmt.Sprint(i), "data", "\r\n\x00\xff", "h:x", "y"}}).Val())
			}
			entries := func(raw []byte) []message {
				t.Helper()
				var got []message
				err := rdb.EachRawEntry(raw, func(id string, fields [][]byte) error {
					m := message{ID: id}
					for _, f := range fields {
						m.Fields = append(m.Fields, string(f))
					}
					got = append(got, m)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			readNew := func() []message {
				return entries(rc.DoRaw(ctx, "XREADGROUP", "GROUP", "g", "c", "COUNT", 10, "STREAMS", key, ">").Val())
			}
			// Pending entries read again: the same reply, parsed both ways.
			same := func() {
				t.Helper()
				raw := rc.DoRaw(ctx, "XREADGROUP", "GROUP", "g", "c", "COUNT", 10, "STREAMS", key, "0").Val()
				typed := rc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Count: 10, Streams: []string{key, "0"}}).Val()
				got := entries(raw)
				if len(typed) != 1 || len(got) != 3 || len(typed[0].Messages) != 3 {
					t.Fatalf("raw %q, typed %v", got, typed)
				}
				for i, m := range typed[0].Messages {
					values := map[string]any{}
					for j := 0; j+1 < len(got[i].Fields); j += 2 {
						values[got[i].Fields[j]] = got[i].Fields[j+1]
					}
					if got[i].ID != m.ID || fmt.Sprint(values) != fmt.Sprint(m.Values) && len(m.Values)+len(values) > 0 {
						t.Fatalf("entry %d: raw %q, typed %v", i, got[i], m)
					}
				}
			}

			got := readNew()
			if len(got) != 3 || got[2].ID != ids[2] || fmt.Sprint(got[2].Fields) != fmt.Sprint([]string{"key", "2", "data", "\r\n\x00\xff", "h:x", "y"}) {
				t.Fatalf("new entries %q", got)
			}
			if got := readNew(); len(got) != 0 {
				t.Fatalf("nothing new: %q", got)
			}
			same()
			rc.XDel(ctx, key, ids[1])
			same()

			tx := rc.TxPipeline()
			cmd := redis.NewRawCmd(ctx, "XREADGROUP", "GROUP", "g", "c", "STREAMS", key, "0")
			_ = tx.Process(ctx, cmd)
			if _, err := tx.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if got := entries(cmd.Val()); len(got) != 3 {
				t.Fatalf("in a transaction: %q", got)
			}

			bad := rc.DoRaw(ctx, "XREADGROUP", "GROUP", "nogroup", "c", "STREAMS", key, ">")
			if err := rdb.EachRawEntry(bad.Val(), func(string, [][]byte) error { return nil }); err == nil && bad.Err() == nil {
				t.Fatal("NOGROUP read as no entries")
			}
		})
	}
}

// EachRawStream reads the stream keys of raw XREAD replies, RESP2 and RESP3,
// as go-redis reads them from its parsed ones: streams with entries among
// several (in the order asked), none (a blocking read that timed out), and
// an error reply.
func TestEachRawStream(t *testing.T) {
	t.Parallel()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc, prefix := protoClient(t, proto)
			ctx := context.Background()
			keys := []string{prefix + ":a", prefix + ":b\r\n", prefix + ":c", prefix + ":d"}
			for _, k := range []string{keys[1], keys[3], keys[3]} {
				rc.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []any{"data", "x"}})
			}
			streams := func(raw []byte) []string {
				t.Helper()
				var got []string
				if err := rdb.EachRawStream(raw, func(key []byte) { got = append(got, string(key)) }); err != nil {
					t.Fatal(err)
				}
				return got
			}
			args := []any{"XREAD", "COUNT", 1, "BLOCK", 10, "STREAMS"}
			for _, k := range keys {
				args = append(args, k)
			}
			for range keys {
				args = append(args, "0")
			}
			typed := rc.XRead(ctx, &redis.XReadArgs{Streams: append(append([]string{}, keys...), "0", "0", "0", "0"), Count: 1, Block: 10 * time.Millisecond}).Val()
			var want []string
			for _, s := range typed {
				want = append(want, s.Stream)
			}
			if got := streams(rc.DoRaw(ctx, args...).Val()); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 2 {
				t.Fatalf("raw %q, typed %q", got, want)
			}
			args = append(args[:len(args)-len(keys)], "$", "$", "$", "$")
			if got := streams(rc.DoRaw(ctx, args...).Val()); len(got) != 0 {
				t.Fatalf("a read that timed out: %q", got)
			}
			bad := rc.DoRaw(ctx, "XREAD", "STREAMS", keys[0])
			if err := rdb.EachRawStream(bad.Val(), func([]byte) {}); err == nil && bad.Err() == nil {
				t.Fatal("an error read as no streams")
			}
		})
	}
}

func FuzzEachRawStream(f *testing.F) {
	f.Add([]byte("*2\r\n*2\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n*2\r\n$1\r\nb\r\n*0\r\n"))
	f.Add([]byte("%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*-1\r\n"))
	f.Add([]byte("_\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_ = rdb.EachRawStream(raw, func([]byte) {})
	})
}

// protoClient returns a client of the test server speaking RESP proto, and
// the test's key prefix.
func protoClient(t *testing.T, proto int) (*redis.Client, string) {
	c, prefix := redistest.Client(t)
	opt := *c.Options()
	opt.Protocol = proto
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	rc := redis.NewClient(&opt)
	t.Cleanup(func() { _ = rc.Close() })
	return rc, prefix
}

func FuzzEachRawEntry(f *testing.F) {
	f.Add([]byte("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"))
	f.Add([]byte("%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*-1\r\n"))
	f.Add([]byte("*-1\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_ = rdb.EachRawEntry(raw, func(id string, fields [][]byte) error { return nil })
	})
}

// BenchmarkEachRawEntry reads a raw reply of 100 entries: the allocations
// per reply do not grow with its entries.
func BenchmarkEachRawEntry(b *testing.B) {
	raw := []byte("*1\r\n*2\r\n$1\r\ns\r\n*100\r\n")
	for i := range 100 {
		id := fmt.Sprintf("1700000000000-%d", i)
		raw = fmt.Appendf(raw, "*2\r\n$%d\r\n%s\r\n*6\r\n$3\r\nkey\r\n$5\r\nkey-1\r\n$5\r\ncodec\r\n$7\r\nmsgpack\r\n$4\r\ndata\r\n$10\r\n0123456789\r\n", len(id), id)
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := rdb.EachRawEntry(raw, func(id string, fields [][]byte) error { n += len(fields); return nil }); err != nil || n != 600 {
			b.Fatal(n, err)
		}
	}
}

// A OnceCmd whose reply breaks off is not sent again, even by a client
// that retries (a read that ran would take the next entries), where go-redis
// sends a plain RawCmd again; alone or in a pipeline.
func TestOnceCmdIsNeverSentAgain(t *testing.T) {
	t.Parallel()
	base, prefix := redistest.Client(t)
	ctx := context.Background()
	loser := &redistest.ReplyLoser{Match: []byte(prefix + ":n")}
	opt := *base.Options()
	opt.MaxRetries, opt.MinRetryBackoff, opt.MaxRetryBackoff = 3, time.Millisecond, time.Millisecond
	opt.Dialer = loser.Dial
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	retrying := redis.NewClient(&opt)
	t.Cleanup(func() { _ = retrying.Close() })
	key := prefix + ":n"
	runs := func(run func() error) int64 {
		t.Helper()
		if err := base.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := run(); err == nil {
			t.Fatal("a lost reply gave no error")
		}
		return base.IncrBy(ctx, key, 0).Val()
	}
	alone := func(cmd redis.Cmder) func() error {
		return func() error { return retrying.Process(ctx, cmd) }
	}
	piped := func(cmd redis.Cmder) func() error {
		return func() error {
			pipe := retrying.Pipeline()
			_ = pipe.Process(ctx, cmd)
			_, err := pipe.Exec(ctx)
			return err
		}
	}
	for name, run := range map[string]func() error{
		"alone":    alone(rdb.NewOnceCmd(ctx, "INCR", key)),
		"pipeline": piped(rdb.NewOnceCmd(ctx, "INCR", key)),
	} {
		if n := runs(run); n != 1 {
			t.Errorf("%s: a OnceCmd ran %d times", name, n)
		}
	}
	// The client does retry: a plain raw command runs again.
	if n := runs(func() error { return retrying.Process(ctx, redis.NewRawCmd(ctx, "INCR", key)) }); n < 2 {
		t.Fatalf("the client did not send a plain raw command again (%d run): the test shows nothing", n)
	}
}

// discard is a Processor that drops what it is given.
type discard struct{}

func (discard) Process(context.Context, redis.Cmder) error { return nil }

// The fenced read behind an idle fetcher's blocking read boxes none of its
// partitions' arguments: the caller boxed them once, and the argument list
// is reused, so a wake-up costs the same few allocations over 4 partitions
// or 64 (before, four per partition and the list).
func TestFetchIdleBoxesNothing(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{4, 64} {
		parts := make([]rdb.IdlePartition, n)
		for i := range parts {
			parts[i] = rdb.IdlePartition{
				Lock: fmt.Sprint("lock:", i), Stream: fmt.Sprint("stream:", i),
				Token: fmt.Sprint("token-", i),
			}
		}
		var group, consumer any = "group", "consumer"
		var args []any
		allocs := testing.AllocsPerRun(100, func() {
			_, args = rdb.FetchIdle(ctx, discard{}, group, consumer, 100, parts, args)
		})
		if allocs > 3 {
			t.Errorf("%d partitions: %.0f allocations per read, want 3 at most", n, allocs)
		}
	}
}
