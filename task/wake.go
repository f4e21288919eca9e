package task

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// A queue's leader sleeps until its next due time, or maxLeadSleep, and is
// woken earlier by a push to the queue's wake list (an enqueue of a task
// due sooner). On a single server the leaders of an App wait on their
// lists in one BLPOP, on one connection, which a leader starting
// interrupts (CLIENT UNBLOCK) to be included; elsewhere each leader waits
// in BLPOPs of its own, a second at a time. A wake popped for a leader that
// just stopped is lost, which costs nothing: the next leader promotes when
// it starts.

// wakeLists waits on the wake lists of the queues an App leads.
type wakeLists struct {
	off func(command string, err error)

	// u.mu guards the fields below too.
	u     unblockable
	watch map[string]chan<- struct{} // by wake list
	dirty bool                       // watch changed since the command under way began
	more  chan struct{}              // a list was added (1 buffered)
	stop  chan struct{}              // closed by close
	done  chan struct{}              // closed when run returns
}

func newWakeLists(client *redis.Client, admin redis.UniversalClient, off func(string, error)) *wakeLists {
	k := &wakeLists{
		u: unblockable{client: client, admin: admin}, off: off, watch: map[string]chan<- struct{}{},
		more: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go k.run()
	return k
}

// add signals wake, without blocking, each time list is pushed to, until
// the function returned is called.
func (k *wakeLists) add(list string, wake chan<- struct{}) (remove func()) {
	k.u.mu.Lock()
	k.watch[list] = wake
	k.dirty = true
	k.u.kick()
	k.u.mu.Unlock()
	select {
	case k.more <- struct{}{}:
	default:
	}
	return func() {
		k.u.mu.Lock()
		delete(k.watch, list)
		k.u.mu.Unlock()
	}
}

// close stops the wait.
func (k *wakeLists) close() {
	k.u.mu.Lock()
	close(k.stop)
	k.u.kick()
	k.u.mu.Unlock()
	<-k.done
}

func (k *wakeLists) run() {
	defer close(k.done)
	defer k.u.reset()
	failures := 0
	for {
		if !k.u.await(func() bool { return len(k.watch) == 0 }, k.stop, k.more) {
			return
		}
		lists := slices.Sorted(maps.Keys(k.watch))
		k.dirty = false
		k.u.mu.Unlock()
		select {
		case <-k.stop:
			return
		default:
		}
		if err := k.u.ready(context.Background()); err != nil {
			if refused(err) {
				k.off("CLIENT ID", err) // the leaders look every maxLeadSleep anyway
			}
			failures++
			pause(k.stop, failures)
			continue
		}
		k.u.mu.Lock()
		k.u.begin()
		if k.dirty {
			k.u.kick() // a list added since they were chosen
		}
		select {
		case <-k.stop:
			k.u.kick()
		default:
		}
		k.u.mu.Unlock()
		res, err := rdb.PopWake(context.Background(), k.u.conn, idleBlock, lists...)
		k.u.mu.Lock()
		k.u.end(err)
		if err == nil && len(res) == 2 {
			if wake := k.watch[res[0]]; wake != nil {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
		k.u.mu.Unlock()
		if err != nil && !errors.Is(err, redis.Nil) {
			failures++
			pause(k.stop, failures)
		} else {
			failures = 0
		}
	}
}
