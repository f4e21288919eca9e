package runner

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/rdb"
)

// ensureGroup creates the processor's consumer group on a partition stream
// (and the stream), starting at the configured position. Its entries-read
// counter is set to the entries before that position, so the trim check
// (trim.go) never takes entries skipped on purpose (Start: Latest on a
// stream trimmed before) for entries lost.
func (e *Executor) ensureGroup(ctx context.Context, key string) error {
	start := "0"
	if e.opts.Start == executor.Latest {
		start = "$"
	}
	if err := rdb.SetGroup(ctx, e.client, key, e.processor, start, false).Err(); err != nil {
		return fmt.Errorf("create group %q on %s: %w", e.processor, key, err)
	}
	return nil
}
