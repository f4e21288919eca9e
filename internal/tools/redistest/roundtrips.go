package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook (Client.AddHook) that counts the commands
// and pipelines a client sends: its round trips.
type RoundTrips struct{ n atomic.Int64 }

// N returns the round trips counted so far.
func (r *RoundTrips) N() int64 { return r.n.Load() }

// DialHook implements redis.Hook.
func (r *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (r *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}

// ProcessPipelineHook implements redis.Hook.
func (r *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}
