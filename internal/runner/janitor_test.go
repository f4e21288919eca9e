package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/redis/go-redis/v9"
)

// consumers returns the consumers of group p on partition n and their
// pending counts.
func (r *rig) consumers(n int, group string) map[string]int64 {
	r.t.Helper()
	cs, err := r.client.XInfoConsumers(context.Background(), r.st.PartitionKey(n), group).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, c := range cs {
		out[c.Name] = c.Pending
	}
	return out
}

// CleanConsumers deletes consumers that are not live members once they
// have nothing pending, and never one with pending entries.
func TestCleanConsumers(t *testing.T) {
	t.Parallel()
	r := newRig(t, 2, 1000)
	ctx := context.Background()
	key := r.st.PartitionKey(0)
	r.send(0, 10)
	r.client.XGroupCreate(ctx, key, "p", "0")
	read := func(consumer string, n int64) []string {
		res := r.client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "p", Consumer: consumer, Streams: []string{key, ">"}, Count: n}).Val()
		var ids []string
		for _, m := range res[0].Messages {
			ids = append(ids, m.ID)
		}
		return ids
	}
	read("crashed", 3)                                   // died with 3 entries pending
	r.client.XAck(ctx, key, "p", read("finished", 2)...) // died with nothing pending
	read("alive", 1)
	r.client.XAck(ctx, key, "p", read("alive", 1)...) // a live member with 1 pending
	now := r.client.Time(ctx).Val().UnixMilli()
	r.client.ZAdd(ctx, r.keys.Members("s", "p"), redis.Z{Score: float64(now + 60_000), Member: "alive"})
	r.client.XGroupCreateConsumer(ctx, key, "p", "idle-alive")
	r.client.ZAdd(ctx, r.keys.Members("s", "p"), redis.Z{Score: float64(now + 60_000), Member: "idle-alive"})

	n, err := CleanConsumers(ctx, r.client, r.keys, r.st.Name(), r.st.Partitions(), "p") // partition 1 has no group: no error
	if err != nil {
		t.Fatal(err)
	}
	got := r.consumers(0, "p")
	if n != 1 || len(got) != 3 || got["crashed"] != 3 || got["alive"] != 1 || got["idle-alive"] != 0 {
		t.Fatalf("deleted %d, left %v: want only finished deleted", n, got)
	}

	// The new owner claims the crashed consumer's entries: it goes next.
	r.client.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: key, Group: "p", Consumer: "alive", Start: "0-0", Count: 100})
	if n, err := CleanConsumers(ctx, r.client, r.keys, r.st.Name(), r.st.Partitions(), "p"); err != nil || n != 1 {
		t.Fatalf("deleted %d (%v), want 1", n, err)
	}
	if got := r.consumers(0, "p"); len(got) != 2 || got["alive"] != 4 {
		t.Fatalf("left %v, want alive with 4 pending and idle-alive", got)
	}
}

// An executor that releases a partition deletes its consumer there once
// everything it handed out was acknowledged.
func TestReleaseDeletesConsumer(t *testing.T) {
	t.Parallel()
	r := newRig(t, 2, 1000)
	r.send(0, 5)
	r.send(1, 5)
	done := make(chan string, 100)
	e := r.executor("p", executor.Options{}, func(ctx context.Context, feed core.Feed) error {
		for {
			ds := feed.Next(1, 0)
			if len(ds) == 0 {
				return nil
			}
			feed.Done(ds)
			done <- ds[0].ID
		}
	})
	stop := r.run(e)
	owns(t, e, 0, 1)
	for range 10 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("events not processed")
		}
	}
	if !slices.Contains(keysOf(r.consumers(0, "p")), e.ID()) {
		t.Fatal("the executor is not a consumer while it runs")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for n := range 2 {
		if got := r.consumers(n, "p"); len(got) != 0 {
			t.Errorf("partition %d: consumers %v left after a graceful stop", n, got)
		}
	}
}

func keysOf(m map[string]int64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
