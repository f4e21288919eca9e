package api

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/leatdev/leat/task"
)

// The log of a followed task keeps its last followKeep events: a follower
// still writing events it was given keeps them whole however far the log
// moves on, and one whose next event was dropped is told it is behind.
func TestFollowLog(t *testing.T) {
	fs := newFollowers(1, slog.Default())
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

// A reader's failure ends its followers' events with an error event that
// tells a task gone as such, but not what Redis said nor where it is: that
// goes to the log, as a 500's detail does.
func TestFollowFailureHidesRedis(t *testing.T) {
	var log strings.Builder
	fs := newFollowers(1, slog.New(slog.NewTextHandler(&log, nil)))
	redisErr := errors.New("dial tcp 10.1.2.3:6379: connect: connection refused")
	ev := string(fs.failed("work", "t-1", fmt.Errorf("task %q: %w", "t-1", redisErr)))
	if !strings.HasPrefix(ev, "event: error\ndata: ") || !strings.Contains(ev, `"code":"follow_failed"`) ||
		strings.Contains(ev, "10.1.2.3") || strings.Contains(ev, "refused") {
		t.Errorf("event of a Redis failure: %q", ev)
	}
	if l := log.String(); !strings.Contains(l, "10.1.2.3:6379") || !strings.Contains(l, "task=t-1") {
		t.Errorf("the log lacks the failure: %s", l)
	}
	gone := fmt.Errorf("task %q in queue %q: %w", "t-2", "work", task.ErrNotFound)
	if ev := string(fs.failed("work", "t-2", gone)); !strings.Contains(ev, `t-2\" in queue \"work\": task: not found`) {
		t.Errorf("event of a task gone: %q, want %q", ev, gone)
	}
}
