package task

import (
	"context"
	"testing"
	"time"
)

// A worker waiting for a Resume or the end of a rate window polls far
// slower in tests than it does for real, so that a test whose worker
// resumes in time shows that the message woke it.
func init() { pausePoll = 30 * time.Second }

// A wake-up that comes while a fetch call is under way (the queue resumed,
// or its live rate lifted, before the call's refusal came back) ends the
// wait after the refusal at once: the fetcher takes its wake channel before
// the call, not after the refusal, when the wake-up has already replaced it.
func TestWakeDuringCallIsNotMissed(t *testing.T) {
	w := &worker{resumed: make(chan struct{}), poll: time.Hour}
	woken := w.wakeChan() // as fetchLoop does before its call
	w.wake()              // the Resume message, while the call is under way
	for _, await := range []func(){
		func() { w.awaitWake(context.Background(), time.Hour, woken) },
		func() { w.awaitWake(context.Background(), w.poll, woken) },
	} {
		if !returnsWithin(10*time.Second, await) {
			t.Fatal("a wake-up during the call was missed: the wait ran on")
		}
	}
	// a wait on the channel of after the wake-up waits for the next one
	next := w.wakeChan()
	select {
	case <-next:
		t.Fatal("the next wake-up's channel is closed already")
	default:
	}
	w.wake()
	<-next
}

// A fetcher that missed the message of a Resume or of a live rate change
// (Pub/Sub delivers at most once) fetches again within its poll: a rate
// window of an hour is not waited out after the limit was lifted.
func TestMissedWakeWithinPoll(t *testing.T) {
	w := &worker{resumed: make(chan struct{}), poll: 50 * time.Millisecond}
	woken := w.wakeChan() // never woken: the message was lost
	for name, await := range map[string]func(){
		"a rate window of an hour": func() { w.awaitWake(context.Background(), time.Hour, woken) },
		"a pause":                  func() { w.awaitWake(context.Background(), w.poll, woken) },
	} {
		if !returnsWithin(10*time.Second, await) {
			t.Fatalf("waiting out %s: no fetch again within the poll", name)
		}
	}
}

// returnsWithin reports whether fn returns within d.
func returnsWithin(d time.Duration, fn func()) bool {
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
