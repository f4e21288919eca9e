// Package schedule reads cron expressions and steps through their times,
// for the app's background schedules and the task queues' cron schedules
// alike, so both fire at the same times.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // CRON_TZ= and TZ= work on hosts without a zoneinfo database

	"github.com/robfig/cron/v3"
)

// parser reads five fields (minute, hour, day of month, month, day of
// week), six fields (a second first), descriptors (@hourly, @daily,
// @every 90s, ...), each optionally preceded by CRON_TZ=ZONE or TZ=ZONE.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ErrNeverFires refuses a cron expression that matches no time (30
// February).
var ErrNeverFires = errors.New("it matches no time in the next five years")

// MinEvery is the shortest interval of "@every": the schedules tick on
// whole seconds.
const MinEvery = time.Second

// Parse parses a cron expression, refusing one that never fires and an
// "@every" interval that is not a whole number of seconds, at least
// MinEvery (the parser would otherwise run "@every 0s", "@every -1s" and
// "@every 1500ms" every second or so, silently).
func Parse(spec string) (cron.Schedule, error) {
	if err := checkEvery(spec); err != nil {
		return nil, err
	}
	c, err := parser.Parse(spec)
	if err != nil {
		return nil, err
	}
	if c.Next(time.Now()).IsZero() {
		return nil, ErrNeverFires
	}
	return c, nil
}

// checkEvery checks the interval of an "@every" expression.
func checkEvery(spec string) error {
	s := strings.TrimSpace(spec)
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		if i := strings.IndexAny(s, " \t"); i >= 0 {
			s = strings.TrimSpace(s[i:])
		}
	}
	rest, ok := strings.CutPrefix(s, "@every ")
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	if err != nil {
		return nil // the parser says why
	}
	if d < MinEvery || d%time.Second != 0 {
		return fmt.Errorf("@every %s: the interval must be a whole number of seconds, at least %s", d, MinEvery)
	}
	return nil
}

// allHours is the hour field of a cron schedule that names every hour.
const allHours = 1<<24 - 1

// After returns the first time of s after t (zero when there is none). A
// schedule that names its hours (not "*") runs at most once per time of
// day: when clocks go back in autumn, the repeated times of day do not run
// again (01:30 runs once on the day New York goes from 02:00 EDT back to
// 01:00 EST), while hourly schedules follow real hours and run in both.
func After(s cron.Schedule, t time.Time) time.Time {
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
