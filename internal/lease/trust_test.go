package lease

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestTrustEndsAtItsDeadline(t *testing.T) {
	t.Parallel()
	start := Now()
	tr := NewTrust(context.Background(), start+int64(50*time.Millisecond))
	child, cancel := context.WithCancel(tr)
	defer cancel()
	if tr.Err() != nil {
		t.Fatal("ended before its deadline")
	}
	if d, ok := tr.Deadline(); !ok || time.Until(d) > 50*time.Millisecond || time.Until(d) < 0 {
		t.Fatalf("deadline %v (in %s), want within 50ms", d, time.Until(d))
	}
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a derived context did not end when trust ended")
	}
	if got := time.Duration(Now() - start); got < 50*time.Millisecond {
		t.Fatalf("ended after %s, before its deadline", got)
	}
	if !errors.Is(context.Cause(tr), ErrTrustExpired) || !errors.Is(tr.Err(), context.Canceled) {
		t.Fatalf("cause %v, err %v", context.Cause(tr), tr.Err())
	}
}

// A process frozen past the deadline resumes before its timer fires: Err and
// Done must already tell that trust ended.
func TestTrustIsExactAfterAFreeze(t *testing.T) {
	t.Parallel()
	for _, check := range []struct {
		name  string
		ended func(*Trust) bool
	}{
		{"Err", func(tr *Trust) bool { return tr.Err() != nil }},
		{"Done", func(tr *Trust) bool {
			select {
			case <-tr.Done():
				return true
			default:
				return false
			}
		}},
	} {
		t.Run(check.name, func(t *testing.T) {
			tr := NewTrust(context.Background(), Now()+int64(time.Hour))
			defer tr.Cancel(nil)
			if check.ended(tr) {
				t.Fatal("ended early")
			}
			tr.until.Store(Now() - 1) // the clock passed the deadline; the timer has not fired
			if !check.ended(tr) {
				t.Fatal("trust past its deadline not seen as ended")
			}
			if !errors.Is(context.Cause(tr), ErrTrustExpired) {
				t.Fatalf("cause %v", context.Cause(tr))
			}
		})
	}
}

// Ended does not read the clock: a deadline passed unnoticed is not seen
// until Err (or Done, or the timer) notices it; a cancel is seen at once.
func TestTrustEndedWithoutTheClock(t *testing.T) {
	t.Parallel()
	tr := NewTrust(context.Background(), Now()+int64(time.Hour))
	defer tr.Cancel(nil)
	tr.until.Store(Now() - 1) // the clock passed the deadline; the timer has not fired
	if tr.Ended() {
		t.Fatal("Ended read the clock")
	}
	if tr.Err() == nil || !tr.Ended() {
		t.Fatal("Err did not end the trust past its deadline, or Ended does not see it")
	}
	other := NewTrust(context.Background(), Now()+int64(time.Hour))
	other.Cancel(errors.New("released"))
	if !other.Ended() {
		t.Fatal("a cancelled trust not seen as ended")
	}
}

// On a fake clock: trust ends exactly at its deadline, through the timer,
// and an extension moves the end.
func TestTrustTimerOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := NewTrust(context.Background(), Now()+int64(100*time.Millisecond))
		time.Sleep(60 * time.Millisecond)
		tr.Extend(Now() + int64(100*time.Millisecond)) // now ends at 160ms
		time.Sleep(99 * time.Millisecond)
		synctest.Wait()
		select {
		case <-tr.ctx.Done():
			t.Fatal("ended before its extended deadline")
		default:
		}
		time.Sleep(time.Millisecond)
		synctest.Wait() // the timer has fired: the inner context ended by itself
		if tr.ctx.Err() == nil || !errors.Is(context.Cause(tr), ErrTrustExpired) {
			t.Fatalf("not ended at its deadline: %v", context.Cause(tr))
		}
	})
}

// On a fake clock: an extension outlives the first deadline, and an ended
// trust is not extended.
func TestTrustExtend(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tr := NewTrust(context.Background(), Now()+int64(30*time.Millisecond))
		defer tr.Cancel(nil)
		if !tr.Extend(Now() + int64(time.Hour)) {
			t.Fatal("extend refused")
		}
		if tr.Extend(Now()) != true || tr.Remaining() < 59*time.Minute {
			t.Fatal("an earlier deadline moved trust back")
		}
		time.Sleep(60 * time.Millisecond) // past the first deadline: the timer re-arms
		synctest.Wait()
		if tr.Err() != nil {
			t.Fatal("extended trust ended at its first deadline")
		}
		tr.Cancel(errors.New("released"))
		if tr.Extend(Now()+int64(time.Hour)) || tr.Remaining() != 0 {
			t.Fatal("an ended trust was extended")
		}
		if context.Cause(tr).Error() != "released" {
			t.Fatalf("cause %v", context.Cause(tr))
		}
	})
}

func TestTrustFollowsItsParent(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancel(context.Background())
	tr := NewTrust(parent, Now()+int64(time.Hour))
	cancel()
	select {
	case <-tr.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("trust did not end with its parent")
	}
}

func TestMargin(t *testing.T) {
	for _, c := range []struct{ ttl, want time.Duration }{
		{10 * time.Second, 600 * time.Millisecond},
		{2 * time.Second, 220 * time.Millisecond},
		{time.Minute, 1100 * time.Millisecond},
	} {
		if got := Margin(c.ttl); got != c.want {
			t.Errorf("Margin(%s) = %s, want %s", c.ttl, got, c.want)
		}
	}
}
