package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	_ "time/tzdata"

	"github.com/leatdev/leat/internal/clock"
	"github.com/leatdev/leat/internal/tools/redistest"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The next runs of cron expressions: five and six fields, descriptors, time
// zones, and the days clocks change.
func TestCronNextRuns(t *testing.T) {
	t.Parallel()
	utc := time.UTC
	paris, ny := mustZone(t, "Europe/Paris"), mustZone(t, "America/New_York")
	for _, tc := range []struct {
		name, spec string
		from       time.Time
		want       []time.Time // in any zone: compared as instants
	}{
		{"five fields", "TZ=UTC 30 8 * * MON-FRI", time.Date(2025, 6, 6, 9, 0, 0, 0, utc), []time.Time{
			time.Date(2025, 6, 9, 8, 30, 0, 0, utc), time.Date(2025, 6, 10, 8, 30, 0, 0, utc)}},
		{"six fields: seconds", "TZ=UTC */20 * * * * *", time.Date(2025, 6, 6, 9, 0, 7, 0, utc), []time.Time{
			time.Date(2025, 6, 6, 9, 0, 20, 0, utc), time.Date(2025, 6, 6, 9, 0, 40, 0, utc), time.Date(2025, 6, 6, 9, 1, 0, 0, utc)}},
		{"six fields: a second in a minute", "TZ=UTC 15 0 12 * * *", time.Date(2025, 6, 6, 12, 0, 15, 0, utc), []time.Time{
			time.Date(2025, 6, 7, 12, 0, 15, 0, utc)}},
		{"descriptor", "TZ=UTC @hourly", time.Date(2025, 6, 6, 9, 59, 59, 0, utc), []time.Time{
			time.Date(2025, 6, 6, 10, 0, 0, 0, utc), time.Date(2025, 6, 6, 11, 0, 0, 0, utc)}},
		{"descriptor in a zone", "CRON_TZ=Europe/Paris @daily", time.Date(2025, 6, 6, 12, 0, 0, 0, utc), []time.Time{
			time.Date(2025, 6, 6, 22, 0, 0, 0, utc)}},
		{"CRON_TZ, summer", "CRON_TZ=Europe/Paris 0 30 8 * * *", time.Date(2025, 7, 1, 0, 0, 0, 0, utc), []time.Time{
			time.Date(2025, 7, 1, 6, 30, 0, 0, utc)}},
		{"CRON_TZ, winter", "CRON_TZ=Europe/Paris 0 30 8 * * *", time.Date(2025, 1, 10, 0, 0, 0, 0, utc), []time.Time{
			time.Date(2025, 1, 10, 7, 30, 0, 0, utc)}},
		{"TZ, another zone", "TZ=Asia/Tokyo 0 9 * * *", time.Date(2025, 1, 10, 0, 0, 0, 0, utc), []time.Time{
			time.Date(2025, 1, 11, 0, 0, 0, 0, utc)}},
		// 30 March 2025: Paris goes from 02:00 CET to 03:00 CEST. Hourly
		// runs follow real hours: the one hour gone has no run.
		{"hourly over the spring change", "CRON_TZ=Europe/Paris 0 30 * * * *", time.Date(2025, 3, 30, 1, 0, 0, 0, paris), []time.Time{
			time.Date(2025, 3, 30, 1, 30, 0, 0, paris), time.Date(2025, 3, 30, 3, 30, 0, 0, paris), time.Date(2025, 3, 30, 4, 30, 0, 0, paris)}},
		// A time of day that does not exist that day does not run that day.
		{"a time skipped by the spring change", "CRON_TZ=Europe/Paris 30 2 * * *", time.Date(2025, 3, 29, 12, 0, 0, 0, paris), []time.Time{
			time.Date(2025, 3, 31, 2, 30, 0, 0, paris)}},
		// 2 November 2025: New York goes from 02:00 EDT back to 01:00 EST;
		// 01:30 happens twice, an hour apart, and runs the first time only.
		{"a time repeated by the autumn change", "CRON_TZ=America/New_York 30 1 * * *", time.Date(2025, 11, 1, 12, 0, 0, 0, ny), []time.Time{
			time.Date(2025, 11, 2, 5, 30, 0, 0, utc), time.Date(2025, 11, 3, 6, 30, 0, 0, utc)}},
		{"times repeated by the autumn change", "CRON_TZ=America/New_York 0 */30 1 * * *", time.Date(2025, 11, 2, 0, 0, 0, 0, ny), []time.Time{
			time.Date(2025, 11, 2, 5, 0, 0, 0, utc), time.Date(2025, 11, 2, 5, 30, 0, 0, utc), time.Date(2025, 11, 3, 6, 0, 0, 0, utc)}},
		// 1 November 2026, the same change a year later (the task queues'
		// cron schedules step through times with the same code).
		{"a time repeated by the autumn change of 2026", "CRON_TZ=America/New_York 30 1 * * *", time.Date(2026, 11, 1, 0, 0, 0, 0, ny), []time.Time{
			time.Date(2026, 11, 1, 5, 30, 0, 0, utc), time.Date(2026, 11, 2, 6, 30, 0, 0, utc)}},
		// Hourly runs follow real hours: both 01:30s run.
		{"hourly over the autumn change", "CRON_TZ=America/New_York 0 30 * * * *", time.Date(2025, 11, 2, 0, 45, 0, 0, ny), []time.Time{
			time.Date(2025, 11, 2, 5, 30, 0, 0, utc), time.Date(2025, 11, 2, 6, 30, 0, 0, utc), time.Date(2025, 11, 2, 7, 30, 0, 0, utc)}},
		{"daily over the autumn change", "CRON_TZ=Europe/Paris 0 12 * * *", time.Date(2025, 10, 25, 13, 0, 0, 0, paris), []time.Time{
			time.Date(2025, 10, 26, 11, 0, 0, 0, utc), time.Date(2025, 10, 27, 11, 0, 0, 0, utc)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCron(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			cad := cadence{cron: c}
			at := tc.from
			for i, want := range tc.want {
				at = cad.after(at)
				if !at.Equal(want) {
					t.Fatalf("run %d of %q after %s: %s, want %s", i+1, tc.spec, tc.from, at, want.In(at.Location()))
				}
			}
		})
	}
}

// Invalid cron expressions are refused at registration, saying why.
func TestCronRefused(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for spec, want := range map[string]string{
		"* * *":                          "expected 5 to 6 fields",
		"* * * * * * *":                  "expected 5 to 6 fields",
		"61 * * * *":                     "61",
		"CRON_TZ=Mars/Olympus 0 * * * *": "unknown time zone Mars/Olympus",
		"@fortnightly":                   "unrecognized descriptor",
		"0 0 30 2 *":                     "matches no time",
		"TZ=Europe/Paris 0 0 31 4 *":     "matches no time",
		"0 0 31 * * * *":                 "expected 5 to 6 fields",
		"@every 0s":                      "at least 1s",
		"@every -1s":                     "at least 1s",
	} {
		err := a.Background("t", func(context.Context) error { return nil }, Schedule{Cron: spec})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `background task "t": cron`) {
			t.Errorf("cron %q: %v, want an error with %q", spec, err, want)
		}
	}
	for i, spec := range []string{"*/5 * * * *", "*/5 * * * * *", "@every 90s", "CRON_TZ=Europe/Paris 0 8 * * *", "TZ=UTC @daily"} {
		if err := a.Background(fmt.Sprint("ok-", i), func(context.Context) error { return nil }, Schedule{Cron: spec}); err != nil {
			t.Errorf("cron %q refused: %v", spec, err)
		}
	}
}

