// Package clock is the time source of background task schedules and task
// queues' cron schedules: the real clock in production, a fake one that a
// test advances by hand (leattest). Leases, locks, timeouts, task delays and
// retry backoff always use real time.
package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock tells the time and waits for it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// SleepUntil waits until the clock reaches at, and reports false if
	// ctx ended first.
	SleepUntil(ctx context.Context, at time.Time) bool
}

// Real is the system clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// SleepUntil implements Clock.
func (Real) SleepUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Fake is a clock that moves only when told to. It is safe for concurrent
// use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
	changed chan struct{} // closed and replaced when a waiter is added
}

type waiter struct {
	at   time.Time
	wake chan struct{}
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start, changed: make(chan struct{})} }

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// SleepUntil implements Clock: it returns once Advance or Set moved the
// clock to at or later.
func (f *Fake) SleepUntil(ctx context.Context, at time.Time) bool {
	f.mu.Lock()
	if !at.After(f.now) {
		f.mu.Unlock()
		return true
	}
	w := &waiter{at: at, wake: make(chan struct{})}
	f.waiters = append(f.waiters, w)
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	select {
	case <-w.wake:
		return true
	case <-ctx.Done():
		f.mu.Lock()
		for i, x := range f.waiters {
			if x == w {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				break
			}
		}
		f.mu.Unlock()
		return false
	}
}

// Advance moves the clock forward by d, waking the sleepers whose time has
// come, earliest first.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves the clock to t (never backwards), waking the sleepers whose
// time has come, earliest first.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.now = t
	}
	sort.Slice(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.at.After(f.now) {
			close(w.wake)
		} else {
			kept = append(kept, w)
		}
	}
	f.waiters = kept
}

// Sleepers returns how many goroutines wait on the clock.
func (f *Fake) Sleepers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// WaitSleepers waits until at least n goroutines wait on the clock, or ctx
// ends; it reports whether they do.
func (f *Fake) WaitSleepers(ctx context.Context, n int) bool {
	for {
		f.mu.Lock()
		ok, changed := len(f.waiters) >= n, f.changed
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// Attach, set by package app, gives an *app.App the clock of its
// background schedules (leattest uses it).
var Attach func(app any, c Clock) error

// Of, set by package app, returns the clock of an *app.App's background
// schedules (task queues' cron schedules follow it too).
var Of func(app any) Clock
