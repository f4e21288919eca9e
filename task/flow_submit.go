// Submitting a flow: the record first, in the flow's slot, as submitting;
// then the node tasks, waiting, in their queues' slots; then the record
// running and its roots released. A submission a producer left half done
// is finished by the sweep from the definition the record keeps.

package task

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/leatdev/leat/internal/rdb"
)

// flowDef is the definition a flow's record keeps (rdb.FlowDef).
type flowDef struct {
	Roots []string   `json:"roots"`
	Items []flowItem `json:"items"`
}

// Submit checks the flow whole, then writes it and returns its ID. A flow
// refused for bad input returns an error matching ErrInvalidFlow, and
// nothing is written. A flow whose ID exists (FlowID) returns that ID and
// an error matching ErrDuplicate; one being submitted by another call
// with that ID is finished by this one.
//
// Once its record is written, a flow runs whole: when Submit fails after
// that (Redis unreachable, ctx ended), the leader of the app's flows
// finishes the submission within a minute, so a producer that retries
// should give the flow an ID of its own (FlowID) and submit it again,
// which is then harmless.
func (f *Flow) Submit(ctx context.Context) (string, error) {
	b, err := f.check()
	if err != nil {
		return "", err
	}
	id := b.id
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	for i := range b.items {
		b.items[i].Task.ID = FlowTaskID(id, b.items[i].Node)
	}
	for _, q := range b.cores {
		if err := q.registerRetry(ctx); err != nil {
			return "", err
		}
	}
	def, err := json.Marshal(flowDef{Roots: b.roots, Items: b.items})
	if err != nil {
		return "", err
	}
	fl := flowsOf(f.app)
	// Indexed first: a record the producer leaves submitting is found by
	// the sweep through the index.
	if err := rdb.FlowIndex(ctx, fl.c, fl.ks, id, time.Now()); err != nil {
		return "", fmt.Errorf("flow %s: %w", id, err)
	}
	st, err := rdb.FlowCreate(ctx, fl.c, fl.ks, id, f.retention, def, b.nodes)
	if err != nil {
		return "", fmt.Errorf("flow %s: %w", id, err)
	}
	switch st {
	case "created":
	case string(FlowSubmitting):
		// another call with this ID left it half done: finish it as it
		// was defined
		if err := fl.resume(ctx, id); err != nil {
			return id, err
		}
		return id, nil
	default:
		return id, fmt.Errorf("%w: flow %s exists (%s)", ErrDuplicate, id, st)
	}
	if err := fl.finishSubmit(ctx, id, b.items, b.roots); err != nil {
		return id, fmt.Errorf("flow %s: %w (it runs nonetheless: the submission is finished by the flows' leader)", id, err)
	}
	return id, nil
}

// nodeChunk is how many node tasks one script call creates.
const nodeChunk = 256

// finishSubmit creates the node tasks (those that exist are left alone),
// marks the flow running and releases its roots.
func (fl *flows) finishSubmit(ctx context.Context, id string, items []flowItem, roots []string) error {
	byQueue := map[string][]rdb.NewTask{}
	var order []string
	for _, it := range items {
		if _, ok := byQueue[it.Queue]; !ok {
			order = append(order, it.Queue)
		}
		byQueue[it.Queue] = append(byQueue[it.Queue], it.Task)
	}
	for _, q := range order {
		keys := rdb.Keys(fl.ks, q)
		tasks := byQueue[q]
		for len(tasks) > 0 {
			n := min(len(tasks), nodeChunk)
			if _, err := rdb.FlowNodes(ctx, fl.c, keys, tasks[:n]); err != nil {
				return fmt.Errorf("create the nodes of queue %q: %w", q, err)
			}
			tasks = tasks[n:]
		}
	}
	st, rel, err := rdb.FlowStart(ctx, fl.c, fl.ks, id, roots)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	return fl.settle(ctx, id, rdb.FlowStep{State: st, Release: rel})
}

// resume finishes the submission of flow id from its definition.
func (fl *flows) resume(ctx context.Context, id string) error {
	b, err := rdb.FlowDefinition(ctx, fl.c, fl.ks, id)
	if err != nil || b == nil {
		return fmt.Errorf("flow %s: read its definition: %w", id, err)
	}
	var def flowDef
	if err := json.Unmarshal(b, &def); err != nil {
		return fmt.Errorf("flow %s: its definition: %w", id, err)
	}
	return fl.finishSubmit(ctx, id, def.Items, def.Roots)
}
