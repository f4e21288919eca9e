package core

import (
	"cmp"
	"context"
	"fmt"

	"github.com/leatdev/leat/internal/rounds"
)

// Concurrent sends of a stream share round trips (package rounds): a send of
// a few entries (joinMax at most) made while two such sends are under way
// waits, with the others that arrive meanwhile, and they go together on one
// pipeline as soon as one of those ends. Each send gets its own entries'
// IDs and errors, as if it had run alone: an entry that fails for good
// fails its own send only. A send's entries keep their order (they are
// consecutive in the round, and a partition's entries are appended in
// pipeline order); sends that overlap in time have no order between them,
// as before. A Cluster failover is retried in a round as for any send, up
// to sendRetryFor.

// joinMax is the most entries a send may have to join others' rounds;
// larger ones use their own pipelines (SendEntries).
const joinMax = 64

// sender is a Core writing the sends of its rounds.Group.
type sender Core

// joinSend sends entries, alone or in a round, and returns their IDs (see
// SendEntries).
func (c *Core) joinSend(ctx context.Context, entries []Entry) ([]string, error) {
	return c.joined.Do(ctx, entries, (*sender)(c))
}

// JoinWaiting returns how many sends wait for a round.
func (c *Core) JoinWaiting() int { return c.joined.Waiting() }

// Alone implements rounds.Writer: a send by itself, as SendEntries makes it.
func (s *sender) Alone(ctx context.Context, entries []Entry) ([]string, error) {
	ids := make([]string, len(entries))
	return ids, (*Core)(s).sendLane(ctx, entries, nil, ids, nil)
}

// Left implements rounds.Writer.
func (s *sender) Left(entries []Entry, err error, begun bool) ([]string, error) {
	if begun {
		return make([]string, len(entries)), fmt.Errorf("stream %q: send: %w (the entries may have been added)", s.def.Name, err)
	}
	return make([]string, len(entries)), fmt.Errorf("stream %q: send: %w", s.def.Name, err)
}

// Round implements rounds.Writer: the entries of every send on one pipeline
// (SendBatch entries per round trip), an entry that fails for good failing
// its own send only.
func (s *sender) Round(ctx context.Context, sends []*rounds.Call[[]Entry]) {
	c := (*Core)(s)
	entries := sends[0].Work
	if len(sends) > 1 {
		entries = nil
		for _, s := range sends {
			entries = append(entries, s.Work...)
		}
	}
	ids := make([]string, len(entries))
	final := make([]error, len(entries))
	err := c.sendLane(ctx, entries, nil, ids, final)
	off := 0
	for _, s := range sends {
		n := len(s.Work)
		s.IDs = ids[off : off+n : off+n]
		for k, id := range s.IDs {
			if id != "" {
				continue
			}
			if final[off+k] != nil {
				s.Err = fmt.Errorf("stream %q: send: %w", c.def.Name, final[off+k])
			} else { // sendLane's error names the stream
				s.Err = cmp.Or(err, fmt.Errorf("stream %q: send: entry %d not added", c.def.Name, k))
			}
			break
		}
		off += n
	}
}
