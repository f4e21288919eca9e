package app

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// Schedule says when a background task runs. The zero value runs it once
// when the worker starts (or, if LeaderOnly, once on the app's leader: see
// LeaderOnly).
type Schedule struct {
	// Every runs the task at this interval, the first time at start. The
	// ticks keep to one grid: start, start + Every, ...
	Every time.Duration
	// Cron runs the task on a cron schedule: five fields (minute, hour, day
	// of month, month, day of week), six fields (a second first: "*/10 * *
	// * * *"), or a descriptor ("@hourly", "@daily", "@every 90s"), in the
	// worker's local time zone unless prefixed with CRON_TZ=ZONE or TZ=ZONE
	// ("CRON_TZ=Europe/Paris 0 30 8 * * MON-FRI"). An invalid expression,
	// or one that matches no time, is refused by Background.
	Cron string
	// LeaderOnly runs the task only on the app's leader; it moves to the
	// new leader on failover, and its context ends on the old one at the
	// end of its trust in the lease. The leader records in Redis the last
	// tick run (or, for a task run once, that it completed), so a new
	// leader resumes after it: see the package doc.
	LeaderOnly bool
	// Lease, with LeaderOnly, runs the task on the holder of a lease of
	// this name instead of on the app's leader: among the workers whose
	// programs register a leader-only task with the same Lease, one holds
	// it, elected, fenced and handed over as the app's leader is (its terms
	// are numbered by the app's leader term counter: LeaderTerm still
	// grows strictly). For leader-only work that not every program of the
	// app registers: the app's leader may be a worker whose program does
	// not have it. Task queues run their leader-side work this way, one
	// lease per queue, among the workers that handle the queue. A name as
	// for background tasks.
	Lease string
	// Overlap lets a run start at its tick while the previous run of the
	// task is still going. By default runs never overlap: a run that
	// outlasts its interval delays the next one, which then stands for
	// every tick due meanwhile (the overrun is logged).
	Overlap bool
}

type task struct {
	name  string
	fn    func(ctx context.Context) error
	sched Schedule
	cad   cadence
}

// Background registers fn to run on every worker (or only on the leader) on
// the given schedule. An error or a panic of fn is logged; the schedule
// goes on. fn must return when ctx is done.
func (a *App) Background(name string, fn func(ctx context.Context) error, s Schedule) error {
	if err := rdb.CheckName("background task", name); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("background task %q: function is nil", name)
	}
	t := &task{name: name, fn: fn, sched: s, cad: cadence{every: s.Every}}
	switch {
	case s.Lease != "" && !s.LeaderOnly:
		return fmt.Errorf("background task %q: Lease needs LeaderOnly", name)
	case s.Lease != "" && !rdb.ValidName(s.Lease):
		return fmt.Errorf("background task %q: %w", name, rdb.CheckName("lease", s.Lease))
	case s.Every < 0:
		return fmt.Errorf("background task %q: negative interval", name)
	case s.Every > 0 && s.Cron != "":
		return fmt.Errorf("background task %q: Every and Cron are exclusive", name)
	case s.Overlap && !t.cad.periodic() && s.Cron == "":
		return fmt.Errorf("background task %q: Overlap needs Every or Cron", name)
	case s.Cron != "":
		c, err := parseCron(s.Cron)
		if err != nil {
			return fmt.Errorf("background task %q: cron %q: %w", name, s.Cron, err)
		}
		t.cad.cron = c
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range a.tasks {
		if o.name == name {
			return fmt.Errorf("background task %q is already registered", name)
		}
	}
	a.tasks = append(a.tasks, t)
	if s.LeaderOnly && s.Lease != "" {
		a.scopedLocked(s.Lease) // campaigned for from the worker's start
	}
	return nil
}

func (a *App) backgroundTasks() []*task {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*task(nil), a.tasks...)
}

type tickKey struct{}

// ScheduledTime returns the tick a run of a periodic background task (Every
// or Cron) stands for: the time it was due. A run that starts late (after
// an overrun or a failover) stands for every tick due since the previous
// run, and carries the latest. ok is false for other contexts.
func ScheduledTime(ctx context.Context) (tick time.Time, ok bool) {
	tick, ok = ctx.Value(tickKey{}).(time.Time)
	return tick, ok
}

// run runs t until ctx is done. A leader-only task runs its schedule in
// each term this worker leads, in the term's context: it ends at the exact
// moment the lease can no longer be trusted, or when the worker stops
// (RunProcessors resigns before it waits for the tasks), and carries the
// term number (LeaderTerm).
func (t *task) run(ctx context.Context, a *App) {
	if !t.sched.LeaderOnly {
		if !t.cad.periodic() {
			t.call(ctx, a, time.Time{})
			return
		}
		t.loop(ctx, a, time.Time{}, func(time.Time) {})
		return
	}
	leader := a.leaderOf(t.sched.Lease)
	for ctx.Err() == nil {
		changed := leader.watch()
		cur := leader.current()
		if cur == nil {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			continue
		}
		t.lead(cur, a)
	}
}

