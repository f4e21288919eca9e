package app

import (
	"errors"
	"time"
	_ "time/tzdata" // CRON_TZ= and TZ= work on hosts without a zoneinfo database

	"github.com/robfig/cron/v3"
)

// cronParser reads five fields (minute, hour, day of month, month, day of
// week), six fields (a second first), descriptors (@hourly, @daily,
// @every 90s, ...), each optionally preceded by CRON_TZ=ZONE or TZ=ZONE.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// errNeverFires refuses a cron expression that matches no time (30 February).
var errNeverFires = errors.New("it matches no time in the next five years")

// parseCron parses a cron expression of a Schedule.
func parseCron(spec string) (cron.Schedule, error) {
	c, err := cronParser.Parse(spec)
	if err != nil {
		return nil, err
	}
	if c.Next(time.Now()).IsZero() {
		return nil, errNeverFires
	}
	return c, nil
}

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

// allHours is the hour field of a cron schedule that names every hour.
const allHours = 1<<24 - 1

// cronAfter returns the first time of s after t. A schedule that names its
// hours (not "*") runs at most once per time of day: when clocks go back
// in autumn, the repeated times of day do not run again (01:30 runs once
// on the day New York goes from 02:00 EDT back to 01:00 EST), while hourly
// schedules follow real hours and run in both.
func cronAfter(s cron.Schedule, t time.Time) time.Time {
	n := s.Next(t)
	spec, ok := s.(*cron.SpecSchedule)
	if !ok || spec.Hour&allHours == allHours {
		return n
	}
	for !n.IsZero() && !wall(n, spec.Location).After(wall(t, spec.Location)) {
		n = s.Next(n)
	}
	return n
}

// wall returns the time of day and date t shows in loc, as a UTC time, to
// compare what clocks show.
func wall(t time.Time, loc *time.Location) time.Time {
	y, mo, d := t.In(loc).Date()
	h, mi, sec := t.In(loc).Clock()
	return time.Date(y, mo, d, h, mi, sec, t.Nanosecond(), time.UTC)
}

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
