package task

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/clock"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/schedule"
	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"
)

// maxCatchUp bounds how many missed ticks of one schedule a new leader
// enqueues (the most recent ones).
const maxCatchUp = 100

type cronEntry struct {
	name    string
	sched   cron.Schedule
	payload []byte
	opts    []EnqueueOption
	limits  scheduleLimits
	next    time.Time // next tick to enqueue; zero until loaded or ended
	count   int64     // ticks enqueued in all (recorded in Redis)
}

// after returns the schedule's next tick after t.
func (c *cronEntry) after(t time.Time) time.Time { return schedule.After(c.sched, t) }

// Cron enqueues a task with payload p at every tick of spec, a cron
// expression (five fields, or six with seconds first, or a descriptor such
// as "@hourly" or "@every 10s"), on the queue's leader (one of the workers
// whose programs handle the queue and give it this schedule).
//
// Each tick is enqueued exactly once: its task ID is "cron:NAME:TICK" (TICK
// in Unix milliseconds), so a tick enqueued twice is refused as a
// duplicate, and the last tick enqueued is recorded in Redis with the
// leader term. A new leader resumes from the recorded tick, enqueueing the
// ticks its predecessor missed (at most 100), and a deposed leader that
// still runs finds a later term there and stops. Ticks follow the app's
// clock of background schedules: the system's, or the testing kit's
// (leattest). Register schedules before the worker starts.
//
// Starting, Until and Times, among opts, limit the schedule: its first
// tick, its last, and how many ticks it enqueues in all; an ended schedule
// enqueues nothing more, whoever leads.
func (q *Queue[P, R]) Cron(name, spec string, p P, opts ...EnqueueOption) error {
	if err := rdb.CheckName("cron schedule", name); err != nil {
		return err
	}
	s, err := schedule.Parse(spec)
	if err != nil {
		return fmt.Errorf("cron schedule %q: %q: %w", name, spec, err)
	}
	limits, opts, err := splitScheduleOptions(opts)
	if err != nil {
		return fmt.Errorf("cron schedule %q: %w", name, err)
	}
	var es enqueueSettings
	for _, o := range opts {
		if err := o.applyEnqueue(&es); err != nil {
			return fmt.Errorf("cron schedule %q: %w", name, err)
		}
	}
	if es.id != "" || es.delay > 0 || !es.runAt.IsZero() {
		return fmt.Errorf("cron schedule %q: ID, Delay and At are set by the schedule", name)
	}
	if err := q.checkEnqueue(&es, 1); err != nil {
		return fmt.Errorf("cron schedule %q: %w", name, err)
	}
	b, err := encodePayload(p)
	if err != nil {
		return fmt.Errorf("cron schedule %q: payload: %w", name, err)
	}
	for _, c := range q.cron {
		if c.name == name {
			return fmt.Errorf("cron schedule %q is already registered", name)
		}
	}
	q.cron = append(q.cron, &cronEntry{name: name, sched: s, payload: b, opts: opts, limits: limits})
	return nil
}

// loadCron sets each schedule's next tick from the last one recorded, or
// from now for a schedule never fired.
func (q *core) loadCron(ctx context.Context, now time.Time) error {
	if len(q.cron) == 0 {
		return nil
	}
	m, err := rdb.CronTicks(ctx, q.rdb, q.ks.TaskCron(q.name))
	if err != nil {
		return fmt.Errorf("task queue %q: load cron ticks: %w", q.name, err)
	}
	for _, c := range q.cron {
		c.next, c.count = c.first(now), 0
		if v, ok := m[c.name]; ok {
			f := strings.Split(v, ":")
			if ms, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				c.next = c.first(time.UnixMilli(ms))
			}
			if len(f) == 3 {
				c.count, _ = strconv.ParseInt(f[2], 10, 64)
			}
		}
	}
	return nil
}

// runCron enqueues the ticks of the queue's schedules as they come, on clk
// (the app's clock of background schedules: the real one, or the testing
// kit's), until ctx ends; it returns errDeposed when a later leader term
// fired ticks. A tick whose enqueue failed is tried again a moment later.
func (q *core) runCron(ctx context.Context, term int64, clk clock.Clock) error {
	for ctx.Err() == nil {
		now := clk.Now()
		next, err := q.fireCron(ctx, term, now)
		switch {
		case err != nil:
			return err
		case next.IsZero():
			return nil
		case !next.After(now): // a due tick's enqueue failed: Redis is away
			sleep(ctx, cronRetry)
		case !clk.SleepUntil(ctx, next):
			return nil
		}
	}
	return nil
}

// cronRetry is how long a schedule waits before trying a failed tick again.
const cronRetry = 200 * time.Millisecond

// errDeposed stops a leader that found a later term's tick.
var errDeposed = errors.New("task: a later leader term fired cron ticks")

// fireCron enqueues the due ticks of every schedule and returns the next
// tick (zero when there are no schedules).
func (q *core) fireCron(ctx context.Context, term int64, now time.Time) (time.Time, error) {
	var next time.Time
	for _, c := range q.cron {
		if c.next.IsZero() {
			continue // ended
		}
		due := 0
		for t := c.next; !t.After(now) && due <= maxCatchUp; t = schedule.After(c.sched, t) {
			due++
		}
		for skip := due - maxCatchUp; skip > 0; skip-- {
			c.next = schedule.After(c.sched, c.next)
		}
		for !c.next.After(now) && ctx.Err() == nil {
			tick := c.next
			if c.ended(tick) {
				break
			}
			opts := append([]EnqueueOption{scheduleID(ReservedIDPrefix + c.name + ":" + strconv.FormatInt(tick.UnixMilli(), 10))}, c.opts...)
			_, err := q.enqueueRaw(ctx, [][]byte{c.payload}, opts)
			if errors.Is(err, ErrKeyBacklogFull) {
				// the key's line is full: the tick is skipped, not retried
				q.log.Warn("cron tick skipped", "schedule", c.name, "error", err)
			} else if err != nil && !errors.Is(err, ErrDuplicate) {
				q.log.Warn("cron enqueue failed", "schedule", c.name, "error", err)
				break // try again at the next wake
			}
			r, err := rdb.CronTick(ctx, q.rdb, q.ks.TaskCron(q.name), c.name, tick, term)
			if err != nil {
				q.log.Warn("recording cron tick failed", "schedule", c.name, "error", err)
				break
			}
			if r < 0 {
				return next, fmt.Errorf("task queue %q: %w", q.name, errDeposed)
			}
			if r > 0 {
				c.count = int64(r)
			}
			c.next = schedule.After(c.sched, tick)
		}
		if c.ended(c.next) {
			q.log.Info("cron schedule ended", "schedule", c.name, "ticks", c.count)
			c.next = time.Time{}
			continue
		}
		if next.IsZero() || c.next.Before(next) {
			next = c.next
		}
	}
	return next, nil
}

func isNil(err error) bool { return errors.Is(err, redis.Nil) }
