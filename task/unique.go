package task

import (
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// Options that make a task unique by a key: refused while the key's task
// has not ended (Unique, UniqueKey), replaced while it waits (Debounce), or
// one per window (Throttle).

// Unique refuses the task, returning ErrDuplicate and the existing task's
// ID, while a task of the queue with the same payload was enqueued less
// than ttl ago and has not finished.
func Unique(ttl time.Duration) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if ttl <= 0 {
			return fmt.Errorf("unique TTL %s must be positive", ttl)
		}
		s.unique, s.uniqueTTL, s.uniqueMode, s.debounce = true, ttl, "", 0
		return nil
	})
}

// UniqueKey is Unique with a key of the caller's choice instead of the
// payload.
func UniqueKey(key string, ttl time.Duration) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if key == "" || ttl <= 0 {
			return fmt.Errorf("unique key %q, TTL %s: need a key and a positive TTL", key, ttl)
		}
		s.unique, s.uniqueKey, s.uniqueTTL, s.uniqueMode, s.debounce = true, key, ttl, "", 0
		return nil
	})
}

// Debounce enqueues the task after d, unique by key: while the key's task
// is still waiting for its time, a Debounce of the same key replaces that
// task's payload and headers and moves it to d from now instead of adding a
// task, and returns its ID with no error; once that task is ready, running
// or ended, a new one is enqueued. Only the last of a burst runs, d after
// the burst. It writes the waiting task, which a producer's Redis ACL does
// not allow (docs/configuration.md): debounce from a worker's or an
// operator's user.
func Debounce(key string, d time.Duration) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if key == "" || d <= 0 {
			return fmt.Errorf("debounce key %q, delay %s: need a key and a positive delay", key, d)
		}
		s.unique, s.uniqueKey, s.uniqueTTL, s.uniqueMode = true, key, d+time.Hour, rdb.UniqueDebounce
		s.debounce = d
		return nil
	})
}

// Throttle enqueues the task unless a task of the same key was enqueued
// less than window ago, whether that task has ended or not: at most one
// task per key and window (ErrDuplicate and the first task's ID
// otherwise).
func Throttle(key string, window time.Duration) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if key == "" || window <= 0 {
			return fmt.Errorf("throttle key %q, window %s: need a key and a positive window", key, window)
		}
		s.unique, s.uniqueKey, s.uniqueTTL, s.uniqueMode = true, key, window, rdb.UniqueThrottle
		return nil
	})
}
