package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"go.yaml.in/yaml/v3"
)

// Version is the version of the file format this package reads (the
// file's "version" field; optional).
const Version = 1

// A File is a leat.yaml: an app's streams and task queues, with every
// setting filled in (defaults where the file gives none), and how each
// queue's tasks are handled. Load and Parse make one; its values have been
// checked, so they declare the streams and queues as they are.
type File struct {
	// Path is the file's name as given to Load or Parse; relative
	// directories of handlers are relative to its directory.
	Path string
	// App is the app's name ("" when the file gives none: the CLI's --app
	// then names it).
	App string
	// Streams and Queues are in the file's order.
	Streams []Stream
	Queues  []Queue

	lines map[string]int // field path to its line
}

// A Stream is a stream's definition: what the registry records so that
// tools and workers without the app's code can send to it and read it.
type Stream struct {
	Name string
	// Partitions is the partition count (default 16, 1..65536).
	Partitions int
	// KeyField is the record field holding the partition key (required:
	// a stream declared in a file is routed by a field).
	KeyField string
	// Retention is the approximate maximum length of each partition (XADD
	// MAXLEN ~; default 50,000).
	Retention int64
	// Codec is "msgpack" (the default) or "json", optionally followed by
	// "+gzip" or "+zstd".
	Codec string
	// WhenFull is what a send does when retention would trim entries not
	// processed yet: stream.Trim (the default), stream.Refuse or
	// stream.Wait.
	WhenFull stream.Full
}

// A Queue is a task queue: its settings, as the task package's options
// give them (see task.Option), its cron schedules and its handler.
type Queue struct {
	Name        string
	Concurrency int           // tasks at once per worker (task.Concurrency)
	Timeout     time.Duration // of one attempt (task.Timeout)
	Retries     int           // before a task is dead (task.MaxRetries)
	BackoffMin  time.Duration // task.Backoff
	BackoffMax  time.Duration
	Visibility  time.Duration // task.Visibility
	Retention   time.Duration // of finished tasks (task.Retention)
	DeadMax     int           // task.KeepDead
	DeadAge     time.Duration
	Grace       time.Duration // for running tasks when a worker stops (task.Grace)
	Rate        Rate          // over the queue (task.Rate); zero: none
	KeyRate     Rate          // per key of a keyed queue (task.KeyRate); zero: none
	Keyed       bool          // task.Keyed
	// KeyConcurrency is how many tasks of a key run at once
	// (task.KeyConcurrency; 0 or 1: one); MaxKeyBacklog the most tasks a
	// key holds in line (task.MaxKeyBacklog; 0: no bound). Keyed queues.
	KeyConcurrency int
	MaxKeyBacklog  int
	// Levels are the priority levels, highest first (task.Priorities, or
	// task.Weighted when Weighted); one level "default" when the file
	// gives none. A task enqueued to "queue.level" goes to that level.
	Levels   []task.Level
	Weighted bool
	// UniqueTTL makes tasks unique by payload for that long (task.UniqueFor);
	// 0: not unique.
	UniqueTTL time.Duration
	// WebhookAttempts and WebhookBackoff retry webhook deliveries
	// (task.WebhookRetry).
	WebhookAttempts int
	WebhookBackoff  time.Duration
	// Events turns the queue's events on when its workers start, keeping
	// about that many (task.Events); 0: left as they are (off unless turned
	// on live).
	Events  int
	Cron    []Cron
	Handler Handler
}

// A Rate is a limit of Limit tasks started per Per.
type Rate struct {
	Limit int
	Per   time.Duration
}

// A Cron is a schedule that enqueues a task at every tick (task's
// Queue.Cron), run by the queue's leader among its workers.
type Cron struct {
	Name     string
	Schedule string          // a cron expression, or "@every 10s", "@hourly"...
	Payload  json.RawMessage // the tasks' payload, JSON
	Level    string          // priority level ("": the queue's default)
	Key      string          // the tasks' key (keyed queues)
	// Start, End and Times limit the schedule (task.Starting, task.Until,
	// task.Times): zero values are none.
	Start, End time.Time
	Times      int64
}

// HandlerKind says what runs a queue's tasks.
type HandlerKind string

// Handler kinds.
const (
	// NoHandler: the file declares the queue only (its tasks are handled
	// by a Go program, or by workers given a handler otherwise).
	NoHandler HandlerKind = ""
	// ExecHandler: supervised child processes speaking leat's JSON-lines
	// protocol, as "leat worker --exec" runs them.
	ExecHandler HandlerKind = "exec"
	// WasmHandler: a WebAssembly module of the app's registry (leat wasm
	// put), run in a sandbox as "leat worker --wasm" runs it.
	WasmHandler HandlerKind = "wasm"
)

