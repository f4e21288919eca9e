package runner

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// Acks refused with a transient error (READONLY, as from a master demoted
// in a failover) are queued again and sent once Redis takes writes again,
// without a new ack to trigger them.
func TestAckerRidesOutTransientErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer c.Close()
	const key, group = "s:0", "g"
	if err := c.XGroupCreateMkStream(ctx, key, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		ids = append(ids, c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"f", "v"}}).Val())
	}
	if err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: []string{key, ">"}}).Err(); err != nil {
		t.Fatal(err)
	}

	// A replica of a master that is gone refuses writes.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := c.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(port)).Err(); err != nil {
		t.Fatal(err)
	}

	a := newAcker(c, group, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var mu sync.Mutex
	var failures []error
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.run(runCtx, func(err error) { mu.Lock(); failures = append(failures, err); mu.Unlock() })
	}()
	defer func() { stop(); <-done }()
	a.add(key, ids...)
	redistest.Eventually(t, 10*time.Second, "a refused flush", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(failures) > 0
	})
	if !a.queued() {
		t.Fatal("the refused acks are not queued again")
	}
	if err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the acks sent", func() bool {
		return c.XPending(ctx, key, group).Val().Count == 0
	})
}

// Acks Redis refuses (here WRONGTYPE: the partition's stream was deleted
// and its key holds a string now) would be refused again: they are
// dropped with a warning that says so, not queued again nor reported as a
// failure to retry ("will retry"), and the acks of other partitions in the
// same flush are sent. Acks of a consumer group deleted under the acker
// are no failure at all: XACK acknowledges nothing, as the group's pending
// entries went with it.
func TestAckerDropsRefusedAcks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	const group = "g"
	ids := map[string][]string{}
	for _, key := range []string{"s:0", "s:1", "s:2"} {
		if err := c.XGroupCreateMkStream(ctx, key, group, "0").Err(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			ids[key] = append(ids[key], c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"f", "v"}}).Val())
		}
		if err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: []string{key, ">"}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Del(ctx, "s:0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "s:0", "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.XGroupDestroy(ctx, "s:2", group).Err(); err != nil {
		t.Fatal(err)
	}

	var logs redistest.Buffer
	a := newAcker(c, group, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	var mu sync.Mutex
	var failures []error
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.run(runCtx, func(err error) { mu.Lock(); failures = append(failures, err); mu.Unlock() })
	}()
	defer func() { stop(); <-done }()
	for _, key := range []string{"s:0", "s:1", "s:2"} {
		a.add(key, ids[key]...)
	}
	redistest.Eventually(t, 10*time.Second, "the live partition's acks sent", func() bool {
		return c.XPending(ctx, "s:1", group).Val().Count == 0
	})
	redistest.Eventually(t, 10*time.Second, "the dropped acks' warning", func() bool {
		return strings.Contains(logs.String(), "acks dropped")
	})
	// another flush finds nothing to send: the refused acks are not queued
	// again
	if err := a.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if a.queued() {
		t.Error("the refused acks are queued again")
	}
	got := logs.String()
	for _, want := range []string{"level=WARN", "partition_key=s:0", "acks=3", "WRONGTYPE"} {
		if !strings.Contains(got, want) {
			t.Errorf("the warning lacks %q: %s", want, got)
		}
	}
	if n := strings.Count(got, "acks dropped"); n != 1 {
		t.Errorf("%d warnings of dropped acks, want 1 (s:0's; the deleted group's acks are no failure): %s", n, got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		t.Errorf("refused acks reported as failures to retry: %v", failures)
	}
}
