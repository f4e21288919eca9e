// Package rounds lets concurrent calls share round trips to Redis (group
// commit).
//
// A call made while fewer than Writers calls of its group are under way
// goes at once, on its caller's goroutine, as it would alone. One made while
// they all are waits, with the others that arrive meanwhile, and the first
// of those calls to end writes them all together in one round (then the
// next ones, until none waits, on a goroutine of its own). Many goroutines
// making a small call each then cost one round trip per round instead of one
// per call, and a lone call costs what it did.
//
// Each call gets its own result, as if it had run alone: a round's writer
// answers each call from its own part of the round. A round runs to its end
// whatever its callers' contexts do (its context is the first call's,
// without its cancellation). A call whose context ends while it waits
// leaves, unwritten; one whose round had begun returns as a call cut short
// in flight does, its work possibly written.
package rounds

import (
	"context"
	"slices"
	"sync"
)

// Writers is how many calls of a group may be under way at once before the
// next ones wait: while one is on its round trip, the next goes at once.
const Writers = 2

// A Writer writes the work of a group's calls.
type Writer[T any] interface {
	// Alone writes one call's work by itself, with its caller's context.
	Alone(ctx context.Context, work T) ([]string, error)
	// Round writes the work of calls together, in order, and sets each
	// call's IDs and Err.
	Round(ctx context.Context, calls []*Call[T])
	// Left is what a call whose context ended (err) while it waited
	// returns; begun says its round had begun.
	Left(work T, err error, begun bool) ([]string, error)
}

// Call is one call's share of a round.
type Call[T any] struct {
	Work T
	IDs  []string
	Err  error

	ctx  context.Context // the caller's: a round's values (tracing) come from its first call
	done chan struct{}   // closed when IDs and Err are set
}

// Group is the calls of one writer (a stream, a task queue). The zero value
// is ready to use.
type Group[T any] struct {
	mu      sync.Mutex
	pending []*Call[T]
	writers int // calls under way (Writers at most); while all are, calls wait
}

// Do writes work with w, alone or in a round, and returns its result.
func (g *Group[T]) Do(ctx context.Context, work T, w Writer[T]) ([]string, error) {
	g.mu.Lock()
	if g.writers < Writers {
		// Nothing waits (calls wait only while every writer is busy): go
		// at once, alone, then write what arrived meanwhile.
		g.writers++
		g.mu.Unlock()
		return g.alone(ctx, work, w)
	}
	if err := ctx.Err(); err != nil {
		g.mu.Unlock()
		return w.Left(work, err, false)
	}
	c := &Call[T]{Work: work, ctx: ctx, done: make(chan struct{})}
	g.pending = append(g.pending, c)
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.IDs, c.Err
	case <-ctx.Done():
	}
	g.mu.Lock()
	if i := slices.Index(g.pending, c); i >= 0 {
		g.pending = slices.Delete(g.pending, i, i+1)
		g.mu.Unlock()
		return w.Left(work, ctx.Err(), false)
	}
	g.mu.Unlock()
	select {
	case <-c.done: // answered meanwhile
		return c.IDs, c.Err
	default:
		return w.Left(work, ctx.Err(), true)
	}
}

// alone writes work by itself as one of the group's writers, then hands
// the calls that arrived meanwhile to a goroutine of their own, or ends the
// writer; also when Alone panics (a caller that recovers finds the group as
// it was).
func (g *Group[T]) alone(ctx context.Context, work T, w Writer[T]) ([]string, error) {
	defer func() {
		if g.more() {
			go g.rounds(w)
		}
	}()
	return w.Alone(ctx, work)
}

// Waiting returns how many calls wait for a round.
func (g *Group[T]) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}

// more reports whether calls wait for a round, else ends the calling
// writer (under the same lock, so that a call arriving after sees one
// writer less and goes itself).
func (g *Group[T]) more() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) > 0 {
		return true
	}
	g.writers--
	return false
}

// rounds writes the waiting calls, a round at a time, until none waits.
func (g *Group[T]) rounds(w Writer[T]) {
	for {
		g.round(w)
		if !g.more() {
			return
		}
	}
}

// round writes the work of every waiting call, in the order they arrived,
// and answers each.
func (g *Group[T]) round(w Writer[T]) {
	g.mu.Lock()
	calls := g.pending
	g.pending = nil
	g.mu.Unlock()
	if len(calls) == 0 {
		return
	}
	w.Round(context.WithoutCancel(calls[0].ctx), calls)
	for _, c := range calls {
		c.ctx = nil // hold no caller's context past its answer
		close(c.done)
	}
}