// next keeps the grid of the last tick run and stands for the ticks missed.
func TestCadenceNext(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 6, 6, 9, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	every := cadence{every: 100 * ms}
	c, err := parseCron("TZ=UTC */10 * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	cron := cadence{cron: c}
	for _, tc := range []struct {
		name     string
		cad      cadence
		now      time.Time
		want     time.Time
		wantMiss int
	}{
		{"interval, to come", every, t0.Add(50 * ms), t0.Add(100 * ms), 0},
		{"interval, just due", every, t0.Add(100 * ms), t0.Add(100 * ms), 0},
		{"interval, two due", every, t0.Add(250 * ms), t0.Add(200 * ms), 1},
		{"interval, after a failover", every, t0.Add(1234 * ms), t0.Add(1200 * ms), 11},
		{"cron, to come", cron, t0.Add(3 * time.Second), t0.Add(10 * time.Second), 0},
		{"cron, three due", cron, t0.Add(35 * time.Second), t0.Add(30 * time.Second), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, miss := tc.cad.next(t0, tc.now)
			if !got.Equal(tc.want) || miss != tc.wantMiss {
				t.Fatalf("next(%s, %s) = %s, %d; want %s, %d", t0, tc.now, got, miss, tc.want, tc.wantMiss)
			}
		})
	}
}

