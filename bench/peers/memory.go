package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// benchMemory is the name of the memory benchmark: Redis memory per
// pending task and per completed task kept with its result.
const benchMemory = "memory"

// memoryPayloads are the sizes in bytes of the JSON payloads the memory
// benchmark measures.
var memoryPayloads = []int{50, 100, 500, 5000}

// memoryConcurrency is the concurrency of the workers that complete the
// memory benchmark's tasks (it does not change what is kept).
const memoryConcurrency = 50

// memPayload is the memory benchmark's task payload: its JSON is the size
// wanted (see jsonPayload).
type memPayload struct {
	Note string `json:"note"`
}

// jsonPayload returns a payload whose JSON, {"note":"xx…"}, is n bytes
// long (11 at the least).
func jsonPayload(n int) memPayload {
	return memPayload{Note: strings.Repeat("x", max(n-len(`{"note":""}`), 0))}
}

// memVariant is one peer in the memory benchmark: fill enqueues n tasks
// whose JSON payloads are payload bytes long, work runs them all to
// success, results kept. Each returns after closing its connections.
type memVariant struct {
	name string
	fill func(ctx context.Context, n, payload int) error
	work func(ctx context.Context, n int) error
}

// memRow is what one variant kept per task at one payload size.
type memRow struct {
	payload           int
	variant           string
	pending, retained float64 // bytes of used_memory per task
}

// perTask returns the bytes per task of n tasks that took used_memory from
// base to after.
func perTask(base, after int64, n int) float64 {
	return float64(after-base) / float64(max(n, 1))
}

// measureMemory runs each variant at each of memoryPayloads on an emptied
// server (keys and scripts): used_memory before filling, with n tasks pending, and with the n
// tasks completed and kept with their results, each reading after MEMORY
// PURGE. It empties the server (FLUSHALL) before each variant and at the
// end, so client must be a server that holds nothing else.
func measureMemory(ctx context.Context, client *redis.Client, n int, vs []memVariant) (rows []memRow, err error) {
	defer func() {
		if ferr := flushAll(context.WithoutCancel(ctx), client); err == nil {
			err = ferr
		}
	}()
	for _, p := range memoryPayloads {
		for _, v := range vs {
			if err := flushAll(ctx, client); err != nil {
				return nil, err
			}
			base, err := usedMemory(ctx, client)
			if err != nil {
				return nil, err
			}
			if err := v.fill(ctx, n, p); err != nil {
				return nil, fmt.Errorf("%s %d-byte payloads: fill: %w", v.name, p, err)
			}
			pending, err := usedMemory(ctx, client)
			if err != nil {
				return nil, err
			}
			if err := v.work(ctx, n); err != nil {
				return nil, fmt.Errorf("%s %d-byte payloads: work: %w", v.name, p, err)
			}
			retained, err := usedMemory(ctx, client)
			if err != nil {
				return nil, err
			}
			rows = append(rows, memRow{payload: p, variant: v.name,
				pending: perTask(base, pending, n), retained: perTask(base, retained, n)})
		}
	}
	return rows, nil
}

// flushAll empties the server, synchronously where Redis knows how (6.2
// and newer), and its script cache, so that each variant starts from the
// same state and pays for its own scripts.
func flushAll(ctx context.Context, c *redis.Client) error {
	if err := c.Do(ctx, "FLUSHALL", "SYNC").Err(); err != nil {
		if err := c.FlushAll(ctx).Err(); err != nil {
			return err
		}
	}
	return c.ScriptFlush(ctx).Err()
}

// usedMemory returns INFO memory's used_memory after MEMORY PURGE, which
// hands freed pages back where the allocator is jemalloc (and fails
// harmlessly where it is not).
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	_ = c.Do(ctx, "MEMORY", "PURGE").Err()
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO memory: %w", err)
	}
	v, err := strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO memory: used_memory: %w", err)
	}
	return v, nil
}

// serverEmpty reports whether no database of the server holds a key.
func serverEmpty(ctx context.Context, c *redis.Client) (bool, error) {
	info, err := c.Info(ctx, "keyspace").Result()
	if err != nil {
		return false, fmt.Errorf("INFO keyspace: %w", err)
	}
	for line := range strings.Lines(info) {
		if strings.HasPrefix(line, "db") {
			return false, nil
		}
	}
	return true, nil
}

