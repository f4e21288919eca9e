//go:build linux

package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/chaos"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// flowTick is how often the flow producer submits a flow: 5 a second,
// about 28 nodes a second.
const flowTick = 200 * time.Millisecond

// flowProducer submits flows of a few shapes, their nodes spread over the
// flow queues, each with an ID of its own so that a submission that looked
// failed is submitted again harmlessly.
type flowProducer struct {
	a      *app.App
	rng    *rand.Rand
	queues map[string]*task.Queue[chaos.Step, chaos.Made]
	watch  *flowWatch

	plans []chaos.FlowPlan // acknowledged submissions
	fails int              // submissions that failed (and were tried again)
}

// run submits flows until ctx ends.
func (p *flowProducer) run(ctx context.Context) {
	t := time.NewTicker(flowTick)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		plan := p.plan(fmt.Sprintf("f%d", n))
		for {
			err := p.submit(ctx, plan)
			if err == nil || errors.Is(err, task.ErrDuplicate) {
				break // a duplicate: an earlier attempt that looked failed went through
			}
			if errors.Is(err, task.ErrInvalidFlow) {
				panic(fmt.Sprintf("flow %s refused: %v", plan.ID, err))
			}
			p.fails++
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryPause):
			}
		}
		p.plans = append(p.plans, plan)
		p.watch.add(plan.ID)
	}
}

// plan draws a flow's shape: a diamond (a -> b, c -> d), a chain of four,
// a wide fan-out and fan-in (a -> m0..m4 -> z), a root that adds three
// children at run time before its child runs (a +x0..x2 -> b -> c), or a
// diamond whose b adds two children that d sees beside b and c.
func (p *flowProducer) plan(id string) chaos.FlowPlan {
	pl := chaos.FlowPlan{ID: id, Queue: map[string]string{}, Parents: map[string][]string{}, Spawned: map[string][]string{},
		Fail: map[string]int{}}
	node := func(name string, parents ...string) {
		pl.Queue[name] = chaos.FlowQueues[p.rng.IntN(len(chaos.FlowQueues))]
		if len(parents) > 0 {
			pl.Parents[name] = parents
		}
	}
	spawn := func(parent string, names ...string) {
		for _, c := range names {
			node(c)
			pl.Spawned[parent] = append(pl.Spawned[parent], c)
		}
	}
	switch x := p.rng.IntN(20); {
	case x < 7:
		node("a")
		node("b", "a")
		node("c", "a")
		node("d", "b", "c")
	case x < 12:
		node("a")
		node("b", "a")
		node("c", "b")
		node("d", "c")
	case x < 15:
		node("a")
		var ms []string
		for i := range 5 {
			m := fmt.Sprintf("m%d", i)
			node(m, "a")
			ms = append(ms, m)
		}
		node("z", ms...)
	case x < 18:
		node("a")
		spawn("a", "x0", "x1", "x2")
		node("b", "a")
		node("c", "b")
	default:
		node("a")
		node("b", "a")
		spawn("b", "y0", "y1")
		node("c", "a")
		node("d", "b", "c")
	}
	// one flow in five has a node whose first attempt fails
	if p.rng.IntN(5) == 0 {
		nodes := pl.Nodes()
		slices.Sort(nodes)
		pl.Fail[nodes[p.rng.IntN(len(nodes))]] = 1
	}
	return pl
}

// submit builds plan's flow and submits it.
func (p *flowProducer) submit(ctx context.Context, plan chaos.FlowPlan) error {
	f := task.NewFlow(p.a, task.FlowID(plan.ID))
	nodes := map[string]*task.Node{}
	var add func(name string) *task.Node
	add = func(name string) *task.Node {
		if n := nodes[name]; n != nil {
			return n
		}
		step := chaos.Step{Fail: plan.Fail[name]}
		for _, c := range plan.Spawned[name] {
			step.Spawn = append(step.Spawn, chaos.Spawn{Name: c, Queue: plan.Queue[c], Fail: plan.Fail[c]})
		}
		n := task.AddNode(f, name, p.queues[plan.Queue[name]], step)
		nodes[name] = n
		for _, q := range plan.Parents[name] {
			n.After(add(q))
		}
		return n
	}
	added := map[string]bool{}
	for _, cs := range plan.Spawned {
		for _, c := range cs {
			added[c] = true
		}
	}
	for name := range plan.Queue {
		if !added[name] {
			add(name)
		}
	}
	_, err := f.Submit(ctx)
	return err
}

// flowWatch reads the record of each flow submitted until it finds it
// ended, and keeps what it saw then: the check compares it with the
// record after the drain, so that a flow that ended a second time (its
// end written again, or a node's completion counted twice) shows.
type flowWatch struct {
	c  *redis.Client
	ks rdb.KeySpace

	mu   sync.Mutex
	open []string                  // flows not seen ended yet
	seen map[string]chaos.FlowSeen // first sight of each flow ended
}

func newFlowWatch(c *redis.Client, prefix string) *flowWatch {
	return &flowWatch{c: c, ks: rdb.NewKeySpace(prefix, chaos.AppName), seen: map[string]chaos.FlowSeen{}}
}

func (w *flowWatch) add(id string) {
	w.mu.Lock()
	w.open = append(w.open, id)
	w.mu.Unlock()
}

// round reads the record of every flow not seen ended yet, once, and
// returns how many are left.
func (w *flowWatch) round(ctx context.Context) int {
	w.mu.Lock()
	open := append([]string(nil), w.open...)
	w.mu.Unlock()
	ended := map[string]chaos.FlowSeen{}
	for _, id := range open {
		rec, err := rdb.FlowRecord(ctx, w.c, w.ks, id)
		if err != nil {
			break // Redis restarting: the next round reads on
		}
		if s, ok := chaos.SeenOf(rec); ok {
			ended[id] = s
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	left := w.open[:0]
	for _, id := range w.open {
		if s, ok := ended[id]; ok {
			w.seen[id] = s
			continue
		}
		left = append(left, id)
	}
	w.open = left
	return len(w.open)
}

// run reads rounds until ctx ends.
func (w *flowWatch) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.round(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// snapshot returns the flows' first sights.
func (w *flowWatch) snapshot() map[string]chaos.FlowSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]chaos.FlowSeen, len(w.seen))
	for k, v := range w.seen {
		out[k] = v
	}
	return out
}

// readFlows reads, after the drain, the record of every flow submitted and
// the task of each of its nodes.
func readFlows(t *testing.T, c *redis.Client, prefix string, queues map[string]*task.Queue[chaos.Step, chaos.Made], plans []chaos.FlowPlan, w *flowWatch) chaos.FlowsRedis {
	t.Helper()
	ctx := context.Background()
	ks := rdb.NewKeySpace(prefix, chaos.AppName)
	rd := chaos.FlowsRedis{Records: map[string]map[string]string{}, Tasks: map[string]chaos.NodeTask{}, Seen: w.snapshot()}
	for _, p := range plans {
		rec, err := rdb.FlowRecord(ctx, c, ks, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		rd.Records[p.ID] = rec
		for _, n := range p.Nodes() {
			id := task.FlowTaskID(p.ID, n)
			info, err := queues[p.Queue[n]].Info(ctx, id)
			if err != nil {
				rd.Tasks[id] = chaos.NodeTask{State: "error: " + err.Error()}
				continue
			}
			rd.Tasks[id] = chaos.NodeTask{State: string(info.State), Nonce: chaos.NonceOf(info.Result)}
		}
	}
	return rd
}
