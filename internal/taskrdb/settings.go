// Live settings: the fields of a queue's config hash that pause it and set
// its rate and concurrency while workers run, and the message that wakes
// the workers when they change.

package taskrdb

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ResumeMessage is what the queue's cancel channel (keys.Space.TaskCancel)
// carries when the queue is resumed, or its live rate changed: the workers
// that wait for either fetch again at once. No task ID starts with '~'.
const ResumeMessage = "~resume"

// Fields of the queue's live settings (keys.Space.TaskConfig): PausedField,
// whose presence pauses the queue (value: Unix ms of the pause; fetch.lua
// checks it); RateField, the rate limit set live, which fetch.lua applies
// in place of its worker's (LiveRate's text); ConcurrencyField, the
// concurrency per worker set live (ParseLiveConcurrency).
const (
	PausedField      = "paused"
	RateField        = "rate"
	ConcurrencyField = "concurrency"
)

// ParseLiveConcurrency reads ConcurrencyField's text: a whole number of at
// least 1, else none (false).
func ParseLiveConcurrency(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

// LiveRate is the text of RateField for r ("N WINDOW_MS"; "0 0": no limit).
func LiveRate(r Rate) string {
	return strconv.Itoa(r.N) + " " + strconv.FormatInt(r.Window.Milliseconds(), 10)
}

// ParseLiveRate reads RateField's text.
func ParseLiveRate(s string) (Rate, error) {
	n, ms, ok := strings.Cut(s, " ")
	a, err1 := strconv.Atoi(n)
	b, err2 := strconv.ParseInt(ms, 10, 64)
	if !ok || err1 != nil || err2 != nil || a < 0 || b < 0 {
		return Rate{}, fmt.Errorf("live rate %q: want \"N WINDOW_MS\"", s)
	}
	return Rate{N: a, Window: time.Duration(b) * time.Millisecond}, nil
}
