package task

import "time"

// OutcomeBuffer sets how many outcomes a worker holds for its completer.
func OutcomeBuffer(n int) Option {
	return optionFunc(func(s *settings) error { s.outcomes = n; return nil })
}

// RecordWait sets the first wait before a failed batch of outcomes is
// recorded again (the waits grow to ten times it).
func RecordWait(d time.Duration) Option {
	return optionFunc(func(s *settings) error { s.recordWait = d; return nil })
}
