package config

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"go.yaml.in/yaml/v3"
)

// Export returns the file describing the streams and task queues the
// registry of a holds, as the programs that declared them (or a file
// applied before) recorded them: applying it changes nothing. A stream
// keyed by a Go function, which a file cannot declare, is left out with a
// comment saying so. Handlers, cron schedules and the settings only
// workers hold (grace, webhook retries) are not in the registry, so not in
// the file.
func Export(ctx context.Context, a *app.App) ([]byte, error) {
	cfg := a.Config()
	ks := rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name)
	streams, queues, err := rdb.ReadRegistries(ctx, a.Client(), ks.Registry(), ks.TaskQueues())
	if err != nil {
		return nil, fmt.Errorf("read the registry: %w", err)
	}
	root := mapNode()
	root.HeadComment = fmt.Sprintf("The streams and task queues of app %s, as its registry records them (leat config export).", cfg.Name)
	add(root, "version", intNode(Version))
	add(root, "app", strNode(cfg.Name))
	if len(streams) > 0 {
		sn := mapNode()
		var skipped []string
		for _, name := range sortedKeys(streams) {
			var d stream.Definition
			if err := json.Unmarshal([]byte(streams[name]), &d); err != nil {
				return nil, fmt.Errorf("registry entry of stream %q: %w", name, err)
			}
			if d.KeyField == "" {
				skipped = append(skipped, name)
				continue
			}
			add(sn, name, streamNode(d))
		}
		if len(sn.Content) > 0 {
			add(root, "streams", sn)
		}
		for _, name := range skipped {
			root.FootComment += fmt.Sprintf("stream %s is keyed by a function of its Go program: a file cannot declare it\n", name)
		}
	}
	if len(queues) > 0 {
		qn := mapNode()
		for _, name := range sortedKeys(queues) {
			var d task.Definition
			if err := json.Unmarshal([]byte(queues[name]), &d); err != nil {
				return nil, fmt.Errorf("registry entry of task queue %q: %w", name, err)
			}
			add(qn, name, queueNode(d))
		}
		add(root, "queues", qn)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func streamNode(d stream.Definition) *yaml.Node {
	n := mapNode()
	add(n, "partitions", intNode(d.Partitions))
	add(n, "key", strNode(d.KeyField))
	add(n, "retention", intNode(int(d.Size)))
	add(n, "codec", strNode(d.Codec))
	wf := string(d.WhenFull)
	if wf == "" {
		wf = "trim"
	}
	add(n, "when_full", strNode(wf))
	return n
}

func queueNode(d task.Definition) *yaml.Node {
	n := mapNode()
	add(n, "concurrency", intNode(d.Concurrency))
	add(n, "timeout", strNode(formatDuration(d.Timeout)))
	add(n, "retries", intNode(d.MaxRetries))
	b := mapNode()
	add(b, "min", strNode(formatDuration(d.BackoffMin)))
	add(b, "max", strNode(formatDuration(d.BackoffMax)))
	add(n, "backoff", b)
	add(n, "visibility", strNode(formatDuration(d.Visibility)))
	add(n, "retention", strNode(formatDuration(d.Retention)))
	dead := mapNode()
	add(dead, "max", intNode(d.DeadMax))
	add(dead, "age", strNode(formatDuration(d.DeadAge)))
	add(n, "dead", dead)
	if d.Rate > 0 {
		add(n, "rate", rateNode(d.Rate, d.RateWindow))
	}
	add(n, "keyed", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(d.Keyed)})
	if d.KeyRate > 0 {
		add(n, "key_rate", rateNode(d.KeyRate, d.KeyWindow))
	}
	if d.KeyConcurrency > 1 {
		add(n, "key_concurrency", intNode(d.KeyConcurrency))
	}
	if d.MaxKeyBacklog > 0 {
		add(n, "max_key_backlog", intNode(d.MaxKeyBacklog))
	}
	levels := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if d.Strict {
		levels.Style = yaml.FlowStyle
	}
	for _, l := range d.Levels {
		if d.Strict {
			levels.Content = append(levels.Content, strNode(l.Name))
			continue
		}
		ln := mapNode()
		ln.Style = yaml.FlowStyle
		add(ln, "name", strNode(l.Name))
		add(ln, "weight", intNode(l.Weight))
		levels.Content = append(levels.Content, ln)
	}
	add(n, "levels", levels)
	if d.UniqueTTL > 0 {
		add(n, "unique", strNode(formatDuration(d.UniqueTTL)))
	}
	return n
}

func rateNode(limit int, per time.Duration) *yaml.Node {
	n := mapNode()
	n.Style = yaml.FlowStyle
	add(n, "limit", intNode(limit))
	add(n, "per", strNode(formatDuration(per)))
	return n
}

func mapNode() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func intNode(v int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}
}

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, strNode(key), v)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
