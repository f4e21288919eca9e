package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/keys"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

type order struct {
	ID       int64   `msgpack:"id"`
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
	Note     string  `msgpack:"note,omitempty"`
}

func newCatalog(t testing.TB, d stream.Defaults) (*stream.Catalog, *redis.Client) {
	t.Helper()
	c, prefix := redistest.Client(t)
	return stream.NewCatalog(c, keys.New(prefix, "shop"), d, nil), c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
