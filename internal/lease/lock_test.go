package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestLockIdentityAndFencing(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	key, fence := prefix+":lock:{x}", prefix+":fence:{x}"

	a, _, err := Acquire(ctx, c, key, fence, "w-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The same identity does not get the lock again: values are per acquisition.
	if _, held, err := Acquire(ctx, c, key, fence, "w-1", time.Minute); !errors.Is(err, ErrNotObtained) || held.Holder != "w-1" ||
		held.Left <= 0 || held.Left > time.Minute {
		t.Fatalf("second acquisition by the same identity: %v (holder %+v)", err, held)
	}
	if Holder(a.Value()) != "w-1" || a.Value() == NewValue("w-1") {
		t.Fatalf("value %q", a.Value())
	}
	if errs := Refresh(ctx, c, []*Lock{a, {key: key, value: NewValue("w-1")}}, time.Minute); errs[0] != nil || !errors.Is(errs[1], ErrNotHeld) {
		t.Fatalf("refresh: %v", errs)
	}
	if err := (&Lock{key: key, value: NewValue("w-1")}).Release(ctx, c); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release by another acquisition: %v", err)
	}
	if err := a.Release(ctx, c); err != nil {
		t.Fatal(err)
	}

	// Tokens grow strictly from one holder to the next, even when the
	// counter is lost.
	last := a.Token()
	for i := range 4 {
		if i == 2 {
			c.Del(ctx, fence)
		}
		l, _, err := Acquire(ctx, c, key, fence, "w-2", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Fatalf("token %d after %d", l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLockExpires(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	key, fence := prefix+":lock:{x}", prefix+":fence:{x}"
	a, _, err := Acquire(ctx, c, key, fence, "w-1", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var b *Lock
	redistest.Eventually(t, 5*time.Second, "the lock free after its TTL", func() bool {
		b, _, _ = Acquire(ctx, c, key, fence, "w-2", time.Minute)
		return b != nil
	})
	if errs := Refresh(ctx, c, []*Lock{a}, time.Minute); !errors.Is(errs[0], ErrNotHeld) {
		t.Fatalf("refresh of an expired lock: %v", errs[0])
	}
	if b.Token() <= a.Token() {
		t.Fatalf("token %d after %d", b.Token(), a.Token())
	}
}

// TestAcquireSameValueAgain: a try with the value of an acquisition that
// holds the lock (an earlier try whose reply was lost) takes it again with
// a new TTL and a higher token; another value of the same identity waits.
func TestAcquireSameValueAgain(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	key, fence := prefix+":lock:{x}", prefix+":fence:{x}"
	value := NewValue("w-1")
	a, _, err := AcquireValue(ctx, c, key, fence, value, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, held, err := AcquireValue(ctx, c, key, fence, NewValue("w-1"), time.Minute); !errors.Is(err, ErrNotObtained) || held.Holder != "w-1" {
		t.Fatalf("another value: %v (holder %+v)", err, held)
	}
	b, _, err := AcquireValue(ctx, c, key, fence, value, time.Minute)
	if err != nil {
		t.Fatalf("the same value again: %v", err)
	}
	if b.Value() != value || b.Token() <= a.Token() {
		t.Fatalf("again: value %q, token %d after %d", b.Value(), b.Token(), a.Token())
	}
	if left := c.PTTL(ctx, key).Val(); left <= time.Second || left > time.Minute {
		t.Fatalf("TTL %s after taking it again, want the new minute", left)
	}
	if err := b.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// The lock client ends a command at its context's deadline, has a pool of
// its own, and has leat's settings (topology.Own: RESP2).
func TestClientSettings(t *testing.T) {
	app := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", Protocol: 3, PoolSize: 50})
	defer app.Close()
	lc, closeLC := Client(app, 2)
	defer closeLC()
	opt := lc.(*redis.Client).Options()
	if !opt.ContextTimeoutEnabled || opt.PoolSize != 2 || opt.Protocol != 2 {
		t.Errorf("lock client: context timeouts %v, pool %d, protocol %d: want true, 2, 2", opt.ContextTimeoutEnabled, opt.PoolSize, opt.Protocol)
	}
	if o := app.Options(); o.Protocol != 3 || o.PoolSize != 50 || o.ContextTimeoutEnabled {
		t.Errorf("the application client's settings changed: protocol %d, pool %d, context timeouts %v", o.Protocol, o.PoolSize, o.ContextTimeoutEnabled)
	}
}
