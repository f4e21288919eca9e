package rdb

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The registries a configuration file is applied to: the app's hash of
// stream definitions (KeySpace.Registry) and of task queue definitions
// (KeySpace.TaskQueues). Both carry the app's hash tag, so one script
// writes both on Cluster too.

//go:embed config_registry.lua
var configRegistrySrc string

var configRegistry = redis.NewScript(configRegistrySrc)

// ErrRegistryChanged is returned by WriteRegistries when an entry changed
// since it was read: nothing was written.
var ErrRegistryChanged = errors.New("the registry changed meanwhile")

// ReadRegistries returns the stream and task queue registries, in one
// round trip (a MULTI, so the two are read at one instant).
func ReadRegistries(ctx context.Context, c redis.UniversalClient, streams, queues string) (map[string]string, map[string]string, error) {
	var s, q *redis.MapStringStringCmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s = p.HGetAll(ctx, streams)
		q = p.HGetAll(ctx, queues)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return s.Val(), q.Val(), nil
}

// A RegistryWrite is one entry to write: its name, the value it must still
// hold ("" for none) and its new value.
type RegistryWrite struct {
	Name, Old, New string
}

// WriteRegistries writes the stream and queue entries in one script
// (config_registry.lua): all of them, or none when one no longer holds its
// Old value, which returns ErrRegistryChanged naming it.
//
// KEYS: streams, queues. ARGV: counts, then name, old, new of each entry.
func WriteRegistries(ctx context.Context, c redis.Scripter, streams, queues string, s, q []RegistryWrite) error {
	args := []any{strconv.Itoa(len(s)), strconv.Itoa(len(q))}
	for _, w := range append(append([]RegistryWrite(nil), s...), q...) {
		args = append(args, w.Name, w.Old, w.New)
	}
	v, err := configRegistry.Run(ctx, c, []string{streams, queues}, args...).Slice()
	if err != nil {
		return err
	}
	if len(v) == 3 {
		return fmt.Errorf("%w: %v %q", ErrRegistryChanged, v[1], v[2])
	}
	if len(v) != 1 {
		return fmt.Errorf("write registries: unexpected reply %v", v)
	}
	return nil
}
