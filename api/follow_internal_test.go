package api

import (
	"fmt"
	"testing"
)

// The log of a followed task keeps its last followKeep events: a follower
// still writing events it was given keeps them whole however far the log
// moves on, and one whose next event was dropped is told it is behind.
func TestFollowLog(t *testing.T) {
	fs := newFollowers(1)
	f := &follow{wake: make(chan struct{})}
	frame := func(i int) []byte { return fmt.Appendf(nil, "id: %d\n\n", i) }
	// The log full, and then some: events are dropped from its front.
	const n = 2*followKeep + 10
	for i := range n {
		fs.add(f, frame(i))
	}
	first := n - followKeep
	given, wake, ended, behind := fs.since(f, first)
	if len(given) != followKeep || ended || behind {
		t.Fatalf("since %d: %d events, ended %v, behind %v", first, len(given), ended, behind)
	}
	for i := range 5 {
		fs.add(f, frame(n+i))
	}
	select {
	case <-wake:
	default:
		t.Fatal("a follower waiting was not woken")
	}
	for i, fr := range given {
		if string(fr) != string(frame(first+i)) {
			t.Fatalf("event %d given before the log moved on is now %q", first+i, fr)
		}
	}
	if _, _, _, behind := fs.since(f, first+4); !behind {
		t.Fatal("a follower at a dropped event is not behind")
	}
	got, _, _, behind := fs.since(f, first+5)
	if behind || len(got) != followKeep || string(got[0]) != string(frame(first+5)) {
		t.Fatalf("since %d: %d events from %q, behind %v", first+5, len(got), got[0], behind)
	}
	fs.end(f)
	if got, _, ended, _ := fs.since(f, n+5); len(got) != 0 || !ended {
		t.Fatalf("at the end: %d events, ended %v", len(got), ended)
	}
}
