package task

import (
	"context"
	"log/slog"
	"sync"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// hub is the one subscription of an App's task queue workers to their
// queues' channels (cancellations, resumes, live rate changes): a
// connection per App, not per queue. go-redis subscribes again to every
// channel after a reconnection.
type hub struct {
	ps  *redis.PubSub
	log *slog.Logger
	// change serializes subscribing and unsubscribing, so a channel's
	// last unsubscription and a new first subscription keep their order.
	change sync.Mutex
	mu     sync.Mutex
	subs   map[string][]*hubSub // by channel
	done   chan struct{}        // closed when the delivery ends
}

type hubSub struct{ fn func(payload string) }

func newHub(c redis.UniversalClient, log *slog.Logger) *hub {
	h := &hub{ps: rdb.Subscribe(context.Background(), c), log: log, subs: map[string][]*hubSub{}, done: make(chan struct{})}
	go h.deliver()
	return h
}

// subscribe calls fn with the payload of every message on channel, one at a
// time, until the function returned is called.
func (h *hub) subscribe(ctx context.Context, channel string, fn func(payload string)) (unsubscribe func()) {
	s := &hubSub{fn: fn}
	h.change.Lock()
	defer h.change.Unlock()
	h.mu.Lock()
	first := len(h.subs[channel]) == 0
	h.subs[channel] = append(h.subs[channel], s)
	h.mu.Unlock()
	if first {
		if err := rdb.SubscribeTo(ctx, h.ps, channel); err != nil && ctx.Err() == nil {
			// go-redis subscribes again with the next connection
			h.log.Warn("subscribing to a task queue's channel failed", "channel", channel, "error", err)
		}
	}
	return func() {
		h.change.Lock()
		defer h.change.Unlock()
		h.mu.Lock()
		subs := h.subs[channel]
		for i, o := range subs {
			if o == s {
				subs = append(subs[:i:i], subs[i+1:]...)
				break
			}
		}
		if len(subs) == 0 {
			delete(h.subs, channel)
		} else {
			h.subs[channel] = subs
		}
		h.mu.Unlock()
		if len(subs) == 0 {
			_ = rdb.UnsubscribeFrom(context.Background(), h.ps, channel)
		}
	}
}

// deliver hands each message to the subscribers of its channel.
func (h *hub) deliver() {
	defer close(h.done)
	for m := range h.ps.Channel() {
		h.mu.Lock()
		subs := h.subs[m.Channel]
		h.mu.Unlock()
		for _, s := range subs {
			s.fn(m.Payload)
		}
	}
}

// close ends the subscription.
func (h *hub) close() {
	_ = h.ps.Close()
	<-h.done
}