// betterPeer returns the peer (any variant but leat) of rows with the
// fewest bytes by figure, and its bytes; "" when rows hold no peer.
func betterPeer(rows []memRow, figure func(memRow) float64) (string, float64) {
	name, best := "", 0.0
	for _, r := range rows {
		if r.variant != bench.VariantLeat && (name == "" || figure(r) < best) {
			name, best = r.variant, figure(r)
		}
	}
	return name, best
}

// writeMemoryTable writes rows as a table: per payload size, a line per
// variant and one comparing leat with the better peer figure by figure
// (below 1: leat keeps less).
func writeMemoryTable(w io.Writer, n int, rows []memRow) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "memory: Redis used_memory per task, %d tasks per variant and payload size, on an emptied server\n", n)
	fmt.Fprintf(tw, "payload B\tvariant\tpending B/task\tretained B/task\n")
	for _, p := range memoryPayloads {
		var at []memRow
		for _, r := range rows {
			if r.payload == p {
				at = append(at, r)
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p, r.variant, bench.FormatFigure(r.pending), bench.FormatFigure(r.retained))
			}
		}
		var leat *memRow
		for i := range at {
			if at[i].variant == bench.VariantLeat {
				leat = &at[i]
			}
		}
		if leat == nil {
			continue
		}
		cells := []string{}
		for _, figure := range []func(memRow) float64{
			func(r memRow) float64 { return r.pending },
			func(r memRow) float64 { return r.retained },
		} {
			peer, b := betterPeer(at, figure)
			if peer == "" || b <= 0 {
				cells = append(cells, "")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.2f (%s)", figure(*leat)/b, peer))
		}
		fmt.Fprintf(tw, "%d\tleat/better peer\t%s\t%s\n", p, cells[0], cells[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// leatMemory is leat's variant of the memory benchmark: a task queue kept
// for an hour, as in the task benchmark, on the space's prefix.
func leatMemory(sp bench.Space, cfg bench.Config) memVariant {
	const queue = "memory"
	handle := func(ctx context.Context, t *task.Task[memPayload]) (int, error) { return len(t.Payload.Note), nil }
	return memVariant{
		name: bench.VariantLeat,
		fill: func(ctx context.Context, n, payload int) error {
			a, err := sp.NewApp(cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			q, err := task.Declare[memPayload, int](a, queue, task.Retention(time.Hour))
			if err != nil {
				return err
			}
			ps := make([]memPayload, n)
			for i := range ps {
				ps[i] = jsonPayload(payload)
			}
			_, err = q.EnqueueMany(ctx, ps)
			return err
		},
		work: func(ctx context.Context, n int) error {
			a, err := sp.NewApp(cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			q, err := task.Handle(a, queue, handle, task.Concurrency(memoryConcurrency), task.Retention(time.Hour))
			if err != nil {
				return err
			}
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			done := make(chan error, 1)
			go func() { done <- a.Run(wctx) }()
			for {
				counts, err := q.Counts(ctx)
				if err != nil {
					stop()
					return fmt.Errorf("%w (worker: %v)", err, <-done)
				}
				if counts[task.Succeeded] >= int64(n) {
					stop()
					return <-done
				}
				select {
				case err := <-done:
					return fmt.Errorf("worker stopped: %v", err)
				case <-time.After(5 * time.Millisecond):
				}
			}
		},
	}
}

// asynqMemory is asynq's variant of the memory benchmark: tasks kept for
// an hour with their results, as in its task benchmark.
func asynqMemory(dial func() *redis.Client, sp bench.Space) memVariant {
	q := asynqQueue(sp)
	return memVariant{
		name: peerAsynq,
		fill: func(ctx context.Context, n, payload int) error {
			b, err := json.Marshal(jsonPayload(payload))
			if err != nil {
				return err
			}
			client := dial()
			defer client.Close()
			return asynqFill(ctx, client, q, n, b)
		},
		work: func(ctx context.Context, n int) error {
			client := dial()
			defer client.Close()
			_, err := asynqWork(ctx, client, q, n, memoryConcurrency, nil)
			return err
		},
	}
}

// bullmqMemory is BullMQ's variant of the memory benchmark: jobs kept for
// an hour with their results (removeOnComplete: {age: 3600}).
func (b *bullmq) memory(sp bench.Space) memVariant {
	return memVariant{
		name: peerBullMQ,
		fill: func(ctx context.Context, n, payload int) error {
			_, err := b.run(ctx, nodeFill, bullmqPrefix(sp), n, payload, 1)
			return err
		},
		work: func(ctx context.Context, n int) error {
			_, err := b.run(ctx, nodeWork, bullmqPrefix(sp), n, 1, memoryConcurrency)
			return err
		},
	}
}
