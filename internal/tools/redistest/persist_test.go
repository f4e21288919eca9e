package redistest_test

import (
	"context"
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// A graceful restart of a persistent server keeps every acknowledged
// write, including the last one, and the server comes back on its address.
func TestPersistentServerGracefulRestart(t *testing.T) {
	t.Parallel()
	s := redistest.StartPersistent(t)
	c := s.Client(t)
	ctx := context.Background()
	for i := range 100 {
		if err := c.RPush(ctx, "list", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	addr := s.Addr
	s.Shutdown(t)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("the server answers after Shutdown")
	}
	s.Relaunch(t)
	if s.Addr != addr {
		t.Fatalf("address %s, want %s", s.Addr, addr)
	}
	if n := c.LLen(ctx, "list").Val(); n != 100 {
		t.Fatalf("%d entries after the restart, want 100", n)
	}
	if v := c.LIndex(ctx, "list", -1).Val(); v != "99" {
		t.Fatalf("last entry %q, want 99", v)
	}
}
