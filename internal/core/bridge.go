package core

import "context"

// Handler runs a processor over the events of one partition.
type Handler func(ctx context.Context, feed Feed) error

// The bridge to package stream, which sets these in its init: the runtime
// reaches typed streams and the user-facing Catalog through them, so that
// stream exports only what users use.
var (
	// WrapCatalog returns the *stream.Catalog of c.
	WrapCatalog func(c *Catalog) any
	// UnwrapCatalog returns the catalog of a *stream.Catalog.
	UnwrapCatalog func(v any) (*Catalog, bool)
	// StreamCore returns the untyped stream of a *stream.Stream[T].
	StreamCore func(v any) (*Core, bool)
	// NewHandler returns the handler running fn, a
	// func(context.Context, *stream.Events[T]) error, over the events of s,
	// a *stream.Stream[T].
	NewHandler func(s, fn any) (Handler, error)
)
