package schedule

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Expressions that would tick every second or never are refused, saying
// why; whole-second intervals and real dates are taken.
func TestParseRefuses(t *testing.T) {
	for spec, want := range map[string]string{
		"@every 0s":                       "at least 1s",
		"@every -1s":                      "at least 1s",
		"@every 500ms":                    "at least 1s",
		"@every 1500ms":                   "whole number of seconds",
		"TZ=UTC @every 0s":                "at least 1s",
		"CRON_TZ=Europe/Paris @every -5m": "at least 1s",
		"0 0 30 2 *":                      "matches no time",
		"0 0 31 4 *":                      "matches no time",
		"@every soon":                     "soon",
	} {
		if _, err := Parse(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", spec, err, want)
		}
	}
	for _, spec := range []string{"@every 1s", "@every 90s", "TZ=UTC @every 1h", "0 0 29 2 *", "*/5 * * * * *", "@daily"} {
		if _, err := Parse(spec); err != nil {
			t.Errorf("%q refused: %v", spec, err)
		}
	}
}

// 1 November 2026: New York goes from 02:00 EDT back to 01:00 EST. A time
// of day runs once (at 01:30 EDT), hourly times run in both hours.
func TestAfterRepeatedHour(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(h, m int) time.Time { return time.Date(2026, 11, 1, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		spec string
		want []time.Time
	}{
		{"CRON_TZ=America/New_York 30 1 * * *", []time.Time{utc(5, 30), time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)}},
		{"CRON_TZ=America/New_York 30 * * * *", []time.Time{utc(4, 30), utc(5, 30), utc(6, 30), utc(7, 30)}},
	} {
		s, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 11, 1, 0, 0, 0, 0, ny)
		for i, want := range tc.want {
			at = After(s, at)
			if !at.Equal(want) {
				t.Fatalf("%q: tick %d %s, want %s", tc.spec, i+1, at.UTC(), want)
			}
		}
	}
}
