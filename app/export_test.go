package app

import (
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/stream"
)

// SetJanitorEvery sets how often a's leader deletes dead consumers.
func SetJanitorEvery(a *App, d time.Duration) { a.janitorEvery = d }

// Keys returns a's Redis key space.
func Keys(a *App) rdb.KeySpace { return a.keys }

// PartitionKey returns the Redis key of partition p of s.
func PartitionKey[T any](s *stream.Stream[T], p int) string {
	c, _ := core.StreamCore(s)
	return c.PartitionKey(p)
}
