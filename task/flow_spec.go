package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/leatdev/leat/app"
)

// FlowSpec is a flow written as data: what `leat flows submit` reads from a
// YAML or JSON file and the HTTP API from a request body. BuildFlow makes
// the Flow it describes.
type FlowSpec struct {
	// ID, when set, makes a submission idempotent (FlowID).
	ID string `json:"id,omitempty"`
	// Retention is a Go duration ("24h"; FlowRetention).
	Retention string `json:"retention,omitempty"`
	// Nodes by name.
	Nodes map[string]FlowNodeSpec `json:"nodes"`
}

// FlowNodeSpec is a node of a FlowSpec: a task of a queue recorded in the
// app's registry.
type FlowNodeSpec struct {
	Queue     string          `json:"queue"`
	Payload   json.RawMessage `json:"payload,omitempty"` // absent: null
	Parents   []string        `json:"parents,omitempty"`
	OnFailure FailurePolicy   `json:"on_failure,omitempty"`
	Options   FlowNodeOptions `json:"options,omitzero"`
}

// FlowNodeOptions are a node's enqueue options.
type FlowNodeOptions struct {
	MaxRetries *int              `json:"max_retries,omitempty"`
	Timeout    string            `json:"timeout,omitempty"`   // a Go duration
	Retention  string            `json:"retention,omitempty"` // a Go duration
	Priority   string            `json:"priority,omitempty"`
	Key        *string           `json:"key,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
}

// BuildFlow makes the flow spec describes on app a, its queues looked up in
// the registry (Lookup), its nodes added in order (the spec's node names
// sorted when order is nil). Every mistake of the spec is returned at once
// in an error matching ErrInvalidFlow; other errors are Redis's. Submit
// checks the graph (cycles, the payloads against the queues) and writes it.
func BuildFlow(ctx context.Context, a *app.App, spec FlowSpec, order []string) (*Flow, error) {
	if order == nil {
		for name := range spec.Nodes {
			order = append(order, name)
		}
		slices.Sort(order)
	}
	var opts []FlowOption
	var errs []error
	if spec.ID != "" {
		opts = append(opts, FlowID(spec.ID))
	}
	if spec.Retention != "" {
		d, err := time.ParseDuration(spec.Retention)
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: %w", err))
		} else {
			opts = append(opts, FlowRetention(d))
		}
	}
	if len(spec.Nodes) == 0 {
		errs = append(errs, errors.New("no nodes"))
	}
	flow := NewFlow(a, opts...)
	queues := map[string]*Queue[json.RawMessage, json.RawMessage]{}
	nodes := map[string]*Node{}
	for _, name := range order {
		n := spec.Nodes[name]
		if n.Queue == "" {
			errs = append(errs, fmt.Errorf("node %q: no queue", name))
			continue
		}
		q, ok := queues[n.Queue]
		if !ok {
			var err error
			q, err = Lookup(ctx, a, n.Queue)
			if errors.Is(err, ErrUnknownQueue) {
				errs = append(errs, fmt.Errorf("node %q: %w", name, err))
				continue
			}
			if err != nil {
				return nil, err
			}
			queues[n.Queue] = q
		}
		payload := n.Payload
		if payload == nil {
			payload = json.RawMessage("null")
		}
		eopts, err := n.Options.enqueueOptions()
		if err != nil {
			errs = append(errs, fmt.Errorf("node %q: %w", name, err))
			continue
		}
		node := AddNode(flow, name, q, payload, eopts...)
		if n.OnFailure != "" {
			node.OnFailure(n.OnFailure)
		}
		nodes[name] = node
	}
	for _, name := range order {
		node := nodes[name]
		if node == nil {
			continue
		}
		for _, p := range spec.Nodes[name].Parents {
			parent := nodes[p]
			if parent == nil {
				if _, ok := spec.Nodes[p]; !ok {
					errs = append(errs, fmt.Errorf("node %q: unknown parent %q", name, p))
				}
				continue
			}
			node.After(parent)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFlow, errors.Join(errs...))
	}
	return flow, nil
}

func (o FlowNodeOptions) enqueueOptions() ([]EnqueueOption, error) {
	var opts []EnqueueOption
	if o.MaxRetries != nil {
		opts = append(opts, WithMaxRetries(*o.MaxRetries))
	}
	for _, d := range []struct {
		name, v string
		opt     func(time.Duration) EnqueueOption
	}{{"timeout", o.Timeout, WithTimeout}, {"retention", o.Retention, WithRetention}} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		opts = append(opts, d.opt(v))
	}
	if o.Priority != "" {
		opts = append(opts, Priority(o.Priority))
	}
	if o.Key != nil {
		opts = append(opts, Key(*o.Key))
	}
	if len(o.Headers) > 0 {
		opts = append(opts, Headers(o.Headers))
	}
	return opts, nil
}
