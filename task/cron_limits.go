package task

import (
	"errors"
	"fmt"
	"time"
)

// A ScheduleOption limits a cron schedule (Queue.Cron): when its ticks
// start and end, and how many it enqueues in all. It is given among the
// schedule's options; Enqueue refuses it.
type ScheduleOption struct {
	apply func(*scheduleLimits) error
}

func (o ScheduleOption) applyEnqueue(*enqueueSettings) error {
	return errors.New("Starting, Until and Times are options of Cron, not of an enqueue")
}

// scheduleLimits are a schedule's limits; zero values are none.
type scheduleLimits struct {
	start, end time.Time
	times      int64
}

// maxScheduleTimes bounds Times.
const maxScheduleTimes = 1 << 40

// Starting makes the schedule's first tick the first at or after t.
func Starting(t time.Time) ScheduleOption {
	return ScheduleOption{func(l *scheduleLimits) error {
		if t.IsZero() {
			return errors.New("Starting: a zero time")
		}
		l.start = t
		return nil
	}}
}

// Until makes the schedule's last tick the last at or before t: the
// schedule then ends.
func Until(t time.Time) ScheduleOption {
	return ScheduleOption{func(l *scheduleLimits) error {
		if t.IsZero() {
			return errors.New("Until: a zero time")
		}
		l.end = t
		return nil
	}}
}

// Times makes the schedule end after n ticks in all, counted in Redis
// across leaders and restarts (a tick enqueued is counted once).
func Times(n int64) ScheduleOption {
	return ScheduleOption{func(l *scheduleLimits) error {
		if n < 1 || n > maxScheduleTimes {
			return fmt.Errorf("Times(%d): want 1 to %d", n, int64(maxScheduleTimes))
		}
		l.times = n
		return nil
	}}
}

// splitScheduleOptions separates a schedule's limits from the options of
// its ticks' enqueues.
func splitScheduleOptions(opts []EnqueueOption) (scheduleLimits, []EnqueueOption, error) {
	var l scheduleLimits
	rest := make([]EnqueueOption, 0, len(opts))
	for _, o := range opts {
		so, ok := o.(ScheduleOption)
		if !ok {
			rest = append(rest, o)
			continue
		}
		if err := so.apply(&l); err != nil {
			return l, nil, err
		}
	}
	if !l.start.IsZero() && !l.end.IsZero() && l.end.Before(l.start) {
		return l, nil, fmt.Errorf("Until %s is before Starting %s", l.end.Format(time.RFC3339), l.start.Format(time.RFC3339))
	}
	return l, rest, nil
}

// first returns the first tick of a schedule with limits l at or after
// now's next tick.
func (c *cronEntry) first(after time.Time) time.Time {
	if !c.limits.start.IsZero() && after.Before(c.limits.start) {
		after = c.limits.start.Add(-time.Millisecond)
	}
	return c.after(after)
}

// ended reports whether the schedule enqueues no tick at next (or later):
// past its end, or as many as Times enqueued.
func (c *cronEntry) ended(next time.Time) bool {
	return (!c.limits.end.IsZero() && next.After(c.limits.end)) || (c.limits.times > 0 && c.count >= c.limits.times)
}
