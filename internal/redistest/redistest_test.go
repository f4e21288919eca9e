package redistest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestClientsGetTheirOwnPrefix(t *testing.T) {
	t.Parallel()
	c1, p1 := redistest.Client(t)
	_, p2 := redistest.Client(t)
	if p1 == p2 || strings.ContainsAny(p1, "{}: /") {
		t.Fatalf("prefixes %q and %q", p1, p2)
	}
	if err := c1.Set(context.Background(), p1+":k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPrivateServerRestart(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	// Data does not survive: the server runs without persistence.
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("key survived the restart")
	}
}
