package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/leatdev/leat/app"
)

// ErrUnknownLevel is matched by the error of LookupLevel for an address
// "queue.level" whose queue has no such priority level.
var ErrUnknownLevel = errors.New("task: unknown priority level")

// LookupLevel returns the queue an address names, as Lookup does, and the
// priority level it names: "queue" is the queue at its default level
// (level ""; see Priority), "queue.level" the queue at that level, so
// the levels of a queue read as sub-queues ("inference.premium"). A name
// that is a queue of the registry is that queue, dots and all; else the
// part after the last dot must be a level of the queue before it: an
// unknown one is an error matching ErrUnknownLevel that lists the queue's
// levels. No queue of either name is an error matching ErrUnknownQueue.
func LookupLevel(ctx context.Context, a *app.App, address string) (*Queue[json.RawMessage, json.RawMessage], string, error) {
	q, err := Lookup(ctx, a, address)
	if err == nil || !errors.Is(err, ErrUnknownQueue) {
		return q, "", err
	}
	i := strings.LastIndexByte(address, '.')
	if i < 0 {
		return nil, "", err
	}
	name, level := address[:i], address[i+1:]
	q, lerr := Lookup(ctx, a, name)
	if lerr != nil {
		if errors.Is(lerr, ErrUnknownQueue) {
			return nil, "", err // the address's own error
		}
		return nil, "", lerr
	}
	if _, ok := q.level(level); !ok || level == "" {
		return nil, "", fmt.Errorf("%w %q of task queue %q (levels: %s)", ErrUnknownLevel, level, name, strings.Join(q.Levels(), ", "))
	}
	return q, level, nil
}

// Levels returns the names of the queue's priority levels, highest first.
func (q *core) Levels() []string {
	names := make([]string, len(q.set.levels))
	for i, l := range q.set.levels {
		names[i] = l.Name
	}
	return names
}
