package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Stop reports carry the server's time, and the halt check compares them
// with the executor's start on the server's clock (server time minus the
// monotonic time elapsed since Run started): a halt reported after an
// executor started holds the partition there, one reported before does not.
// The executors' starts are a minute from the report: the estimate of a
// start on the server's clock is off by up to half a round trip, which a
// loaded machine can stretch beyond the test's own steps.
func TestHaltCheckUsesServerTime(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1, 100)
	ctx := context.Background()
	nop := func(context.Context, core.Feed) error { return nil }
	e := r.executor("p", executor.Options{}, nop)
	e.started = time.Now().Add(-time.Minute)
	p := e.newPartition(ctx, 0)
	defer p.cancel(nil)

	before := r.client.Time(ctx).Val()
	e.report(p, executor.Halt, nil, errors.New("boom"))
	after := r.client.Time(ctx).Val()
	key, field := r.keys.Quarantine("s", "p"), strconv.Itoa(0)
	var rep stopReport
	if err := json.Unmarshal([]byte(r.client.HGet(ctx, key, field).Val()), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Time.Before(before.Truncate(time.Microsecond)) || rep.Time.After(after) {
		t.Fatalf("report time %s is not the server's (between %s and %s)", rep.Time, before, after)
	}

	if err := e.prepare(p); err != nil {
		t.Fatal(err)
	}
	if !p.held {
		t.Fatal("a halt reported after the executor started does not hold the partition")
	}

	// An executor started after the report tries the partition again.
	later := r.executor("p", executor.Options{}, nop)
	later.started = time.Now().Add(time.Minute) // (a monotonic reading still)
	q := later.newPartition(ctx, 0)
	defer q.cancel(nil)
	if err := later.prepare(q); err != nil {
		t.Fatal(err)
	}
	if q.held || r.client.HExists(ctx, key, field).Val() {
		t.Fatal("a halt reported before the executor started holds the partition")
	}
}

// Live members are those whose deadline, server time, has not passed on
// the server's clock.
func TestAliveUsesServerTime(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1, 100)
	ctx := context.Background()
	now := r.client.Time(ctx).Val().UnixMilli()
	key := r.keys.Members("s", "p")
	r.client.ZAdd(ctx, key, redis.Z{Score: float64(now + 60_000), Member: "live"}, redis.Z{Score: float64(now - 60_000), Member: "dead"})
	live, err := rdb.Alive(ctx, r.client, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0] != "live" {
		t.Fatalf("live members %v, want [live]", live)
	}
}
