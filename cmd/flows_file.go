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
	spec := task.FlowSpec{ID: f.ID, Retention: f.Retention, Nodes: make(map[string]task.FlowNodeSpec, len(f.Nodes))}
	var errs []error
	for _, name := range names {
		n := f.Nodes[name]
		payload, err := json.Marshal(n.Payload)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %q: payload: %w", name, err))
			continue
		}
		spec.Nodes[name] = task.FlowNodeSpec{Queue: n.Queue, Payload: payload, Parents: n.Parents,
			OnFailure: task.FailurePolicy(n.OnFailure), Options: task.FlowNodeOptions(n.Options)}
	}
	if len(errs) > 0 {
		return nil, usageError{fmt.Errorf("the flow file: %w", errors.Join(errs...))}
	}
	flow, err := task.BuildFlow(c.Context, a, spec, names)
	if errors.Is(err, task.ErrInvalidFlow) {
		return nil, usageErrorf("the flow file: %s", strings.TrimPrefix(err.Error(), task.ErrInvalidFlow.Error()+": "))
	}
	return flow, err
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
