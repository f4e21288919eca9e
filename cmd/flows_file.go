// The flow file of "leat flows submit": YAML or JSON (YAML's subset),
// read and checked whole before anything is written.

package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"
)

// maxFlowFile bounds a flow file.
const maxFlowFile = 32 << 20

// flowFile is a flow file:
//
//	id: order-42          # optional: makes a submission idempotent
//	retention: 24h        # optional
//	nodes:
//	  a: {queue: fetch, payload: {url: "..."}}
//	  b: {queue: parse, parents: [a], on_failure: continue,
//	      options: {max_retries: 3, timeout: 30s, priority: high}}
type flowFile struct {
	ID        string              `yaml:"id"`
	Retention string              `yaml:"retention"`
	Nodes     map[string]flowNode `yaml:"nodes"`
}

type flowNode struct {
	Queue     string      `yaml:"queue"`
	Payload   any         `yaml:"payload"`
	Parents   []string    `yaml:"parents"`
	OnFailure string      `yaml:"on_failure"`
	Options   nodeOptions `yaml:"options"`
}

type nodeOptions struct {
	MaxRetries *int              `yaml:"max_retries"`
	Timeout    string            `yaml:"timeout"`
	Retention  string            `yaml:"retention"`
	Priority   string            `yaml:"priority"`
	Key        *string           `yaml:"key"`
	Headers    map[string]string `yaml:"headers"`
}

// readFlow reads a flow file and builds its flow on a, looking its queues
// up in the registry. Every mistake is a usage error; nothing is written.
func readFlow(c *cli.Context, a *app.App, r io.Reader) (*task.Flow, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFlowFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFlowFile {
		return nil, usageErrorf("the flow file is over %d bytes", maxFlowFile)
	}
	var f flowFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, usageErrorf("the flow file is empty")
		}
		return nil, usageErrorf("the flow file: %v", err)
	}
	// the nodes in the file's order
	var order struct {
		Nodes yaml.Node `yaml:"nodes"`
	}
	_ = yaml.Unmarshal(data, &order)
	var names []string
	for i := 0; i+1 < len(order.Nodes.Content); i += 2 {
		names = append(names, order.Nodes.Content[i].Value)
	}
	if len(names) != len(f.Nodes) {
		return nil, usageErrorf("the flow file: nodes must be a map of node names to nodes")
	}
	var opts []task.FlowOption
	var errs []error
	if f.ID != "" {
		opts = append(opts, task.FlowID(f.ID))
	}
	if f.Retention != "" {
		d, err := time.ParseDuration(f.Retention)
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: %w", err))
		} else {
			opts = append(opts, task.FlowRetention(d))
		}
	}
	flow := task.NewFlow(a, opts...)
	queues := map[string]*rawQueue{}
	nodes := map[string]*task.Node{}
	for _, name := range names {
		n := f.Nodes[name]
		if n.Queue == "" {
			errs = append(errs, fmt.Errorf("node %q: no queue", name))
			continue
		}
		q, ok := queues[n.Queue]
		if !ok {
			q, err = lookupQueue(c, a, n.Queue)
			if err != nil {
				var u usageError
				if !errors.As(err, &u) {
					return nil, err // Redis, not the file
				}
				errs = append(errs, fmt.Errorf("node %q: %w", name, err))
				continue
			}
			queues[n.Queue] = q
		}
		payload, err := json.Marshal(n.Payload)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %q: payload: %w", name, err))
			continue
		}
		eopts, err := n.Options.enqueueOptions()
		if err != nil {
			errs = append(errs, fmt.Errorf("node %q: %w", name, err))
			continue
		}
		node := task.AddNode(flow, name, q, json.RawMessage(payload), eopts...)
		if n.OnFailure != "" {
			node.OnFailure(task.FailurePolicy(n.OnFailure))
		}
		nodes[name] = node
	}
	for _, name := range names {
		node := nodes[name]
		if node == nil {
			continue
		}
		for _, p := range f.Nodes[name].Parents {
			parent := nodes[p]
			if parent == nil {
				if _, ok := f.Nodes[p]; !ok {
					errs = append(errs, fmt.Errorf("node %q: unknown parent %q", name, p))
				}
				continue
			}
			node.After(parent)
		}
	}
	if len(errs) > 0 {
		return nil, usageError{fmt.Errorf("the flow file: %w", errors.Join(errs...))}
	}
	return flow, nil
}

func (o nodeOptions) enqueueOptions() ([]task.EnqueueOption, error) {
	var opts []task.EnqueueOption
	if o.MaxRetries != nil {
		opts = append(opts, task.WithMaxRetries(*o.MaxRetries))
	}
	for _, d := range []struct {
		name, v string
		opt     func(time.Duration) task.EnqueueOption
	}{{"timeout", o.Timeout, task.WithTimeout}, {"retention", o.Retention, task.WithRetention}} {
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
		opts = append(opts, task.Priority(o.Priority))
	}
	if o.Key != nil {
		opts = append(opts, task.Key(*o.Key))
	}
	if len(o.Headers) > 0 {
		opts = append(opts, task.Headers(o.Headers))
	}
	return opts, nil
}

// sinkResults prints the results of a flow's sinks: the result alone for
// one sink, else "NODE RESULT" lines.
func sinkResults(w io.Writer, in *task.FlowInfo) {
	var sinks []string
	for _, n := range in.Nodes {
		if _, ok := in.Results[n.Name]; ok {
			sinks = append(sinks, n.Name)
		}
	}
	if len(sinks) == 1 {
		fmt.Fprintln(w, quoteTerm(string(in.Results[sinks[0]])))
		return
	}
	for _, s := range sinks {
		fmt.Fprintf(w, "%s %s\n", quoteTerm(s), quoteTerm(strings.TrimSpace(string(in.Results[s]))))
	}
}
