//go:build linux

package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leatdev/leat/internal/chaos"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// Producer rates: every tick, a batch of events of random keys and one
// task.
const (
	keyCount   = 64
	tick       = 50 * time.Millisecond
	batch      = 10 // events per tick: 200 a second
	retryPause = 100 * time.Millisecond
)

// producer sends events with per-key sequence numbers and enqueues tasks,
// retrying each until Redis acknowledges it.
type producer struct {
	rng    *rand.Rand
	events *stream.Stream[chaos.Event]
	queue  *task.Queue[chaos.Chore, chaos.Done]

	sends     chaos.Sends
	tasks     []string // acknowledged enqueues
	sendFails int      // send or enqueue attempts that failed (and were retried)
}

func newProducer(rng *rand.Rand, events *stream.Stream[chaos.Event], queue *task.Queue[chaos.Chore, chaos.Done]) *producer {
	return &producer{rng: rng, events: events, queue: queue,
		sends: chaos.Sends{Acked: map[string]int64{}, Tried: map[string]int64{}}}
}

// run produces until ctx ends. A batch is sent again, whole, after a
// failure, so an event may be in the stream more than once (the
// processor's duplicates remove it), but a key's events are never sent
// out of order: the next batch waits for the acknowledgement of this one.
func (p *producer) run(ctx context.Context) {
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
			k := fmt.Sprintf("k%d", p.rng.IntN(keyCount))
			p.sends.Tried[k]++
			evs[i] = chaos.Event{Key: k, Seq: p.sends.Tried[k]}
		}
		if !p.retry(ctx, func() error { _, err := p.events.SendMany(ctx, evs); return err }) {
			return
		}
		for _, e := range evs {
			p.sends.Acked[e.Key] = e.Seq
		}
		id := fmt.Sprintf("chore-%d", n)
		if !p.retry(ctx, func() error {
			_, err := p.queue.Enqueue(ctx, chaos.Chore{N: n}, task.ID(id))
			if errors.Is(err, task.ErrDuplicate) {
				return nil // an earlier attempt that looked failed went through
			}
			return err
		}) {
			return
		}
		p.tasks = append(p.tasks, id)
	}
}

// retry calls fn until it succeeds (true) or ctx ends (false).
func (p *producer) retry(ctx context.Context, fn func() error) bool {
	for {
		if fn() == nil {
			return true
		}
		p.sendFails++
		select {
		case <-ctx.Done():
			return false
		case <-time.After(retryPause):
		}
	}
}
