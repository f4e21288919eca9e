//go:build linux

package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/tools/chaos"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// Producer rates: every tick, each lane sends a batch of events of random
// keys of its own and enqueues one task.
const (
	keyCount   = 64
	tick       = 50 * time.Millisecond
	lanes      = 4 // producing goroutines, each owning the keys k with k mod lanes = its index
	batch      = 3 // events per lane and tick: 240 a second
	retryPause = 100 * time.Millisecond
)

// producer sends events with per-key sequence numbers and enqueues tasks,
// retrying each until Redis acknowledges it, from lanes goroutines at once,
// so that their sends and enqueues share round trips (as an application's
// request handlers do) while each key's events stay in order (a key is one
// lane's). The results of all lanes are in sends, tasks and sendFails once
// run returns.
type producer struct {
	lanes []*lane

	sends     chaos.Sends
	tasks     []string // acknowledged enqueues
	sendFails int      // send or enqueue attempts that failed (and were retried)
}

// lane is one producing goroutine.
type lane struct {
	n      int
	rng    *rand.Rand
	events *stream.Stream[chaos.Event]
	queue  *task.Queue[chaos.Chore, chaos.Done]

	sends     chaos.Sends
	tasks     []string
	sendFails int
}

func newProducer(seed uint64, events *stream.Stream[chaos.Event], queue *task.Queue[chaos.Chore, chaos.Done]) *producer {
	p := &producer{sends: chaos.Sends{Acked: map[string]int64{}, Tried: map[string]int64{}}}
	for n := range lanes {
		p.lanes = append(p.lanes, &lane{n: n, rng: rand.New(rand.NewPCG(seed, uint64(10+n))), events: events, queue: queue,
			sends: chaos.Sends{Acked: map[string]int64{}, Tried: map[string]int64{}}})
	}
	return p
}

// run produces until ctx ends, then gathers what the lanes sent.
func (p *producer) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, l := range p.lanes {
		wg.Add(1)
		go func() { defer wg.Done(); l.run(ctx) }()
	}
	wg.Wait()
	for _, l := range p.lanes {
		for k, v := range l.sends.Acked {
			p.sends.Acked[k] = v
		}
		for k, v := range l.sends.Tried {
			p.sends.Tried[k] = v
		}
		p.tasks = append(p.tasks, l.tasks...)
		p.sendFails += l.sendFails
	}
}

// run produces until ctx ends. A batch is sent again, whole, after a
// failure, so an event may be in the stream more than once (the
// processor's duplicates remove it), but a key's events are never sent
// out of order: the next batch waits for the acknowledgement of this one.
func (l *lane) run(ctx context.Context) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for n := int64(1); ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		evs := make([]chaos.Event, batch)
		for i := range evs {
			k := fmt.Sprintf("k%d", l.n+lanes*l.rng.IntN(keyCount/lanes))
			l.sends.Tried[k]++
			evs[i] = chaos.Event{Key: k, Seq: l.sends.Tried[k]}
		}
		if !l.retry(ctx, func() error { _, err := l.events.SendMany(ctx, evs); return err }) {
			return
		}
		for _, e := range evs {
			l.sends.Acked[e.Key] = e.Seq
		}
		id := fmt.Sprintf("chore-%d-%d", l.n, n)
		if !l.retry(ctx, func() error {
			_, err := l.queue.Enqueue(ctx, chaos.Chore{N: n}, task.ID(id))
			if errors.Is(err, task.ErrDuplicate) {
				return nil // an earlier attempt that looked failed went through
			}
			return err
		}) {
			return
		}
		l.tasks = append(l.tasks, id)
	}
}

// retry calls fn until it succeeds (true) or ctx ends (false).
func (l *lane) retry(ctx context.Context, fn func() error) bool {
	for {
		if fn() == nil {
			return true
		}
		l.sendFails++
		select {
		case <-ctx.Done():
			return false
		case <-time.After(retryPause):
		}
	}
}
