package runner

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// stallingHandler hands each first event it gets to got and then waits
// until the partition's work ends.
func stallingHandler(got chan<- core.Delivery) Handler {
	return func(ctx context.Context, feed core.Feed) error {
		ds := feed.Next(1, 0)
		if len(ds) == 0 {
			return nil
		}
		select {
		case got <- ds[0]:
		default:
		}
		<-ctx.Done()
		return nil
	}
}

// trimNotice returns the trim report waiting to be delivered on partition
// n, if any.
func trimNotice(e *Executor, n int) *core.Delivery {
	e.fetch.mu.Lock()
	defer e.fetch.mu.Unlock()
	if s, ok := e.fetch.parts[n]; ok {
		return s.trimNotice
	}
	return nil
}

// A group that starts after entries trimmed before it existed (Start:
// Latest, or moved by leat reset to the end or to an entry ID) lost
// nothing: the trim check reports nothing. Entries trimmed after that,
// before the group read them, are reported.
func TestTrimCheckAfterStartOrReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start executor.Position
		reset func(ids []string) string // position leat reset moved the group to; "" for none
	}{
		{name: "start latest", start: executor.Latest},
		{name: "reset latest", reset: func([]string) string { return "$" }},
		{name: "reset to an ID", reset: func(ids []string) string { return ids[len(ids)-3] }},
		{name: "reset to a trimmed ID", reset: func([]string) string { return "1-0" }},
		{name: "start earliest", start: executor.Earliest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, 1, 10)
			ctx := context.Background()
			key := r.st.PartitionKey(0)
			r.send(0, 300) // MAXLEN ~ 10 trims whole nodes of 100 entries
			if n := r.client.XLen(ctx, key).Val(); n >= 300 {
				t.Fatalf("stream not trimmed: %d entries", n)
			}
			if tc.reset != nil {
				// What leat reset does, before the worker starts.
				msgs := r.client.XRange(ctx, key, "-", "+").Val()
				var ids []string
				for _, m := range msgs {
					ids = append(ids, m.ID)
				}
				if err := rdb.SetGroup(ctx, r.client, key, "p", tc.reset(ids), true).Err(); err != nil {
					t.Fatal(err)
				}
			}
			got := make(chan core.Delivery, 1)
			e := r.executor("p", executor.Options{Start: tc.start, Prefetch: 10}, stallingHandler(got))
			r.run(e)
			owns(t, e, 0)
			e.checkTrimmed(ctx)
			if d := trimNotice(e, 0); d != nil {
				t.Fatalf("trim reported after the group started: %v", d.Err)
			}

			// The processor stalls on its first event while the stream
			// overflows: those entries are trimmed unread.
			r.send(0, 1)
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("no event handed out")
			}
			r.send(0, 500)
			e.checkTrimmed(ctx)
			d := trimNotice(e, 0)
			if d == nil {
				t.Fatal("entries trimmed unread not reported")
			}
			t.Log(d.Err)
		})
	}
}
