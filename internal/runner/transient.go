package runner

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/leatdev/leat/internal/topology"
)

// transient is a consumer's account of the transient failures of the
// event (or batch) at the head of its partition; see TransientRetry.
type transient struct {
	id    string    // first failing entry; "" when the call failed before taking one
	since time.Time // first transient failure of id
	tries int       // retries so far
}

// retryTransient retries in place a processor call that failed with a
// transient Redis error: it waits for the backoff (or until the partition
// stops) and returns true, until opts.Transient.For has passed since the
// first such failure of the same entry. It returns false at once for other
// errors, when these retries are off, or when their time is up: then the
// ordinary retries and the failure policy apply.
func (p *partition) retryTransient(id string, err error) bool {
	t := p.e.opts.Transient
	if t.Off || !topology.IsTransient(err) {
		return false
	}
	now := time.Now()
	if p.transient.since.IsZero() || p.transient.id != id {
		p.transient = transient{id: id, since: now}
	}
	left := t.For - now.Sub(p.transient.since)
	if left <= 0 {
		return false
	}
	p.transient.tries++
	d := backoff(t.Backoff, t.MaxBackoff, p.transient.tries)
	p.log.Warn("processor failed with a transient Redis error; retrying", "error", err, "id", id,
		"attempt", p.transient.tries, "retrying_for", now.Sub(p.transient.since).Round(time.Millisecond).String())
	p.sleep(min(d, left))
	return true
}

// backoff returns the wait before retry n (from 1): first doubled n-1
// times, capped at most, with jitter in [d/2, d].
func backoff(first, most time.Duration, n int) time.Duration {
	d := most
	if n <= 62 {
		if b := first << (n - 1); b > 0 && b < most {
			d = b
		}
	}
	return d/2 + rand.N(d/2+1)
}

// Waits between the tries of the runtime's own writes (acks, dead letters,
// stop reports) that failed with a transient error.
const (
	writeBackoff    = 50 * time.Millisecond
	writeMaxBackoff = time.Second
)

// ride calls write until it succeeds or fails with an error that is not
// transient (topology.IsTransient), or until ctx ends, waiting between tries
// with backoff; it returns write's last error. The runtime's own writes
// ride out a failover this way within the time their context gives them.
func ride(ctx context.Context, write func(context.Context) error) error {
	for try := 1; ; try++ {
		err := write(ctx)
		if err == nil || !topology.IsTransient(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(backoff(writeBackoff, writeMaxBackoff, try))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
