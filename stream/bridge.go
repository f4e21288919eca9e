package stream

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/internal/core"
)

// The runtime (packages app and executor) reaches typed streams through
// internal/core's bridge, set here, so that this package exports only what
// users use.
func init() {
	core.WrapCatalog = func(c *core.Catalog) any { return &Catalog{c: c} }
	core.UnwrapCatalog = func(v any) (*core.Catalog, bool) {
		c, ok := v.(*Catalog)
		if !ok || c == nil {
			return nil, false
		}
		return c.c, true
	}
	core.StreamCore = func(v any) (*core.Core, bool) {
		s, ok := v.(interface{ typedCore() *core.Core })
		if !ok {
			return nil, false
		}
		return s.typedCore(), true
	}
	core.NewHandler = func(s, fn any) (core.Handler, error) {
		t, ok := s.(interface {
			handler(fn any) (core.Handler, error)
		})
		if !ok {
			return nil, fmt.Errorf("%T is not a stream", s)
		}
		return t.handler(fn)
	}
}

func (s *Stream[T]) typedCore() *core.Core { return s.t.Core }

// handler returns the runtime's handler calling fn, a processor of s.
func (s *Stream[T]) handler(fn any) (core.Handler, error) {
	f, ok := fn.(func(context.Context, *Events[T]) error)
	if !ok {
		return nil, fmt.Errorf("processor %T does not take the events of a stream of %T", fn, *new(T))
	}
	return func(ctx context.Context, feed core.Feed) error { return f(ctx, newEvents(ctx, feed, s)) }, nil
}
