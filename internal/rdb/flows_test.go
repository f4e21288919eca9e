package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// A node's outcome recorded twice (the reply of the first call lost, the
// worker sends it again) changes nothing the second time: the children are
// queued once, the flow's count of nodes left falls once, the flow ends
// once, and the second call hands back what is still to do (the release
// set, the end of retention), so that the caller finishes it.
func TestFlowNodeRunAgain(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ks := rdb.NewKeySpace(prefix, "shop")
	const id = "f1"
	// a and b are roots; c waits for both
	nodes := []rdb.FlowNodeDef{
		{Name: "a", Queue: "q", Policy: "fail", Children: "c"},
		{Name: "b", Queue: "q", Policy: "fail", Children: "c"},
		{Name: "c", Queue: "q", Policy: "fail", Parents: "a,b", NParents: 2},
	}
	if st, err := rdb.FlowCreate(ctx, c, ks, id, time.Hour, []byte(`{}`), nodes); err != nil || st != "created" {
		t.Fatalf("create %q %v", st, err)
	}
	if st, _, err := rdb.FlowStart(ctx, c, ks, id, []string{"a", "b"}); err != nil || st != "running" {
		t.Fatalf("start %q %v", st, err)
	}
	if err := rdb.FlowDone(ctx, c, ks, id, []string{"a", "b"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	field := func(f string) string {
		t.Helper()
		v, err := c.HGet(ctx, ks.Flow(id), f).Result()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return v
	}
	node := func(n string) rdb.FlowStep {
		t.Helper()
		step, err := rdb.FlowNode(ctx, c, ks, id, n, "succeeded", []byte(`"`+n+`"`))
		if err != nil {
			t.Fatal(err)
		}
		return step
	}

	// a twice: c still waits for b, its count falls once
	for try := range 2 {
		step := node("a")
		if step.State != "running" || len(step.Release) != 0 || !step.Expiry.IsZero() {
			t.Fatalf("a, call %d: %+v", try+1, step)
		}
		if w, left := field("w:c"), field("left"); w != "1" || left != "2" {
			t.Fatalf("a, call %d: c waits for %s parents, %s nodes left; want 1 and 2", try+1, w, left)
		}
	}
	// b twice: c queued once, and the second call hands its release back
	// (not confirmed yet)
	for try := range 2 {
		step := node("b")
		if step.State != "running" || len(step.Release) != 1 || step.Release[0] != (rdb.FlowRef{Node: "c", Queue: "q"}) {
			t.Fatalf("b, call %d: %+v", try+1, step)
		}
		if w, left, s := field("w:c"), field("left"), field("s:c"); w != "0" || left != "1" || s != "queued" {
			t.Fatalf("b, call %d: w:c %s, left %s, s:c %s; want 0, 1, queued", try+1, w, left, s)
		}
	}
	if err := rdb.FlowDone(ctx, c, ks, id, []string{"c"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if step := node("b"); len(step.Release) != 0 {
		t.Fatalf("b again after the release was confirmed: %+v", step)
	}
	// c twice: the flow ends once, and both calls give its end of retention
	first := node("c")
	if first.State != "succeeded" || first.Expiry.IsZero() {
		t.Fatalf("c: %+v", first)
	}
	ended := field("f")
	again := node("c")
	if again.State != "succeeded" || !again.Expiry.Equal(first.Expiry) || len(again.Release)+len(again.Cancel)+len(again.Revive) != 0 {
		t.Fatalf("c again: %+v, want the state and expiry of %+v", again, first)
	}
	if f, left := field("f"), field("left"); f != ended || left != "0" {
		t.Fatalf("after c again: ended at %s (first %s), %s nodes left", f, ended, left)
	}
	if r, _ := c.HGet(ctx, ks.Flow(id), "r:c").Result(); r != `"c"` {
		t.Fatalf("c's result %q", r)
	}
}
