package clock

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFakeWakesSleepersInOrder(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	woke := make(chan time.Duration, 3)
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		go func() {
			if f.SleepUntil(context.Background(), start.Add(d)) {
				woke <- d
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !f.WaitSleepers(ctx, 3) {
		t.Fatal("sleepers not waiting")
	}
	f.Advance(1500 * time.Millisecond)
	if d := <-woke; d != time.Second {
		t.Fatalf("woke %s first", d)
	}
	if f.Sleepers() != 2 {
		t.Fatalf("%d sleepers, want 2", f.Sleepers())
	}
	f.Advance(2 * time.Second)
	got := map[time.Duration]bool{<-woke: true, <-woke: true}
	if !got[2*time.Second] || !got[3*time.Second] || !f.Now().Equal(start.Add(3500*time.Millisecond)) {
		t.Fatalf("woke %v at %v", got, f.Now())
	}
	if !f.SleepUntil(context.Background(), start) {
		t.Fatal("a time in the past does not wait")
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if f.SleepUntil(cctx, start.Add(time.Hour)) || f.Sleepers() != 0 {
		t.Fatal("a cancelled sleep returned true or stayed registered")
	}
}
