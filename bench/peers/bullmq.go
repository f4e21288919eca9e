package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/redis/go-redis/v9"
)

// bullmqDir is the folder of BullMQ's Node side (package.json, its lock
// and bench.mjs), relative to bench/peers, where the benchmark runs.
const bullmqDir = "bullmq"

// Modes of bullmq/bench.mjs.
const (
	nodeEnqueue = "enqueue" // timed Queue.add calls from concurrent producers
	nodeFill    = "fill"    // untimed addBulk
	nodeWork    = "work"    // a timed Worker running the jobs
)

// errNoNode is why BullMQ cannot run here: node or npm is not in PATH, or
// its folder is missing. Its rows are then skipped with a note.
var errNoNode = errors.New("BullMQ cannot run here")

// bullmq runs BullMQ's side of the benchmark: one node process per step,
// on the server at url.
type bullmq struct {
	dir    string
	url    string
	stderr io.Writer
}

// newBullMQ returns BullMQ's runner, after installing its pinned packages
// (npm ci) if they are not yet there, or why it cannot run: node or npm
// missing from PATH, or no bullmq folder.
func newBullMQ(ctx context.Context, dir, url string, stderr io.Writer) (*bullmq, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%w: %s is not in PATH", errNoNode, tool)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoNode, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq", "package.json")); errors.Is(err, os.ErrNotExist) {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stderr, stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("npm ci in %s: %w", dir, err)
		}
	}
	return &bullmq{dir: dir, url: url, stderr: stderr}, nil
}

// nodeResult is the line bench.mjs prints: the elapsed time of its timed
// part and the CPU node spent in it.
type nodeResult struct {
	Mode  string  `json:"mode"`
	N     int     `json:"n"`
	MS    float64 `json:"ms"`
	CPUUs float64 `json:"cpuUs"`
}

// parseNodeResult reads the last non-empty line of bench.mjs's output and
// checks that it is the result of mode for n jobs.
func parseNodeResult(out []byte, mode string, n int) (nodeResult, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	var r nodeResult
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		return nodeResult{}, fmt.Errorf("bullmq: result %q: %w", last, err)
	}
	switch {
	case r.Mode != mode || r.N != n:
		return nodeResult{}, fmt.Errorf("bullmq: result of %s for %d jobs, want %s for %d", r.Mode, r.N, mode, n)
	case r.MS <= 0 || r.CPUUs < 0:
		return nodeResult{}, fmt.Errorf("bullmq: result %q: want a positive time and a CPU time", last)
	}
	return r, nil
}

// run runs one step of bench.mjs under the key prefix given.
func (b *bullmq) run(ctx context.Context, mode, prefix string, n, payload, concurrency int) (nodeResult, error) {
	cmd := exec.CommandContext(ctx, "node", "bench.mjs", mode, b.url, prefix,
		strconv.Itoa(n), strconv.Itoa(payload), strconv.Itoa(concurrency))
	var out bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = b.dir, &out, b.stderr
	if err := cmd.Run(); err != nil {
		return nodeResult{}, fmt.Errorf("node bench.mjs %s: %w", mode, err)
	}
	return parseNodeResult(out.Bytes(), mode, n)
}

// bullmqPrefix is BullMQ's key prefix in a benchmark's space, so that the
// space's cleaning deletes its keys.
func bullmqPrefix(sp bench.Space) string { return sp.Prefix() + ":bullmq" }

// timed is the workload that runs step (one node process) and reports its
// rate, the Redis CPU over the whole process and node's CPU over its timed
// part, per task.
func (b *bullmq) timed(name string, n int, client redis.UniversalClient, step func(ctx context.Context) (nodeResult, error)) bench.Workload {
	return bench.Workload{
		Name:    name,
		Figures: []string{bench.FigureTaskRate, bench.FigureRedisCPU, bench.FigureClientCPU},
		Run: func(ctx context.Context) ([]float64, error) {
			r0, err := redisCPU(ctx, client)
			if err != nil {
				return nil, err
			}
			r, err := step(ctx)
			if err != nil {
				return nil, err
			}
			r1, err := redisCPU(ctx, client)
			if err != nil {
				return nil, err
			}
			return taskFigures(n, r.MS, r1-r0, r.CPUUs), nil
		},
	}
}

// taskFigures returns the figures of n tasks that took ms milliseconds:
// their rate, then the Redis and the client CPU µs per task.
func taskFigures(n int, ms float64, redisCPU time.Duration, clientUs float64) []float64 {
	per := float64(max(n, 1))
	return []float64{float64(n) / max(ms/1000, 1e-9), float64(redisCPU.Microseconds()) / per, clientUs / per}
}

// enqueue is BullMQ's enqueue workload: cfg.Events Queue.add calls from
// the number of concurrent producers given.
func (b *bullmq) enqueue(sp bench.Space, cfg bench.Config, producers int) bench.Workload {
	return b.timed(peerBullMQ, cfg.Events, sp.Client(), func(ctx context.Context) (nodeResult, error) {
		return b.run(ctx, nodeEnqueue, bullmqPrefix(sp), cfg.Events, cfg.PayloadBytes, producers)
	})
}

// tasks is BullMQ's task workload: cfg.Events jobs added beforehand
// (untimed), run by a Worker at the concurrency given.
func (b *bullmq) tasks(sp bench.Space, cfg bench.Config, concurrency int) bench.Workload {
	name := fmt.Sprintf("%s c%d", peerBullMQ, concurrency)
	w := b.timed(name, cfg.Events, sp.Client(), func(ctx context.Context) (nodeResult, error) {
		return b.run(ctx, nodeWork, bullmqPrefix(sp), cfg.Events, cfg.PayloadBytes, concurrency)
	})
	timedRun := w.Run
	w.Run = func(ctx context.Context) ([]float64, error) {
		if _, err := b.run(ctx, nodeFill, bullmqPrefix(sp), cfg.Events, cfg.PayloadBytes, 1); err != nil {
			return nil, fmt.Errorf("fill: %w", err)
		}
		return timedRun(ctx)
	}
	return w
}

// redisCPU returns the CPU time the server used so far: INFO cpu's
// used_cpu_sys + used_cpu_user.
func redisCPU(ctx context.Context, c redis.UniversalClient) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO cpu: %w", err)
	}
	var total float64
	for _, field := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, err := strconv.ParseFloat(infoField(info, field), 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu: %s: %w", field, err)
		}
		total += v
	}
	return time.Duration(total * float64(time.Second)), nil
}
