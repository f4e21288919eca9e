package app

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/leatdev/leat/internal/keys"
	"github.com/robfig/cron/v3"
)

// Schedule says when a background task runs. The zero value runs it once
// when the worker starts (or, if LeaderOnly, each time this worker becomes
// leader).
type Schedule struct {
	// Every runs the task at this interval, the first time at start.
	Every time.Duration
	// Cron runs the task on a cron schedule: five fields (minute, hour,
	// day of month, month, day of week) or a descriptor such as "@hourly".
	Cron string
	// LeaderOnly runs the task only on the app's leader; it moves to the
	// new leader on failover, and its context is cancelled on the old one.
	LeaderOnly bool
}

type task struct {
	name  string
	fn    func(ctx context.Context) error
	sched Schedule
	cron  cron.Schedule
}

// Background registers fn to run on every worker (or only on the leader) on
// the given schedule. An error or a panic of fn is logged; the schedule
// goes on. fn must return when ctx is done.
func (a *App) Background(name string, fn func(ctx context.Context) error, s Schedule) error {
	if err := keys.CheckName("background task", name); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("background task %q: function is nil", name)
	}
	t := &task{name: name, fn: fn, sched: s}
	switch {
	case s.Every < 0:
		return fmt.Errorf("background task %q: negative interval", name)
	case s.Every > 0 && s.Cron != "":
		return fmt.Errorf("background task %q: Every and Cron are exclusive", name)
	case s.Cron != "":
		c, err := cron.ParseStandard(s.Cron)
		if err != nil {
			return fmt.Errorf("background task %q: cron %q: %w", name, s.Cron, err)
		}
		t.cron = c
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range a.tasks {
		if o.name == name {
			return fmt.Errorf("background task %q is already registered", name)
		}
	}
	a.tasks = append(a.tasks, t)
	return nil
}

func (a *App) backgroundTasks() []*task {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*task(nil), a.tasks...)
}

// run runs t until ctx is done. A leader-only task runs its schedule in
// each term this worker leads, in the term's context: it ends at the exact
// moment the lease can no longer be trusted, or when the worker stops
// (RunProcessors resigns before it waits for the tasks), and carries the
// term number (LeaderTerm).
func (t *task) run(ctx context.Context, a *App) {
	if !t.sched.LeaderOnly {
		t.schedule(ctx, a)
		return
	}
	for ctx.Err() == nil {
		changed := a.leader.watch()
		cur := a.leader.current()
		if cur == nil {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			continue
		}
		t.schedule(cur.trust, a)
	}
}

// schedule runs t at its times until ctx is done.
func (t *task) schedule(ctx context.Context, a *App) {
	next := time.Now()
	for {
		if t.cron != nil {
			next = t.cron.Next(time.Now())
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		t.once(ctx, a)
		switch {
		case t.sched.Every > 0:
			next = next.Add(t.sched.Every)
			if now := time.Now(); next.Before(now) {
				next = now // overran: run again now, do not pile up
			}
		case t.cron == nil:
			<-ctx.Done() // once
			return
		}
	}
}

func (t *task) once(ctx context.Context, a *App) {
	log := a.logger.With("task", t.name)
	defer func() {
		if r := recover(); r != nil {
			log.Error("background task panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	if err := t.fn(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("background task failed", "error", err)
	}
}
