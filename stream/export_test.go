package stream

import (
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/keys"
	"github.com/redis/go-redis/v9"
)

// NewCatalog returns a catalog of its own, for tests that declare streams
// without an app.
func NewCatalog(c redis.UniversalClient, space keys.Space, d core.Defaults) *Catalog {
	return &Catalog{c: core.NewCatalog(c, space, d, nil)}
}

// CoreOf returns the untyped stream of s.
func CoreOf[T any](s *Stream[T]) *core.Core { return s.t.Core }
