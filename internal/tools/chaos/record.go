package chaos

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Recorder appends a worker's records to its file. Each record is one
// write(2) of one line: once Write returned, the line is in the kernel and
// survives a SIGKILL of the worker.
type Recorder struct {
	mu sync.Mutex
	f  *os.File
}

// NewRecorder opens (creating or appending to) the record file at path.
func NewRecorder(path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Recorder{f: f}, nil
}

// Record writes one line of fields separated by spaces.
func (r *Recorder) Record(fields ...any) error {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, f)
	}
	b.WriteByte('\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.f.WriteString(b.String())
	return err
}

// Close closes the file.
func (r *Recorder) Close() error { return r.f.Close() }

// Processed is an E record: an event handed to the processor.
type Processed struct {
	Partition int
	Token     int64
	Key       string
	Seq       int64
	Entry     string // its entry's ID
	Source    int    // which file the record came from
	Line      int    // its line number in that file
}

// Commit is a C record: a fenced commit applied as the N-th of its
// partition's commit log.
type Commit struct {
	Partition int
	Token     int64
	N         int64
	Key       string
	Seq       int64
}

// Log gathers the records of every worker.
type Log struct {
	Processed []Processed
	Commits   []Commit
	Refused   int            // R records: commits refused, the token was superseded
	Abandoned int            // R records: commits given up when the partition's work ended
	Stalls    int            // S records
	Tasks     map[string]int // T records: task ID -> successful runs
	NodeRuns  []NodeRun      // N records: flow node handler runs
	lines     []int          // lines read so far, per source
}

// NodeRun is an N record: a flow node's handler ran (attempt Attempt),
// saw its parents as Saw says and was to return a result of nonce Nonce.
type NodeRun struct {
	Flow, Node string
	Attempt    int
	Nonce      string
	Saw        map[string]SawParent // parent (or a child it added) -> what the handler saw of it
}

// SawParent is what a node's handler saw of a parent: its state and the
// nonce of its result ("?" when it was not a result of the runner's).
type SawParent struct {
	State, Nonce string
}

// FormatSaw formats what a handler saw of its parents for an N record.
func FormatSaw(saw map[string]SawParent) string {
	if len(saw) == 0 {
		return "-"
	}
	names := make([]string, 0, len(saw))
	for n := range saw {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "/" + saw[n].State + "/" + saw[n].Nonce
	}
	return strings.Join(parts, ",")
}

func parseSaw(s string) (map[string]SawParent, bool) {
	out := map[string]SawParent{}
	if s == "-" {
		return out, true
	}
	for _, part := range strings.Split(s, ",") {
		f := strings.Split(part, "/")
		if len(f) != 3 || f[0] == "" {
			return nil, false
		}
		out[f[0]] = SawParent{State: f[1], Nonce: f[2]}
	}
	return out, true
}

// NewLog returns an empty log.
func NewLog() *Log { return &Log{Tasks: map[string]int{}} }

// Tail reads the complete lines of source's records from offset on, adds
// them to l, and returns the offset after the last complete line, from
// which the next Tail of the same source goes on.
func (l *Log) Tail(source int, r io.ReaderAt, offset int64) (int64, error) {
	for len(l.lines) <= source {
		l.lines = append(l.lines, 0)
	}
	buf := make([]byte, 1<<20)
	for {
		n, err := r.ReadAt(buf, offset)
		chunk := buf[:n]
		end := bytes.LastIndexByte(chunk, '\n')
		if end >= 0 {
			for _, line := range strings.Split(string(chunk[:end]), "\n") {
				l.lines[source]++
				if perr := l.add(source, l.lines[source], line); perr != nil {
					return offset, perr
				}
			}
			offset += int64(end + 1)
		}
		if err == io.EOF || n < len(buf) {
			return offset, nil
		}
		if err != nil {
			return offset, err
		}
		if end < 0 {
			return offset, fmt.Errorf("source %d: a line longer than %d bytes at offset %d", source, len(buf), offset)
		}
	}
}

func (l *Log) add(source, lineNo int, line string) error {
	f := strings.Fields(line)
	bad := func() error { return fmt.Errorf("source %d line %d: bad record %q", source, lineNo, line) }
	if len(f) == 0 {
		return bad()
	}
	ints := func(idx ...int) ([]int64, bool) {
		out := make([]int64, len(idx))
		for i, j := range idx {
			if j >= len(f) {
				return nil, false
			}
			v, err := strconv.ParseInt(f[j], 10, 64)
			if err != nil {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	}
	switch f[0] {
	case "E": // E partition token key seq entry-id deliveries
		v, ok := ints(1, 2, 4)
		if !ok || len(f) != 7 {
			return bad()
		}
		l.Processed = append(l.Processed, Processed{Partition: int(v[0]), Token: v[1], Key: f[3], Seq: v[2], Entry: f[5], Source: source, Line: lineNo})
	case "C": // C partition token n key seq
		v, ok := ints(1, 2, 3, 5)
		if !ok || len(f) != 6 {
			return bad()
		}
		l.Commits = append(l.Commits, Commit{Partition: int(v[0]), Token: v[1], N: v[2], Key: f[4], Seq: v[3]})
	case "R": // R partition token key seq reason
		if len(f) != 6 {
			return bad()
		}
		if f[5] == "not-owner" {
			l.Refused++
		} else {
			l.Abandoned++
		}
	case "S":
		l.Stalls++
	case "N": // N flow node attempt nonce parents
		if len(f) != 6 {
			return bad()
		}
		v, ok := ints(3)
		saw, sok := parseSaw(f[5])
		if !ok || !sok {
			return bad()
		}
		l.NodeRuns = append(l.NodeRuns, NodeRun{Flow: f[1], Node: f[2], Attempt: int(v[0]), Nonce: f[4], Saw: saw})
	case "T": // T task-id n
		if len(f) != 3 {
			return bad()
		}
		l.Tasks[f[1]]++
	default:
		return bad()
	}
	return nil
}
