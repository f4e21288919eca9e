package stream

import (
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// NewCatalog returns a catalog of its own, for tests that declare streams
// without an app.
func NewCatalog(c redis.UniversalClient, space rdb.KeySpace, d core.Defaults) *Catalog {
	return &Catalog{c: core.NewCatalog(c, space, d, nil)}
}

// CoreOf returns the untyped stream of s.
func CoreOf[T any](s *Stream[T]) *core.Core { return s.t.Core }
