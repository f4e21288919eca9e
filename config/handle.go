package config

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// queueOf returns queue name of f, checking that f is for a's app.
func queueOf(a *app.App, f *File, name string) (*Queue, error) {
	if f.App != "" && f.App != a.Name() {
		return nil, fmt.Errorf("%s: the file is for app %q, not %q", f.Path, f.App, a.Name())
	}
	q := f.Queue(name)
	if q == nil {
		return nil, fmt.Errorf("%s: no task queue %q (queues: %s)", f.Path, name, queueNames(f))
	}
	return q, nil
}

func queueNames(f *File) string {
	if len(f.Queues) == 0 {
		return "none"
	}
	var b bytes.Buffer
	for i, q := range f.Queues {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q.Name)
	}
	return b.String()
}

// Handle declares queue name of the file on a with fn as its handler: it
// is task.Handle with the queue's options (Queue.Options), then opts,
// which override them (a Go handler's own ConcurrencyFunc, Use, ...). It
// registers the queue's cron schedules too, each payload decoded into P
// strictly (an unknown field is an error). The file's handler, if any, is
// not run: fn is the handler.
func Handle[P, R any](a *app.App, f *File, name string, fn func(ctx context.Context, t *task.Task[P]) (R, error), opts ...task.Option) (*task.Queue[P, R], error) {
	q, err := queueOf(a, f, name)
	if err != nil {
		return nil, err
	}
	tq, err := task.Handle(a, name, fn, append(q.Options(), opts...)...)
	if err != nil {
		return nil, err
	}
	for _, c := range q.Cron {
		var p P
		dec := json.NewDecoder(bytes.NewReader(c.Payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("%s: queue %q: cron schedule %q: payload: %w", f.Path, name, c.Name, err)
		}
		var eo []task.EnqueueOption
		if c.Level != "" {
			eo = append(eo, task.Priority(c.Level))
		}
		if c.Key != "" {
			eo = append(eo, task.Key(c.Key))
		}
		if !c.Start.IsZero() {
			eo = append(eo, task.Starting(c.Start))
		}
		if !c.End.IsZero() {
			eo = append(eo, task.Until(c.End))
		}
		if c.Times > 0 {
			eo = append(eo, task.Times(c.Times))
		}
		if err := tq.Cron(c.Name, c.Schedule, p, eo...); err != nil {
			return nil, fmt.Errorf("%s: queue %q: %w", f.Path, name, err)
		}
	}
	return tq, nil
}

// Declare declares queue name of the file on a for enqueueing (and its
// registration), without running it: task.Declare with the queue's
// options, then opts.
func Declare[P, R any](a *app.App, f *File, name string, opts ...task.Option) (*task.Queue[P, R], error) {
	q, err := queueOf(a, f, name)
	if err != nil {
		return nil, err
	}
	return task.Declare[P, R](a, name, append(q.Options(), opts...)...)
}

// DeclareStream declares stream name of the file on a with records of type
// T: stream.Declare with the stream's options (Stream.Options), then
// opts.
func DeclareStream[T any](a *app.App, f *File, name string, opts ...stream.Option) (*stream.Stream[T], error) {
	if f.App != "" && f.App != a.Name() {
		return nil, fmt.Errorf("%s: the file is for app %q, not %q", f.Path, f.App, a.Name())
	}
	s := f.Stream(name)
	if s == nil {
		return nil, fmt.Errorf("%s: no stream %q", f.Path, name)
	}
	return stream.Declare[T](a, name, append(s.Options(), opts...)...)
}