// A Handler is what runs a queue's tasks; Kind says which of its fields
// is set.
type Handler struct {
	Kind HandlerKind
	Exec *Exec
	Wasm *Wasm
}

// A Wasm is a handler run as a WebAssembly module (package task/wasm).
// Written "wasm: NAME" when only the module is given.
type Wasm struct {
	// Module names the module in the app's registry (leat wasm put NAME);
	// workers run its current version.
	Module string
	// MemoryPages bounds an instance's memory, in pages of 64 KiB (0: the
	// default, 128 MiB).
	MemoryPages uint32
	// Dir is a directory the module may read and write, mounted at /,
	// relative to the file's directory ("": none).
	Dir string
	// ReadOnly lets the module only read Dir.
	ReadOnly bool
	// Env are NAME=VALUE entries, and bare NAMEs passed on from the
	// worker's environment (never leat's LEAT_ variables): all a module
	// sees of it.
	Env []string
	// Deterministic gives the module fixed clocks and random bytes.
	Deterministic bool
	// Pool keeps instances from a task to the next, for modules put as
	// reusable.
	Pool bool
}

// An Exec is a handler run as child processes (subprocess.Config).
type Exec struct {
	// Command is run by /bin/sh (as "leat worker --exec COMMAND").
	Command string
	// Dir is the processes' working directory, relative to the file's
	// directory ("": the file's directory).
	Dir string
	// Env are NAME=VALUE entries set in the processes' environment, and
	// bare NAMEs passed on from the worker's (subprocess.Config.Env: never
	// leat's own LEAT_ variables).
	Env []string
	// InheritEnv passes the worker's whole environment but its LEAT_
	// variables (subprocess.Config.InheritEnv).
	InheritEnv bool
	// StartTimeout bounds the wait for a process's ready line (0: the
	// default, 30s).
	StartTimeout time.Duration
	// MaxTasksPerProcess replaces a process once it answered that many
	// tasks (0: never; subprocess.Config.MaxTasksPerProcess).
	MaxTasksPerProcess int
}

// maxFile bounds the size of a file: a configuration, not data.
const maxFile = 1 << 20

// Load reads and checks the file at path: see Parse.
func Load(path string) (*File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxFile {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a configuration file may have", path, fi.Size(), maxFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse reads and checks a file's content; name names it in errors. It
// refuses unknown fields, values of the wrong kind (a string "8" or 8.5 for
// a count, a number for a duration, which are strings such as "30s") and
// values out of range, and returns every mistake at once as Errors, each
// with its line and field path.
func Parse(name string, data []byte) (*File, error) {
	d := &decoder{file: name}
	f := &File{Path: name, lines: map[string]int{}}
	if len(data) > maxFile {
		d.errorf(nil, "", "%d bytes, more than the %d a configuration file may have", len(data), maxFile)
		return nil, d.errs
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		d.errorf(nil, "", "empty file")
		return nil, d.errs
	} else if err != nil {
		d.errorf(nil, "", "not YAML: %v", err)
		return nil, d.errs
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.errorf(&extra, "", "more than one YAML document: a file holds one")
		return nil, d.errs
	}
	if len(doc.Content) != 1 {
		d.errorf(nil, "", "empty file")
		return nil, d.errs
	}
	d.top(f, doc.Content[0])
	if len(d.errs) > 0 {
		sortErrors(d.errs)
		return nil, d.errs
	}
	return f, nil
}

// Line returns the line of a field of the file ("queues.words.retries"),
// or 0 when the file does not give it.
func (f *File) Line(path string) int { return f.lines[path] }

// Queue returns the queue called name, or nil.
func (f *File) Queue(name string) *Queue {
	for i := range f.Queues {
		if f.Queues[i].Name == name {
			return &f.Queues[i]
		}
	}
	return nil
}

// Stream returns the stream called name, or nil.
func (f *File) Stream(name string) *Stream {
	for i := range f.Streams {
		if f.Streams[i].Name == name {
			return &f.Streams[i]
		}
	}
	return nil
}

// Dir returns the directory a queue's exec handler runs in: its Dir
// relative to the file's directory.
func (f *File) Dir(e *Exec) string { return f.resolve(e.Dir) }

// WasmDir returns the directory a WebAssembly handler may use, resolved
// against the file's directory ("" when it has none).
func (f *File) WasmDir(w *Wasm) string {
	if w.Dir == "" {
		return ""
	}
	return f.resolve(w.Dir)
}

func (f *File) resolve(dir string) string {
	if filepath.IsAbs(dir) {
		return dir
	}
	return filepath.Join(filepath.Dir(f.Path), dir)
}
