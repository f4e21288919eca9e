package wasm

import (
	"bytes"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/leatdev/leat/task"
)

// lineWriter splits what a module writes into lines of at most max bytes
// (newline not counted): a longer line is reported once, with its first
// max bytes and tooLong set, at its newline.
type lineWriter struct {
	max    int
	buf    []byte
	over   bool
	onLine func(line []byte, tooLong bool)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := w.max - len(w.buf); len(chunk) > room {
			chunk, w.over = chunk[:max(room, 0)], true
		}
		w.buf = append(w.buf, chunk...)
		if i < 0 {
			break
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

// end reports the last line when it has no newline.
func (w *lineWriter) end() {
	if len(w.buf) > 0 || w.over {
		w.emit()
	}
}

func (w *lineWriter) emit() {
	line := bytes.TrimSuffix(w.buf, []byte("\r"))
	w.onLine(line, w.over)
	w.buf, w.over = w.buf[:0], false
}

// Bounds of what a task's output leaves in memory and in its error.
const (
	logEvery  = 100 * time.Millisecond // how often pending lines go to the task's log, at most
	errorTail = 5                      // the last stderr lines an error carries
	tailLine  = 256                    // each cut to this many bytes
)

// taskLog gathers the output lines of one task's attempt for its log
// (task.LogLines), like a subprocess handler's stderr: the last
// task.LogCap lines are kept, each cut to task.LogLineMax bytes; they are
// written at most every logEvery while the task runs, and at its end.
type taskLog struct {
	sink func(lines []string) // nil: no log (a local run)

	mu      sync.Mutex
	pending []string
	tail    []string // the last errorTail lines, for an error's message
	crash   string   // the first line that starts a Go runtime's crash report
	flushed time.Time
}

func newTaskLog(sink func([]string)) *taskLog {
	return &taskLog{sink: sink, flushed: time.Now()}
}

// add records a line; it writes the pending lines when logEvery passed
// since the last write.
func (l *taskLog) add(line string) {
	line = cut(line, task.LogLineMax)
	l.mu.Lock()
	l.pending = append(l.pending, line)
	if len(l.pending) >= 2*task.LogCap {
		l.pending = append(l.pending[:0], l.pending[len(l.pending)-task.LogCap:]...)
	}
	if len(l.tail) == errorTail {
		l.tail = append(l.tail[:0], l.tail[1:]...)
	}
	l.tail = append(l.tail, cut(line, tailLine))
	if l.crash == "" && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
		l.crash = cut(line, tailLine)
	}
	due := time.Since(l.flushed) >= logEvery
	l.mu.Unlock()
	if due {
		l.flush()
	}
}

// flush writes the pending lines to the task's log, in one call.
func (l *taskLog) flush() {
	l.mu.Lock()
	lines := l.pending[max(0, len(l.pending)-task.LogCap):]
	l.pending = nil
	l.flushed = time.Now()
	l.mu.Unlock()
	if len(lines) > 0 && l.sink != nil {
		l.sink(lines)
	}
}

// lastLines returns what an error's message says of the output: the line
// that starts a crash report (a Go module's "panic: ..." or "fatal error:
// ..."), else the last lines.
func (l *taskLog) lastLines() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crash != "" {
		return "; it wrote: " + l.crash
	}
	if len(l.tail) == 0 {
		return " (it wrote nothing to stderr)"
	}
	return "; its last output: " + strings.Join(l.tail, " | ")
}

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
