package app

import (
	"time"

	"github.com/leatdev/leat/internal/schedule"
	"github.com/robfig/cron/v3"
)

// parseCron parses a cron expression of a Schedule (see schedule.Parse).
func parseCron(spec string) (cron.Schedule, error) { return schedule.Parse(spec) }

// cadence is the sequence of a periodic task's ticks: the times it is due.
// An interval's ticks are first, first + Every, first + 2 Every, ...; a cron
// schedule's are the times it matches.
type cadence struct {
	every time.Duration
	cron  cron.Schedule
}

// periodic reports whether the cadence has ticks (false for a task run
// once).
func (c cadence) periodic() bool { return c.every > 0 || c.cron != nil }

// first returns the first tick when none was run before: now for an
// interval (the task runs at start), the first cron time after now.
func (c cadence) first(now time.Time) time.Time {
	if c.cron != nil {
		return cronAfter(c.cron, now)
	}
	return now
}

// after returns the tick that follows tick.
func (c cadence) after(tick time.Time) time.Time {
	if c.cron != nil {
		return cronAfter(c.cron, tick)
	}
	return tick.Add(c.every)
}

// cronAfter returns the first time of s after t (see schedule.After: a
// time of day repeated when clocks go back runs once).
func cronAfter(s cron.Schedule, t time.Time) time.Time { return schedule.After(s, t) }

// next returns the tick to run after last (a tick that was run), as of now:
// the one that follows last when it is still to come or just due; else the
// latest tick at or before now, which stands for every tick due since last
// (missed counts the others). A tick is never returned twice, and the
// ticks returned keep to one grid: last's.
func (c cadence) next(last, now time.Time) (tick time.Time, missed int) {
	tick = c.after(last)
	if tick.After(now) || tick.IsZero() {
		return tick, 0
	}
	if c.cron == nil {
		n := int(now.Sub(tick) / c.every)
		return tick.Add(time.Duration(n) * c.every), n
	}
	for {
		n := cronAfter(c.cron, tick)
		if n.After(now) || n.IsZero() {
			return tick, missed
		}
		tick = n
		missed++
	}
}
