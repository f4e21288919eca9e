package executor

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	// Zero is a valid grace period: only DefaultOptions has one. Prefetch
	// zero is PrefetchFor the stream's partitions (New).
	want := Options{LockExpiry: 10 * time.Second, ReadBlock: 2 * time.Second,
		Start: Earliest, OnError: Halt, Retry: Retry{Backoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second},
		Transient: TransientRetry{For: 30 * time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}}
	if o != want {
		t.Fatalf("defaults %+v, want %+v", o, want)
	}
	want.Grace = DefaultGrace
	if d := DefaultOptions(); d != want {
		t.Fatalf("DefaultOptions %+v, want %+v", d, want)
	}
	// Per-processor options win over app defaults, field by field.
	m := Options{Prefetch: 7}.Merge(Options{Prefetch: 50, Grace: time.Second, OnError: Ignore})
	if m.Prefetch != 7 || m.Grace != time.Second || m.OnError != Ignore {
		t.Fatalf("merge %+v", m)
	}
	// Transient retries turned off app-wide stay off.
	if m := (Options{}).Merge(Options{Transient: TransientRetry{Off: true}}); !m.Transient.Off {
		t.Fatalf("merge %+v", m)
	}
}

func TestOptionsValidation(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{LockExpiry: time.Millisecond}, "lock expiry"},
		{Options{Prefetch: -1}, "prefetch"},
		{Options{ReadBlock: time.Microsecond}, "read block"},
		{Options{Grace: -time.Second}, "grace"},
		{Options{JoinDelay: -time.Second}, "join delay"},
		{Options{Start: 9}, "start position"},
		{Options{OnError: 9}, "failure policy"},
		{Options{Retry: Retry{Attempts: -1}}, "retries -1: want 0 or more"},
		{Options{Retry: Retry{Backoff: time.Second, MaxBackoff: time.Millisecond}}, "backoff 1s up to 1ms"},
		{Options{Transient: TransientRetry{For: -time.Second}}, "transient retries for -1s"},
		{Options{Transient: TransientRetry{Backoff: 10 * time.Second}}, "transient retry backoff 10s up to 5s"},
	}
	for _, tc := range cases {
		_, err := tc.o.WithDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to mention %q", tc.o, err, tc.want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, p := range []Policy{Halt, Quarantine, Ignore, DeadLetter} {
		got, err := ParsePolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePolicy(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParsePolicy("retry"); err == nil {
		t.Error("ParsePolicy accepted an unknown policy")
	}
}
