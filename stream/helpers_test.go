package stream

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

type order struct {
	ID       int64   `msgpack:"id"`
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
	Note     string  `msgpack:"note,omitempty"`
}

func newCatalog(t testing.TB, d core.Defaults) (*Catalog, *redis.Client) {
	t.Helper()
	c, prefix := redistest.Client(t)
	return NewCatalog(c, rdb.NewKeySpace(prefix, "shop"), d), c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// decode decodes the record of a raw entry of s.
func decode[T any](s *Stream[T], e *core.Entry) (T, error) {
	var v T
	err := s.t.DecodeInto(e, &v)
	return v, err
}

// stored is an entry of a partition as Redis holds it, with its record.
type stored struct {
	Entry  core.Entry
	Record order
}

// partitionEntries reads every entry of partition p of s, in stream order,
// with its decoded record.
func partitionEntries(t testing.TB, c *redis.Client, s *Stream[order], p int) []stored {
	t.Helper()
	msgs, err := c.XRange(context.Background(), s.t.Core.PartitionKey(p), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]stored, 0, len(msgs))
	for _, m := range msgs {
		e, err := core.ParseEntry(m.ID, p, s.t.Core.EntryCodec(), m.Values)
		if err != nil {
			t.Fatal(err)
		}
		o, err := decode(s, &e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, stored{Entry: e, Record: o})
	}
	return out
}
