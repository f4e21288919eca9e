package task

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/leatdev/leat/internal/rdb"
)

// A Listing is a set of tasks a queue keeps in order, which List reads.
type Listing string

// The listings.
const (
	ListDead      Listing = "dead"      // dead tasks, the latest death first
	ListRecent    Listing = "recent"    // finished tasks still retained (succeeded, failed, cancelled), the latest end of retention first
	ListScheduled Listing = "scheduled" // delayed and retrying tasks, the soonest due first
)

// Listings lists every Listing.
var Listings = []Listing{ListDead, ListRecent, ListScheduled}

// ErrBadList is matched by the error of List for an unknown listing or a
// limit out of range.
var ErrBadList = errors.New("task: bad list request")

// MaxList is the largest limit of List.
const MaxList = 100

// ListErrorMax bounds the error of a listed task, in bytes: a longer one is
// cut (at a UTF-8 boundary) and ends with "…". Info returns it whole.
const ListErrorMax = 512

// List returns the status of at most limit (1 to MaxList) tasks of a
// listing, without what can be large: a listed Info has no Payload,
// Progress, Result, Headers or Webhook, and its Error is cut to
// ListErrorMax bytes; Info returns a task's whole status. It reads the
// sorted set the queue keeps for the listing and the listed fields of each
// task's hash in one atomic call: its cost grows with limit, never with the
// queue's size or its tasks' payloads. Finished tasks are listed by the end
// of their retention, so the latest finished come first when they share a
// retention. An unknown listing or a limit out of range is refused
// (ErrBadList).
func (q *core) List(ctx context.Context, which Listing, limit int) ([]*Info, error) {
	var set string
	switch which {
	case ListDead:
		set = rdb.SetDead
	case ListRecent:
		set = rdb.SetDone
	case ListScheduled:
		set = rdb.SetScheduled
	default:
		return nil, fmt.Errorf("%w: unknown listing %q: use %q, %q or %q", ErrBadList, which, ListDead, ListRecent, ListScheduled)
	}
	if limit < 1 || limit > MaxList {
		return nil, fmt.Errorf("%w: limit %d: from 1 to %d", ErrBadList, limit, MaxList)
	}
	// One byte more than kept tells a cut error from one of exactly
	// ListErrorMax bytes.
	got, err := rdb.List(ctx, q.rdb, q.keys, set, limit, ListErrorMax+1, rdb.ListFields)
	if err != nil {
		return nil, fmt.Errorf("task queue %q: list %s: %w", q.name, which, err)
	}
	out := make([]*Info, 0, len(got))
	for _, t := range got {
		in, err := infoOf(t.ID, q.name, q.set.levels, t.Fields)
		if err != nil {
			return nil, err
		}
		in.Error = clipError(in.Error)
		out = append(out, in)
	}
	return out, nil
}

// clipError cuts a listed task's error, read at most ListErrorMax+1 bytes
// long, to ListErrorMax bytes at a UTF-8 boundary and marks the cut.
func clipError(s string) string {
	if len(s) <= ListErrorMax {
		return s
	}
	s = s[:ListErrorMax]
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s + "…"
}
