package runner

import (
	"context"
	"strconv"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
)

// deadLetter writes failing to the processor's dead-letter stream in one
// pipelined round trip, tried again for up to 10s while it fails with a
// transient error. The caller acknowledges them afterwards, so a crash in
// between writes a dead letter twice rather than losing it.
func (e *Executor) deadLetter(p *partition, failing []core.Delivery, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	entries := make([][]any, 0, len(failing))
	for _, d := range failing {
		msg := cause.Error()
		if d.Err != nil {
			msg = d.Err.Error()
		}
		vals := []any{
			executor.DeadStream, e.stream.Name(), executor.DeadPartition, strconv.Itoa(p.n), executor.DeadID, d.ID,
			executor.DeadProcessor, e.processor, executor.DeadError, msg, executor.DeadTime, now, executor.DeadDeliveries, strconv.FormatInt(d.Deliveries, 10),
		}
		if d.Codec != "" {
			vals = append(vals, core.FieldKey, d.Key, core.FieldCodec, d.Codec, core.FieldData, d.Data)
		}
		for k, v := range d.Headers {
			vals = append(vals, core.HeaderField+k, v)
		}
		entries = append(entries, vals)
	}
	return ride(ctx, func(ctx context.Context) error {
		return e.group.DeadLetters(ctx, entries, e.stream.Definition().Size)
	})
}
