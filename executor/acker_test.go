package executor

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/redistest"
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

	a := newAcker(c, group)
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
