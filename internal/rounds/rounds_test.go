package rounds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writer is a Writer whose calls wait for gate (when set) and that records
// what it wrote: each work item's ID is "id-" + item.
type writer struct {
	mu      sync.Mutex
	alone   []string
	rounds  [][]string
	gate    chan struct{} // closed to let writes end; nil: never wait
	writing chan string   // receives each work item as its write starts
}

func (w *writer) wait(item string) {
	if w.writing != nil {
		w.writing <- item
	}
	if w.gate != nil {
		<-w.gate
	}
}

func (w *writer) Alone(ctx context.Context, item string) ([]string, error) {
	w.mu.Lock()
	w.alone = append(w.alone, item)
	w.mu.Unlock()
	w.wait(item)
	return []string{"id-" + item}, nil
}

func (w *writer) Round(ctx context.Context, calls []*Call[string]) {
	var items []string
	for _, c := range calls {
		items = append(items, c.Work)
	}
	w.mu.Lock()
	w.rounds = append(w.rounds, items)
	w.mu.Unlock()
	if ctx.Done() != nil {
		panic("a round's context ends with a caller's")
	}
	w.wait(items[0])
	for _, c := range calls {
		c.IDs = []string{"id-" + c.Work}
		if c.Work == "bad" {
			c.IDs, c.Err = []string{""}, errors.New("bad item")
		}
	}
}

func (w *writer) Left(item string, err error, begun bool) ([]string, error) {
	return nil, fmt.Errorf("left %s (begun %v): %w", item, begun, err)
}

type result struct {
	ids []string
	err error
}

func do(g *Group[string], ctx context.Context, item string, w *writer) chan result {
	ch := make(chan result, 1)
	go func() {
		ids, err := g.Do(ctx, item, w)
		ch <- result{ids, err}
	}()
	return ch
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A lone call is written alone, on its caller's goroutine.
func TestLoneCallGoesAlone(t *testing.T) {
	var g Group[string]
	w := &writer{}
	for _, item := range []string{"a", "b", "c"} {
		ids, err := g.Do(t.Context(), item, w)
		if err != nil || !slices.Equal(ids, []string{"id-" + item}) {
			t.Fatalf("%s: %v %v", item, ids, err)
		}
	}
	if !slices.Equal(w.alone, []string{"a", "b", "c"}) || len(w.rounds) != 0 {
		t.Fatalf("alone %v, rounds %v: want every call alone", w.alone, w.rounds)
	}
}

// While Writers calls are under way, the next ones wait and are written in
// one round, in the order they arrived, each answered with its own result;
// one that fails fails alone.
func TestWaitingCallsShareARound(t *testing.T) {
	var g Group[string]
	w := &writer{gate: make(chan struct{}), writing: make(chan string, 16)}
	first, second := do(&g, t.Context(), "a", w), do(&g, t.Context(), "b", w)
	<-w.writing
	<-w.writing // both under way
	var waiting []chan result
	for i, item := range []string{"c", "bad", "d"} {
		waiting = append(waiting, do(&g, t.Context(), item, w))
		eventually(t, "the call waiting", func() bool { return g.Waiting() == i+1 })
	}
	close(w.gate)
	for item, ch := range map[string]chan result{"a": first, "b": second, "c": waiting[0], "d": waiting[2]} {
		if r := <-ch; r.err != nil || !slices.Equal(r.ids, []string{"id-" + item}) {
			t.Fatalf("%s: %v %v", item, r.ids, r.err)
		}
	}
	if r := <-waiting[1]; r.err == nil || r.ids[0] != "" {
		t.Fatalf("bad: %v %v, want its own error", r.ids, r.err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.rounds) != 1 || !slices.Equal(w.rounds[0], []string{"c", "bad", "d"}) {
		t.Fatalf("rounds %v, want one of c, bad, d", w.rounds)
	}
}

// A call whose context ends while it waits leaves unwritten; one whose round
// had begun returns as cut short in flight; the group goes on.
func TestCallLeavesOnCancel(t *testing.T) {
	var g Group[string]
	w := &writer{gate: make(chan struct{}), writing: make(chan string, 16)}
	first, second := do(&g, t.Context(), "a", w), do(&g, t.Context(), "b", w)
	<-w.writing
	<-w.writing
	gone, cancelGone := context.WithCancel(t.Context())
	leaving := do(&g, gone, "gone", w)
	eventually(t, "the call waiting", func() bool { return g.Waiting() == 1 })
	cancelGone()
	if r := <-leaving; !errors.Is(r.err, context.Canceled) || r.err.Error() != "left gone (begun false): context canceled" {
		t.Fatalf("a call that left while waiting: %v", r.err)
	}
	if g.Waiting() != 0 {
		t.Fatalf("%d calls wait, want none", g.Waiting())
	}
	flying, cancelFlying := context.WithCancel(t.Context())
	inRound := do(&g, flying, "flying", w)
	eventually(t, "the call waiting", func() bool { return g.Waiting() == 1 })
	w.gate <- struct{}{} // a's write ends: its writer takes the round of "flying"
	if item := <-w.writing; item != "flying" {
		t.Fatalf("round of %s, want flying", item)
	}
	cancelFlying()
	if r := <-inRound; r.err == nil || r.err.Error() != "left flying (begun true): context canceled" {
		t.Fatalf("a call whose round had begun: %v", r.err)
	}
	close(w.gate)
	for item, ch := range map[string]chan result{"a": first, "b": second} {
		if r := <-ch; r.err != nil {
			t.Fatalf("%s: %v", item, r.err)
		}
	}
	eventually(t, "the writers done", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.writers == 0
	})
	if ids, err := g.Do(t.Context(), "after", w); err != nil || ids[0] != "id-after" {
		t.Fatalf("after: %v %v", ids, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.rounds {
		if slices.Contains(r, "gone") {
			t.Fatalf("rounds %v: the call that left was written", w.rounds)
		}
	}
}

// panicky is a writer whose lone writes panic.
type panicky struct{ writer }

func (p *panicky) Alone(context.Context, string) ([]string, error) { panic("write failed") }

// A lone call whose write panics leaves the group as it was: a caller that
// recovers goes on, and so do the calls after it.
func TestPanicLeavesGroupUsable(t *testing.T) {
	var g Group[string]
	p := &panicky{}
	for range Writers + 1 {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no panic")
				}
			}()
			_, _ = g.Do(t.Context(), "x", p)
		}()
	}
	if ids, err := g.Do(t.Context(), "a", &writer{}); err != nil || ids[0] != "id-a" {
		t.Fatalf("after panics: %v %v", ids, err)
	}
}
