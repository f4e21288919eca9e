package app

import (
	"context"
	"time"

	"github.com/leatdev/leat/executor"
)

// janitorEvery is how often the leader deletes dead consumers.
const janitorEvery = time.Minute

// janitor deletes, every janitorEvery while this worker leads, the consumers
// of crashed executors (not live members, nothing pending) from the groups
// of every processor the app registers, whether this worker runs it or not
// (see executor.CleanConsumers). It costs two pipelined commands per
// partition and processor.
func (a *App) janitor(ctx context.Context) {
	every := a.janitorEvery
	if every <= 0 {
		every = janitorEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !a.IsLeader() {
			continue
		}
		for _, p := range a.Processors() {
			n, err := executor.CleanConsumers(ctx, p.stream, p.Name)
			switch {
			case err != nil && ctx.Err() == nil:
				a.logger.Warn("dead consumers not deleted; will retry", "stream", p.stream.Name(), "processor", p.Name, "error", err)
			case n > 0:
				a.logger.Info("dead consumers deleted", "stream", p.stream.Name(), "processor", p.Name, "consumers", n)
			}
		}
	}
}
