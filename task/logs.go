package task

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/leatdev/leat/internal/rdb"
)

// Bounds of a task's log: at most LogCap lines of at most LogLineMax bytes
// each (a longer line is cut), so about LogCap*LogLineMax bytes per task
// at most; the oldest lines go first.
const (
	LogCap     = 1000
	LogLineMax = 1024
)

// A LogLine is a line of a task's log.
type LogLine struct {
	Time    time.Time `json:"time"`
	Attempt int       `json:"attempt"`
	Line    string    `json:"line"`
}

// logger records a running task's log lines.
type logger interface {
	logLines(ctx context.Context, lines []string) error
}

// Log appends a line to the task's log (see Queue.Logs and "leat tasks
// logs ID"), kept with the task for its timeout plus its retention, within
// LogCap lines of LogLineMax bytes. A subprocess handler's stderr lines go
// there too. Without Redis (a local run) it does nothing.
func (t *Task[P]) Log(line string) {
	l, ok := t.rep.(logger)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	_ = l.logLines(ctx, []string{line})
}

// logLines appends lines to the task's log in one Redis call (see Log).
func (t *Task[P]) logLines(lines []string) {
	l, ok := t.rep.(logger)
	if !ok || len(lines) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	_ = l.logLines(ctx, lines)
}

func (r *redisReporter) logLines(ctx context.Context, lines []string) error {
	q := r.q
	lines = lines[max(0, len(lines)-LogCap):]
	out := make([]string, 0, len(lines))
	for _, line := range lines {
		line = strings.TrimRight(line, "\r\n")
		if len(line) > LogLineMax {
			cut := LogLineMax
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			line = line[:cut]
		}
		out = append(out, line)
	}
	err := rdb.AppendLog(ctx, q.rdb, q.ks.TaskPrefix(q.name)+r.id, q.ks.TaskLogsPrefix(q.name)+r.id, LogCap, r.ttl, r.attempt, out)
	if err != nil {
		return fmt.Errorf("task %s: record log lines: %w", r.id, err)
	}
	return nil
}

// Logs returns the log lines of task id in order (Task.Log, and the stderr
// lines of subprocess handlers), or ErrNotFound for a task the queue does
// not know.
func (q *core) Logs(ctx context.Context, id string) ([]LogLine, error) {
	msgs, err := rdb.ReadLog(ctx, q.rdb, q.ks.TaskLogsPrefix(q.name)+id)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		if _, err := q.Info(ctx, id); err != nil {
			return nil, err
		}
	}
	out := make([]LogLine, 0, len(msgs))
	for _, m := range msgs {
		ms, _, _ := strings.Cut(m.ID, "-")
		n, _ := strconv.ParseInt(ms, 10, 64)
		a, _ := m.Values["a"].(string)
		at, _ := strconv.Atoi(a)
		line, _ := m.Values["m"].(string)
		out = append(out, LogLine{Time: time.UnixMilli(n), Attempt: at, Line: line})
	}
	return out, nil
}
