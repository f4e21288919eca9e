package app

import (
	"context"
	"fmt"
	"slices"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/stream"
)

// Processor is one processor registered on an App.
type Processor struct {
	Name    string
	Options executor.Options // the app's defaults with the processor's options applied
	stream  *core.Core
	handler core.Handler
}

// StreamName is the name of the processor's stream.
func (p *Processor) StreamName() string { return p.stream.Name() }

// FullName is "stream/processor", unique within an app.
func (p *Processor) FullName() string { return p.stream.Name() + "/" + p.Name }

// Process registers fn as the processor called name of stream s. name is the
// consumer group: unique per stream, and stable across deployments (a new
// name starts from Options.Start). fn is called with the events of one
// partition at a time, on its own goroutine per partition; it returns when
// the events end (the partition moved or the worker stops) or with an error
// that the failure policy handles. opts override the app's processor
// defaults (Config.Processing) for this processor:
//
//	app.Process(a, orders, "totals", fn, app.OnError(app.DeadLetter), app.Retries(3), app.Grace(0))
//
// Settings that cannot work are refused here, not when the worker runs.
func Process[T any](a *App, s *stream.Stream[T], name string, fn func(ctx context.Context, events *stream.Events[T]) error, opts ...ProcessorOption) error {
	if err := rdb.CheckName("processor", name); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("processor %q: function is nil", name)
	}
	c, ok := core.StreamCore(s)
	if own, declared := a.catalog.Lookup(s.Name()); !ok || !declared || own != c {
		return fmt.Errorf("processor %q: stream %q is not declared on app %q", name, s.Name(), a.cfg.Name)
	}
	o, err := a.processorOptions(opts, c.Partitions())
	if err != nil {
		return fmt.Errorf("processor %q: %w", name, err)
	}
	h, err := core.NewHandler(s, fn)
	if err != nil {
		return fmt.Errorf("processor %q: %w", name, err)
	}
	if mws := a.middlewareOf(opts); len(mws) > 0 {
		h = a.withMiddleware(h, s.Name(), name, mws)
	}
	p := &Processor{Name: name, Options: o, stream: c, handler: h}
	a.mu.Lock()
	defer a.mu.Unlock()
	if slices.ContainsFunc(a.processors, func(q *Processor) bool { return q.FullName() == p.FullName() }) {
		return fmt.Errorf("processor %q is already registered on stream %q", name, s.Name())
	}
	a.processors = append(a.processors, p)
	return nil
}

// Processors returns the registered processors in registration order.
func (a *App) Processors() []*Processor {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.processors)
}

// ErrUnknownProcessor is returned when a processor name matches no
// processor, or more than one.
var ErrUnknownProcessor = rdb.ErrUnknownProcessor

// SelectProcessors returns the processors named in names ("processor" or
// "stream/processor"); all of them when names is empty.
func (a *App) SelectProcessors(names []string) ([]*Processor, error) {
	all := a.Processors()
	if len(names) == 0 {
		return all, nil
	}
	byName := make(map[string]*Processor, len(all))
	known := make([]string, len(all))
	for i, p := range all {
		known[i] = p.FullName()
		byName[known[i]] = p
	}
	var out []*Processor
	for _, n := range names {
		full, err := rdb.MatchProcessor(n, known)
		if err != nil {
			return nil, err
		}
		if p := byName[full]; !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