// runLog is what a task's runs saw: when each started, its tick, and how
// many runs were going at once at most.
type runLog struct {
	mu      sync.Mutex
	starts  []time.Duration
	ticks   []time.Duration
	running int
	most    int
}

// A run that outlasts its interval delays the next one, which stands for
// the ticks due meanwhile; the overrun is logged once. With Overlap, runs
// start at their ticks whatever the previous one does.
func TestLoopOverrun(t *testing.T) {
	t.Parallel()
	for _, overlap := range []bool{false, true} {
		t.Run(map[bool]string{false: "no overlap", true: "overlap"}[overlap], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs redistest.Log
				a := &App{logger: slog.New(slog.NewTextHandler(&logs, nil)), clock: clock.Real{}}
				epoch := time.Now()
				var r runLog
				tk := &task{name: "slow", sched: Schedule{Every: 100 * time.Millisecond, Overlap: overlap},
					cad: cadence{every: 100 * time.Millisecond}}
				tk.fn = func(ctx context.Context) error {
					tick, _ := ScheduledTime(ctx)
					r.mu.Lock()
					r.starts = append(r.starts, time.Since(epoch))
					r.ticks = append(r.ticks, tick.Sub(epoch))
					first := len(r.starts) == 1
					r.running++
					r.most = max(r.most, r.running)
					r.mu.Unlock()
					d := 10 * time.Millisecond
					if first {
						d = 250 * time.Millisecond
					}
					time.Sleep(d)
					r.mu.Lock()
					r.running--
					r.mu.Unlock()
					return nil
				}
				ctx, cancel := context.WithTimeout(context.Background(), 450*time.Millisecond)
				defer cancel()
				var done []time.Duration
				tk.loop(ctx, a, time.Time{}, func(tick time.Time) {
					r.mu.Lock()
					done = append(done, tick.Sub(epoch))
					r.mu.Unlock()
				})
				ms := time.Millisecond
				var wantStarts, wantTicks []time.Duration
				wantMost := 1
				if overlap {
					wantStarts = []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms}
					wantTicks = wantStarts
					wantMost = 2 // the first run (250ms) and each short one
				} else {
					wantStarts = []time.Duration{0, 250 * ms, 300 * ms, 400 * ms}
					wantTicks = []time.Duration{0, 200 * ms, 300 * ms, 400 * ms}
				}
				if !equalDurations(r.starts, wantStarts) || !equalDurations(r.ticks, wantTicks) || r.most != wantMost {
					t.Fatalf("starts %v ticks %v at most %d at once; want %v %v %d", r.starts, r.ticks, r.most, wantStarts, wantTicks, wantMost)
				}
				if len(done) != len(wantTicks) {
					t.Fatalf("completed runs %v, want %v", done, wantTicks)
				}
				n := strings.Count(logs.String(), "background task overran its schedule")
				if overlap && n != 0 || !overlap && (n != 1 || !strings.Contains(logs.String(), "task=slow duration=250ms")) {
					t.Fatalf("logs:\n%s", logs.String())
				}
			})
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
