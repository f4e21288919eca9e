//go:build linux

// Command chaosworker is the worker program of leat's chaos runner
// (internal/tools/chaos): one app worker running the runner's stream
// processors (apply, and tally, which keeps a table), task queue and flow
// queues, recording what it processed (see the package documentation of
// internal/tools/chaos for the record format).
//
//	chaosworker -redis URL -prefix PREFIX -id WORKER -out FILE
//
// SIGUSR1 asks it to stop itself with SIGSTOP in the middle of the next
// event, after the event was recorded and before its fenced commit, so
// that the runner can hold it there past its lock expiry. SIGUSR2 asks the
// same in the middle of the next flow node, after its N record (and, for a
// node that adds children, after its first child): its task is handed out
// again meanwhile, and its run resumes late. SIGTERM and
// SIGINT stop it gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/chaos"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("redis", "", "Redis URL")
	prefix := flag.String("prefix", "", "key prefix")
	id := flag.String("id", "", "worker ID")
	out := flag.String("out", "", "record file")
	flag.Parse()
	if *url == "" || *prefix == "" || *id == "" || *out == "" {
		return errors.New("-redis, -prefix, -id and -out are required")
	}
	rec, err := chaos.NewRecorder(*out)
	if err != nil {
		return err
	}
	defer rec.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	w := &worker{rec: rec, id: *id}
	// SIGCONT ends a stall: a request the worker did not get to (the
	// runner stopped it itself) is dropped, so that it does not stop
	// again with nobody to continue it.
	usr := make(chan os.Signal, 3)
	signal.Notify(usr, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGCONT)
	defer signal.Stop(usr)
	go func() {
		for sig := range usr {
			switch sig {
			case syscall.SIGUSR1:
				w.stall.Store(true)
			case syscall.SIGUSR2:
				w.stallNode.Store(true)
			default:
				w.stall.Store(false)
				w.stallNode.Store(false)
			}
		}
	}()

	cfg := chaos.Config(*url, *prefix, *id)
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	slog.SetDefault(cfg.Logger)
	a, err := app.New(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	s, err := chaos.DeclareStream(a)
	if err != nil {
		return err
	}
	if err := app.Process(a, s, "apply", w.process); err != nil {
		return err
	}
	tally, err := chaos.DeclareTally(s)
	if err != nil {
		return err
	}
	err = app.Process(a, s, chaos.TallyProcessor, func(ctx context.Context, events *stream.Events[chaos.Event]) error {
		st := tally.In(events)
		for e := range events.All() {
			t, _, err := st.Get(ctx, e.Record.Key)
			if err != nil {
				return err
			}
			if err := st.Set(e.Record.Key, t.Apply(e.ID, e.Record.Seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := task.Handle(a, chaos.QueueName, w.chore, chaos.QueueOptions()...); err != nil {
		return err
	}
	w.steps = map[string]*task.Queue[chaos.Step, chaos.Made]{}
	for _, name := range chaos.FlowQueues {
		q, err := task.Handle(a, name, w.step, chaos.FlowQueueOptions()...)
		if err != nil {
			return err
		}
		w.steps[name] = q
	}
	return a.Run(ctx)
}

type worker struct {
	rec       *chaos.Recorder
	id        string
	stall     atomic.Bool // stop at the next event (SIGUSR1)
	stallNode atomic.Bool // stop at the next flow node (SIGUSR2)
	runs      atomic.Int64
	steps     map[string]*task.Queue[chaos.Step, chaos.Made] // the flow queues
}

// process records each event, then commits the key's sequence number with
// a fenced write that also appends the token to the partition's commit
// log. A commit that fails for a reason other than ownership (Redis
// restarting) is tried again while the partition is held; a refused one
// ends the call, leaving the event pending for the next owner.
func (w *worker) process(ctx context.Context, events *stream.Events[chaos.Event]) error {
	token := events.Token()
	for e := range events.All() {
		k, seq := e.Record.Key, e.Record.Seq
		if err := w.rec.Record("E", e.Partition, token, k, seq, e.ID, e.Deliveries); err != nil {
			return err
		}
		if w.stall.CompareAndSwap(true, false) {
			if err := w.rec.Record("S", e.Partition, token, k, seq); err != nil {
				return err
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGSTOP); err != nil {
				return err
			}
		}
		for {
			var n *redis.IntCmd
			err := events.Fenced(ctx, func(pipe redis.Pipeliner) error {
				n = pipe.RPush(ctx, events.LocalKey("chaos-commits"), token)
				pipe.HSet(ctx, events.LocalKey("chaos-state"), k, seq)
				return nil
			})
			if err == nil {
				if err := w.rec.Record("C", e.Partition, token, n.Val(), k, seq); err != nil {
					return err
				}
				break
			}
			if errors.Is(err, stream.ErrNotOwner) {
				return w.rec.Record("R", e.Partition, token, k, seq, "not-owner")
			}
			select {
			case <-ctx.Done():
				slog.Warn("commit given up", "partition", e.Partition, "token", token, "error", err, "cause", context.Cause(ctx))
				return w.rec.Record("R", e.Partition, token, k, seq, "ended")
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// chore records a task's successful run.
func (w *worker) chore(ctx context.Context, t *task.Task[chaos.Chore]) (chaos.Done, error) {
	if err := w.rec.Record("T", t.ID, t.Payload.N); err != nil {
		return chaos.Done{}, err
	}
	return chaos.Done{N: t.Payload.N}, nil
}

// step runs a flow node: it records what it saw of its parents and the
// nonce of the result it returns (unique to this run), fails if its
// payload says this attempt does, adds the children its payload names
// (task.AddChild), then succeeds after a short random pause, so that
// faults find nodes running.
func (w *worker) step(ctx context.Context, t *task.Task[chaos.Step]) (chaos.Made, error) {
	flow, node, ok := chaos.FlowNodeOf(t.ID)
	if !ok {
		return chaos.Made{}, task.SkipRetry(fmt.Errorf("task %s is no flow node", t.ID))
	}
	nonce := fmt.Sprintf("%s.%d", w.id, w.runs.Add(1))
	saw := make(map[string]chaos.SawParent, len(t.Parents))
	for name, p := range t.Parents {
		saw[name] = chaos.SawParent{State: string(p.State), Nonce: chaos.NonceOf(p.Result)}
	}
	if err := w.rec.Record("N", flow, node, t.Attempt, nonce, chaos.FormatSaw(saw)); err != nil {
		return chaos.Made{}, err
	}
	if t.Attempt <= t.Payload.Fail {
		return chaos.Made{}, fmt.Errorf("node %s: attempt %d fails on purpose", node, t.Attempt)
	}
	if len(t.Payload.Spawn) == 0 {
		if err := w.stallHere(flow, node, t.Attempt); err != nil {
			return chaos.Made{}, err
		}
	}
	for i, c := range t.Payload.Spawn {
		q := w.steps[c.Queue]
		if q == nil {
			return chaos.Made{}, task.SkipRetry(fmt.Errorf("node %s: unknown queue %q", node, c.Queue))
		}
		if err := task.AddChild(ctx, q, c.Name, chaos.Step{Fail: c.Fail}, task.FailFlow); err != nil {
			return chaos.Made{}, err
		}
		if i == 0 {
			if err := w.stallHere(flow, node, t.Attempt); err != nil {
				return chaos.Made{}, err
			}
		}
	}
	select {
	case <-ctx.Done():
		return chaos.Made{}, context.Cause(ctx)
	case <-time.After(time.Duration(rand.N(30)) * time.Millisecond):
	}
	return chaos.Made{Node: node, Nonce: nonce}, nil
}

// stallHere stops the worker (SIGSTOP) when SIGUSR2 asked it to, after
// recording where.
func (w *worker) stallHere(flow, node string, attempt int) error {
	if !w.stallNode.CompareAndSwap(true, false) {
		return nil
	}
	if err := w.rec.Record("S", "flow", flow, node, attempt); err != nil {
		return err
	}
	return syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}
