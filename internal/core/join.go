package core

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// Concurrent sends of a stream share round trips. A send of a few entries
// (joinMax at most) made while fewer than joinWriters round trips of such
// sends are under way goes at once, on its caller's goroutine, as it would
// alone. One made while they are all under way waits, with the others that
// arrive meanwhile, and the first of those round trips to end sends them
// all on one pipeline (then the next ones, until none waits, on a
// goroutine of its own). Many goroutines sending an event each (HTTP
// handlers, processors) then cost one round trip per round instead of one
// per event, and a lone send costs what it did.
//
// Each send gets its own entries' IDs and errors, as if it had run alone: an
// entry that fails for good fails its own send only. A send's entries keep
// their order (they are consecutive in the round, and a partition's entries
// are appended in pipeline order); sends that overlap in time have no order
// between them, as before. A round of waiting sends runs to its end,
// whatever their contexts do (a Cluster failover is retried as for any
// send, up to sendRetryFor). A send whose context ends while it waits
// leaves, unsent; one whose round has begun returns the context's error,
// its entries possibly added, as a send cut short in flight does.

// joinMax is the most entries a send may have to join others' rounds;
// larger ones use their own pipelines (SendEntries).
const joinMax = 64

// joinWriters is how many round trips of joining sends may be under way at
// once: while one is, the next goes at once.
const joinWriters = 2

// joined is a stream's sends waiting for a round (guarded by mu).
type joined struct {
	mu      sync.Mutex
	pending []*joinedSend
	writers int // round trips under way (joinWriters at most); while all are, sends wait
}

// joinedSend is one send's share of a round.
type joinedSend struct {
	ctx     context.Context // the caller's: a round's values (tracing) come from its first send
	entries []Entry
	ids     []string
	err     error
	done    chan struct{} // closed when ids and err are set
}

// joinSend sends entries in the stream's next round and returns their IDs
// (see SendEntries).
func (c *Core) joinSend(ctx context.Context, entries []Entry) ([]string, error) {
	j := &c.joined
	j.mu.Lock()
	if j.writers < joinWriters {
		// Nothing waits (sends wait only while every writer is busy): go
		// at once, alone, then send what arrived meanwhile.
		j.writers++
		j.mu.Unlock()
		ids := make([]string, len(entries))
		err := c.sendLane(ctx, entries, nil, ids, nil)
		if c.joinMore() {
			go c.joinRounds()
		}
		return ids, err
	}
	if err := ctx.Err(); err != nil {
		j.mu.Unlock()
		return make([]string, len(entries)), fmt.Errorf("stream %q: send: %w", c.def.Name, err)
	}
	s := &joinedSend{ctx: ctx, entries: entries, done: make(chan struct{})}
	j.pending = append(j.pending, s)
	j.mu.Unlock()
	select {
	case <-s.done:
		return s.ids, s.err
	case <-ctx.Done():
	}
	j.mu.Lock()
	if i := slices.Index(j.pending, s); i >= 0 {
		j.pending = slices.Delete(j.pending, i, i+1)
		j.mu.Unlock()
		return make([]string, len(entries)), fmt.Errorf("stream %q: send: %w", c.def.Name, ctx.Err())
	}
	j.mu.Unlock()
	select {
	case <-s.done: // answered meanwhile
		return s.ids, s.err
	default:
		return make([]string, len(entries)), fmt.Errorf("stream %q: send: %w (the entries may have been added)", c.def.Name, ctx.Err())
	}
}

// joinMore reports whether sends wait for a round, else ends the calling
// writer (under the same lock, so that a send arriving after sees one
// writer less and starts another).
func (c *Core) joinMore() bool {
	j := &c.joined
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.pending) > 0 {
		return true
	}
	j.writers--
	return false
}

// joinRounds sends the waiting sends, a round at a time, until none waits.
func (c *Core) joinRounds() {
	for {
		c.joinRound()
		if !c.joinMore() {
			return
		}
	}
}

// joinRound sends the entries of every waiting send, in the order they
// arrived, and answers each.
func (c *Core) joinRound() {
	j := &c.joined
	j.mu.Lock()
	sends := j.pending
	j.pending = nil
	j.mu.Unlock()
	if len(sends) == 0 {
		return
	}
	entries := sends[0].entries
	if len(sends) > 1 {
		entries = nil
		for _, s := range sends {
			entries = append(entries, s.entries...)
		}
	}
	ids := make([]string, len(entries))
	final := make([]error, len(entries))
	err := c.sendLane(context.WithoutCancel(sends[0].ctx), entries, nil, ids, final)
	off := 0
	for _, s := range sends {
		n := len(s.entries)
		s.ids = ids[off : off+n : off+n]
		for k, id := range s.ids {
			if id != "" {
				continue
			}
			if final[off+k] != nil {
				s.err = fmt.Errorf("stream %q: send: %w", c.def.Name, final[off+k])
			} else {
				s.err = cmp.Or(err, fmt.Errorf("stream %q: send: entry %d not added", c.def.Name, k)) // sendLane's names the stream
			}
			break
		}
		off += n
		s.ctx = nil // hold no caller's context past its answer
		close(s.done)
	}
}

// JoinWaiting returns how many sends wait for a round.
func (c *Core) JoinWaiting() int {
	c.joined.mu.Lock()
	defer c.joined.mu.Unlock()
	return len(c.joined.pending)
}
