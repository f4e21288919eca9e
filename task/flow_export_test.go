package task

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/leatdev/leat/internal/rdb"
)

// SetFlowTimings shortens the flows' sweep for tests: its period (read when
// the first queue of an app is handled), how long a submission may stay
// half done, and how long a running flow may stay unchanged before its
// nodes are checked against their tasks. undo sets the timings back.
func SetFlowTimings(every, submit, idle time.Duration) (undo func()) {
	e, s, i := flowSweepEvery.Load(), flowSubmitTimeout.Load(), flowIdleCheck.Load()
	undo = func() {
		flowSweepEvery.Store(e)
		flowSubmitTimeout.Store(s)
		flowIdleCheck.Store(i)
	}
	flowSweepEvery.Store(int64(every))
	flowSubmitTimeout.Store(int64(submit))
	flowIdleCheck.Store(int64(idle))
	return undo
}

// SubmitRecordOnly writes f's record and index and stops there, as a
// producer that died right after would.
func (f *Flow) SubmitRecordOnly(ctx context.Context) (string, error) {
	b, err := f.check()
	if err != nil {
		return "", err
	}
	id := uuid.Must(uuid.NewV7()).String()
	for i := range b.items {
		b.items[i].Task.ID = FlowTaskID(id, b.items[i].Node)
	}
	def, _ := json.Marshal(flowDef{Roots: b.roots, Items: b.items})
	fl := flowsOf(f.app)
	if err := rdb.FlowIndex(ctx, fl.c, fl.ks, id, time.Now()); err != nil {
		return "", err
	}
	_, err = rdb.FlowCreate(ctx, fl.c, fl.ks, id, f.retention, def, b.nodes)
	return id, err
}
