package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// An Action is what applying a file does to one definition of the registry.
type Action string

// Actions of a plan.
const (
	Added     Action = "added"
	Changed   Action = "changed"
	Unchanged Action = "unchanged"
)

// A Change is what applying a file does to one stream or queue.
type Change struct {
	Kind   string // "stream" or "queue"
	Name   string
	Action Action
	// Fields are the settings that change (Changed), or every setting of
	// the definition added (Added), as the file writes them.
	Fields []FieldChange
}

// A FieldChange is one setting of a Change: Old is "" for a definition
// added.
type FieldChange struct {
	Field, Old, New string
}

// A Plan is what applying a file to an app's registry would do: made by
// NewPlan, written by Apply. Changes that would break the stream's readers
// or the queue's waiting tasks are Refused, with the reason, and a plan
// with any is not applied.
type Plan struct {
	File    *File
	Changes []Change
	Refused Errors

	a       *app.App
	ks      rdb.KeySpace
	streams []rdb.RegistryWrite
	queues  []rdb.RegistryWrite
}

// NewPlan compares the file's streams and queues with the definitions the
// registry of a holds, read at one instant. Definitions of the registry
// that the file does not name are left as they are.
func NewPlan(ctx context.Context, a *app.App, f *File) (*Plan, error) {
	if f.App != "" && f.App != a.Name() {
		return nil, fmt.Errorf("%s: the file is for app %q, not %q", f.Path, f.App, a.Name())
	}
	cfg := a.Config()
	p := &Plan{File: f, a: a, ks: rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name)}
	curStreams, curQueues, err := rdb.ReadRegistries(ctx, a.Client(), p.ks.Registry(), p.ks.TaskQueues())
	if err != nil {
		return nil, fmt.Errorf("read the registry: %w", err)
	}
	for i := range f.Streams {
		p.planStream(&f.Streams[i], curStreams[f.Streams[i].Name])
	}
	for i := range f.Queues {
		p.planQueue(&f.Queues[i], curQueues[f.Queues[i].Name])
	}
	sortErrors(p.Refused)
	return p, nil
}