// loop runs a periodic task at its ticks, from the tick after last (none
// run when zero), until ctx is done; done is called with the tick of each
// run that completed. Runs do not overlap unless the schedule allows it.
func (t *task) loop(ctx context.Context, a *App, last time.Time, done func(tick time.Time)) {
	var runs sync.WaitGroup // overlapping runs
	defer runs.Wait()
	var next time.Time
	missed := 0
	if last.IsZero() {
		// In microseconds, as recorded in Redis: a new leader keeps the grid.
		next = t.cad.first(a.clock.Now()).Truncate(time.Microsecond)
	} else {
		next, missed = t.cad.next(last, a.clock.Now())
	}
	for {
		if next.IsZero() || !a.clock.SleepUntil(ctx, next) {
			<-ctx.Done() // a cron schedule that matches no more times
			return
		}
		if missed > 0 {
			a.logger.Info("background task runs once for the ticks it missed", "task", t.name, "missed", missed, "scheduled", next)
		}
		tick := next
		if t.sched.Overlap {
			runs.Add(1)
			go func() {
				defer runs.Done()
				if t.call(ctx, a, tick) {
					done(tick)
				}
			}()
			next, missed = t.cad.next(tick, a.clock.Now())
			continue
		}
		start := a.clock.Now()
		if t.call(ctx, a, tick) {
			done(tick)
		}
		if ctx.Err() != nil {
			return
		}
		now := a.clock.Now()
		next, missed = t.cad.next(tick, now)
		if d := t.cad.after(tick); !d.IsZero() && !d.After(now) {
			a.logger.Warn("background task overran its schedule", "task", t.name, "duration", now.Sub(start),
				"scheduled", tick, "missed", missed)
			missed = 0
		}
	}
}

// sleepUntil waits until the wall clock reaches at, and reports false if
// ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// call runs fn once, at tick (zero for a task run once), and reports
// whether the run completed: fn returned, with or without an error, before
// ctx ended. A panic is recovered and logged, and counts as completed.
func (t *task) call(ctx context.Context, a *App, tick time.Time) (completed bool) {
	log := a.logger.With("task", t.name)
	if !tick.IsZero() {
		ctx = context.WithValue(ctx, tickKey{}, tick)
	}
	defer func() {
		if r := recover(); r != nil {
			log.Error("background task panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
		completed = ctx.Err() == nil
	}()
	if err := t.fn(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("background task failed", "error", err)
	}
	return
}

// recordTTL is how long the record of a leader-only task outlives the last
// leader that kept it alive.
func (a *App) recordTTL() time.Duration { return 3 * a.cfg.LeaderLease }

// lead runs a leader-only task in term tm, until the term ends. It reads
// the task's record first: a task run once runs unless a leader completed
// it; a periodic one resumes after the last tick run. Completed runs are
// recorded by a script that checks that tm still holds the lease, and the
// record is kept alive while tm lasts.
func (t *task) lead(tm *term, a *App) {
	ctx := tm.trust
	key := a.keys.Background(t.name)
	var keeper sync.WaitGroup
	keeper.Add(1)
	go func() { defer keeper.Done(); t.keep(ctx, a, key) }()
	defer keeper.Wait()

	rec, ok := t.readRecord(ctx, a, key)
	if !ok {
		return
	}
	token := tm.lock.Token()
	write := func(field string, value int64) {
		err := rdb.RecordBackground(ctx, a.client, tm.lock.Key(), key, tm.lock.Value(), token, field, value, a.recordTTL())
		if err != nil && ctx.Err() == nil {
			a.logger.Warn("background task run not recorded", "task", t.name, "term", token, "error", err)
		}
	}
	if !t.cad.periodic() {
		if rec.done != 0 {
			a.logger.Info("background task already completed", "task", t.name, "term", rec.done)
		} else if t.call(ctx, a, time.Time{}) {
			write(rdb.RecordDone, token)
		}
		<-ctx.Done() // once per term at most
		return
	}
	t.loop(ctx, a, rec.tick, func(tick time.Time) { write(rdb.RecordTick, tick.UnixMicro()) })
}

// record is what Redis holds about a leader-only task.
type record struct {
	tick time.Time // last tick run; zero when none
	done int64     // term that completed a task run once; 0 when none
}

// readRecord reads the record at key, trying again until ctx ends; ok is
// false when it ended first.
func (t *task) readRecord(ctx context.Context, a *App, key string) (r record, ok bool) {
	for {
		us, done, err := rdb.BackgroundRecord(ctx, a.client, key)
		if err == nil {
			if us != 0 {
				r.tick = time.UnixMicro(us)
			}
			r.done = done
			return r, true
		}
		if ctx.Err() != nil {
			return r, false
		}
		a.logger.Warn("background task record unreadable", "task", t.name, "error", err)
		if !sleepUntil(ctx, time.Now().Add(a.cfg.LeaderLease/10)) {
			return r, false
		}
	}
}

// keep extends the TTL of the record at key every LeaderLease/3 until ctx
// ends, so that it outlives this term by recordTTL.
func (t *task) keep(ctx context.Context, a *App, key string) {
	for sleepUntil(ctx, time.Now().Add(a.cfg.LeaderLease/3)) {
		if err := rdb.KeepBackgroundRecord(ctx, a.client, key, a.recordTTL()); err != nil && ctx.Err() == nil {
			a.logger.Debug("background task record not kept alive", "task", t.name, "error", err)
		}
	}
}
