package app

import (
	"context"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/runner"
)

// janitorEvery is how often the leader deletes dead consumers.
const janitorEvery = time.Minute

// janitor deletes, every janitorEvery while this worker leads, the consumers
// of crashed executors (not live members, nothing pending) from the groups
// of every processor of the app: those this program registers, and those
// the registry records that other programs of the app run (whether this
// worker runs them or not; see runner.CleanConsumers). It costs two
// pipelined commands per partition and processor.
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
		for _, p := range a.janitorWork(ctx) {
			n, err := runner.CleanConsumers(ctx, a.client, a.keys, p.stream, p.partitions, p.processor)
			switch {
			case err != nil && ctx.Err() == nil:
				a.logger.Warn("dead consumers not deleted; will retry", "stream", p.stream, "processor", p.processor, "error", err)
			case n > 0:
				a.logger.Info("dead consumers deleted", "stream", p.stream, "processor", p.processor, "consumers", n)
			}
		}
	}
}

// janitorProcessor is a processor whose dead consumers the janitor deletes.
type janitorProcessor struct {
	stream     string
	partitions int
	processor  string
}

// janitorWork returns the processors this program registers, then those
// of the registry it does not (read in two commands; when they cannot be
// read, the program's own only, logged).
func (a *App) janitorWork(ctx context.Context) []janitorProcessor {
	var out []janitorProcessor
	seen := map[string]bool{}
	for _, p := range a.Processors() {
		out = append(out, janitorProcessor{p.stream.Name(), p.stream.Partitions(), p.Name})
		seen[p.FullName()] = true
	}
	names, err := rdb.Processors(ctx, a.client, a.keys)
	if err != nil {
		if ctx.Err() == nil {
			a.logger.Warn("processor registry not read; deleting dead consumers of this program's processors only", "error", err)
		}
		return out
	}
	var defs map[string]int // stream -> partitions, read when first needed
	for _, name := range names {
		stream, processor, ok := strings.Cut(name, "/")
		if !ok || seen[name] {
			continue
		}
		if defs == nil {
			ds, err := core.ListDefinitions(ctx, a.client, a.keys.Registry())
			if err != nil {
				if ctx.Err() == nil {
					a.logger.Warn("stream registry not read; deleting dead consumers of this program's processors only", "error", err)
				}
				return out
			}
			defs = make(map[string]int, len(ds))
			for _, d := range ds {
				defs[d.Name] = d.Partitions
			}
		}
		if n, ok := defs[stream]; ok {
			out = append(out, janitorProcessor{stream, n, processor})
		}
	}
	return out
}