// refuse records a refused change of field path of the file.
func (p *Plan) refuse(path, format string, args ...any) {
	line := p.File.Line(path)
	if i := strings.LastIndexByte(path, '.'); line == 0 && i > 0 {
		line = p.File.Line(path[:i]) // a default: the stream's or queue's line
	}
	p.Refused = append(p.Refused, &FieldError{File: p.File.Path, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// diff returns the changes between two definitions' fields; every field of
// want when old is nil.
func diff(old, want []field) []FieldChange {
	var out []FieldChange
	for i, w := range want {
		switch {
		case old == nil:
			out = append(out, FieldChange{Field: w.path, New: w.value})
		case old[i].value != w.value:
			out = append(out, FieldChange{Field: w.path, Old: old[i].value, New: w.value})
		}
	}
	return out
}

func (p *Plan) planStream(s *Stream, cur string) {
	path := "streams." + s.Name
	want := s.Definition()
	if cur == "" {
		want.EntryCodec = want.Codec
		b, _ := json.Marshal(want)
		p.streams = append(p.streams, rdb.RegistryWrite{Name: s.Name, New: string(b)})
		p.Changes = append(p.Changes, Change{Kind: "stream", Name: s.Name, Action: Added, Fields: diff(nil, streamFields(want))})
		return
	}
	var old stream.Definition
	if err := json.Unmarshal([]byte(cur), &old); err != nil || old.Name != s.Name {
		p.refuse(path, "the registry's entry of the stream is not a definition leat wrote (%.60q): fix or delete it first", cur)
		return
	}
	const why = "its entries are in Redis already, and "
	switch {
	case old.Partitions != want.Partitions:
		p.refuse(path+".partitions", "the registry has %d partitions, the file %d: refused: %s"+
			"a key's new records would go to another partition than its old ones, breaking per-key order and the processors' positions "+
			"(declare a stream with a new name)", old.Partitions, want.Partitions, why)
	case old.KeyField != want.KeyField:
		was := fmt.Sprintf("key field %q", old.KeyField)
		if old.KeyField == "" {
			was = "a key computed by its Go program"
		}
		p.refuse(path+".key", "the registry routes by %s, the file by key field %q: refused: %s"+
			"records of one key would land in other partitions, breaking per-key order (declare a stream with a new name)", was, want.KeyField, why)
	case old.Codec != want.Codec:
		p.refuse(path+".codec", "the registry has codec %q, the file %q: refused: readers and senders declared with %q "+
			"(programs, the CLI, other languages) would no longer read or write the stream as its entries are "+
			"(declare a stream with a new name)", old.Codec, want.Codec, old.Codec)
	}
	changes := diff(streamFields(old), streamFields(want))
	if len(changes) == 0 {
		p.Changes = append(p.Changes, Change{Kind: "stream", Name: s.Name, Action: Unchanged})
		return
	}
	want.EntryCodec = old.EntryCodec
	b, _ := json.Marshal(want)
	p.streams = append(p.streams, rdb.RegistryWrite{Name: s.Name, Old: cur, New: string(b)})
	p.Changes = append(p.Changes, Change{Kind: "stream", Name: s.Name, Action: Changed, Fields: changes})
}

func (p *Plan) planQueue(q *Queue, cur string) {
	path := "queues." + q.Name
	want := q.Definition()
	b, _ := json.Marshal(want)
	if cur == "" {
		p.queues = append(p.queues, rdb.RegistryWrite{Name: q.Name, New: string(b)})
		p.Changes = append(p.Changes, Change{Kind: "queue", Name: q.Name, Action: Added, Fields: diff(nil, queueFields(want))})
		return
	}
	var old task.Definition
	if err := json.Unmarshal([]byte(cur), &old); err != nil || old.Name != q.Name {
		p.refuse(path, "the registry's entry of the queue is not a definition leat wrote (%.60q): fix or delete it first", cur)
		return
	}
	if old.Keyed != want.Keyed {
		p.refuse(path+".keyed", "the registry's queue is keyed: %t, the file's %t: refused: the tasks waiting in the queue "+
			"were enqueued for the other kind and would be stranded (declare a queue with a new name)", old.Keyed, want.Keyed)
	}
	for i, l := range old.Levels {
		if i >= len(want.Levels) || want.Levels[i].Name != l.Name {
			p.refuse(path+".levels", "the registry's levels are %s, the file's %s: refused: a level may be added after the "+
				"others or have its weight changed, but not removed, renamed or moved: tasks waiting at a level would run at another",
				formatLevels(old.Levels, true), formatLevels(want.Levels, true))
			break
		}
	}
	changes := diff(queueFields(old), queueFields(want))
	if len(changes) == 0 {
		p.Changes = append(p.Changes, Change{Kind: "queue", Name: q.Name, Action: Unchanged})
		return
	}
	p.queues = append(p.queues, rdb.RegistryWrite{Name: q.Name, Old: cur, New: string(b)})
	p.Changes = append(p.Changes, Change{Kind: "queue", Name: q.Name, Action: Changed, Fields: changes})
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.streams)+len(p.queues) == 0 }

// ErrRefused is matched by the error of Apply on a plan with refused
// changes: nothing was written.
var ErrRefused = errors.New("config: changes refused")

// ErrChanged is matched by the error of Apply when the registry changed
// since NewPlan read it: nothing was written; plan again.
var ErrChanged = errors.New("config: the registry changed since the plan was made")

// Apply writes the plan's definitions to the registry at once (one
// script): all of them, or none when a change is refused or an entry
// changed since NewPlan read it.
func (p *Plan) Apply(ctx context.Context) error {
	if len(p.Refused) > 0 {
		return fmt.Errorf("%w: %w", ErrRefused, p.Refused)
	}
	if p.Empty() {
		return nil
	}
	err := rdb.WriteRegistries(ctx, p.a.Client(), p.ks.Registry(), p.ks.TaskQueues(), p.streams, p.queues)
	if errors.Is(err, rdb.ErrRegistryChanged) {
		return fmt.Errorf("%w (%w): nothing was written", ErrChanged, err)
	}
	return err
}

// String writes the plan as "leat apply" prints it: a line per stream and
// queue, and one per setting added or changed.
func (p *Plan) String() string {
	var b strings.Builder
	counts := map[Action]int{}
	for _, c := range p.Changes {
		counts[c.Action]++
		fmt.Fprintf(&b, "%s %s: %s\n", c.Kind, c.Name, c.Action)
		for _, f := range c.Fields {
			if c.Action == Added {
				fmt.Fprintf(&b, "  %s: %s\n", f.Field, f.New)
			} else {
				fmt.Fprintf(&b, "  %s: %s -> %s\n", f.Field, f.Old, f.New)
			}
		}
	}
	fmt.Fprintf(&b, "%d added, %d changed, %d unchanged\n", counts[Added], counts[Changed], counts[Unchanged])
	return b.String()
}
