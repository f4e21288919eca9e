package redistest

import (
	"bytes"
	"sync"
)

// Log is a text log that a worker's logger (or a process's output) writes
// while the test reads it: a bytes.Buffer safe for concurrent use.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
