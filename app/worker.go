package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/runner"
	"github.com/leatdev/leat/stream"
)

// Run runs a worker with every registered processor until ctx is done; see
// RunProcessors.
func (a *App) Run(ctx context.Context) error { return a.RunProcessors(ctx, nil) }

// RunProcessors runs a worker with the named processors ("processor" or
// "stream/processor"; all when names is empty) until ctx is done, then shuts
// down gracefully and returns nil. When a processor's failure policy halts
// the worker, every executor shuts down gracefully and the error is
// returned. The worker also takes part in leader election and runs the
// background tasks.
//
// Shutdown order: each executor leaves its membership (survivors rebalance
// at once), stops fetching, lets in-flight events finish within the grace
// period, acknowledges, and releases its locks, while attached services
// (Attach) stop too; then background tasks stop and the leader lease is
// released.
//
// A permission error of the Redis user (ACL) is returned with what to grant.
func (a *App) RunProcessors(ctx context.Context, names []string) error {
	return rdb.Explain(a.runProcessors(ctx, names), a.cfg.KeyPrefix)
}

func (a *App) runProcessors(ctx context.Context, names []string) error {
	procs, err := a.SelectProcessors(names)
	if err != nil {
		return err
	}
	if err := a.Ping(ctx); err != nil {
		return err
	}
	if err := a.Register(ctx); err != nil {
		return err
	}
	execs := make([]*runner.Executor, 0, len(procs))
	for _, p := range procs {
		opts := p.Options
		e, err := runner.New(runner.Config{
			Stream:    p.stream,
			Processor: p.Name,
			Handler:   runner.Handler(p.handler),
			Options:   opts,
			Worker:    a.cfg.WorkerID,
			Logger:    a.logger,
			Hooks:     a.cfg.Hooks,
		})
		if err != nil {
			return err
		}
		if err := a.recordProcessor(ctx, p, e.Options()); err != nil {
			return err
		}
		execs = append(execs, e)
	}
	a.mu.Lock()
	a.executors = execs
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.executors = nil
		a.mu.Unlock()
	}()

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, e := range execs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.Run(wctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				stop() // halt: the whole worker stops gracefully
			}
		}()
	}
	a.runServices(wctx, func(run func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				stop()
			}
		}()
	})
	var leading, tasks sync.WaitGroup
	lctx, stopLeading := context.WithCancel(context.WithoutCancel(ctx))
	lockc, closeLockc := lease.Client(a.client, 2) // the leaderships' lock client
	for _, l := range a.leaderships() {
		leading.Add(1)
		go func() { defer leading.Done(); l.run(lctx, lockc) }()
	}
	leading.Add(1)
	go func() { defer leading.Done(); a.janitor(lctx) }()
	tctx, stopTasks := context.WithCancel(context.WithoutCancel(ctx))
	for _, t := range a.backgroundTasks() {
		tasks.Add(1)
		go func() { defer tasks.Done(); t.run(tctx, a) }()
	}
	a.logStart(execs)

	<-wctx.Done()
	wg.Wait()
	// Background tasks end, and leader-only ones are waited for (within the
	// grace period), before the leader lease is released: a new leader
	// never starts a task the old one is still running.
	stopTasks()
	for _, l := range a.leaderships() {
		l.resign()
	}
	if !waitGroup(&tasks, a.grace()) {
		a.logger.Error("background tasks still running after the grace period: they must return when their context ends")
	}
	stopLeading()
	leading.Wait()
	closeLockc()
	a.logger.Info("worker stopped")
	return errors.Join(errs...)
}

// grace is the processors' default grace period, which background tasks get
// too.
func (a *App) grace() time.Duration {
	if g := a.cfg.Processing.Grace; g > 0 {
		return g
	}
	return executor.DefaultGrace
}

// waitGroup waits for wg at most d and reports whether it finished.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Executors returns the executors of the running worker, for status
// reports; nil when the worker is not running.
func (a *App) Executors() []executor.Executor {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.executors == nil {
		return nil
	}
	out := make([]executor.Executor, len(a.executors))
	for i, e := range a.executors {
		out[i] = e
	}
	return out
}

// ProcessorDefinition is what the processors hash in Redis records about a
// processor, for tools without the app's code.
type ProcessorDefinition struct {
	Stream     string        `json:"stream"`
	Processor  string        `json:"processor"`
	LockExpiry time.Duration `json:"lock_expiry"`
	Prefetch   int           `json:"prefetch"`
	Grace      time.Duration `json:"grace"`
	OnError    string        `json:"on_error"`
	Retries    int           `json:"retries"`
	// Tables are the tables the processor keeps (stream.DeclareTable).
	Tables []stream.TableDefinition `json:"tables,omitempty"`
}

func (a *App) recordProcessor(ctx context.Context, p *Processor, o executor.Options) error {
	var tables []stream.TableDefinition
	for _, t := range p.stream.Tables(p.Name) {
		tables = append(tables, stream.TableDefinition(t))
	}
	b, err := json.Marshal(ProcessorDefinition{
		Stream: p.stream.Name(), Processor: p.Name, LockExpiry: o.LockExpiry, Prefetch: o.Prefetch,
		Grace: o.Grace, OnError: o.OnError.String(), Retries: o.Retry.Attempts, Tables: tables,
	})
	if err != nil {
		return err
	}
	if err := rdb.RecordProcessor(ctx, a.client, a.keys, p.FullName(), b); err != nil {
		return fmt.Errorf("register processor %q: %w", p.FullName(), err)
	}
	return nil
}

// logStart writes the worker's start line: what it runs, by name, so that
// an operator sees which processors and task queues a worker took on.
func (a *App) logStart(execs []*runner.Executor) {
	procs := make([]string, len(execs))
	for i, e := range execs {
		procs[i] = e.Stream() + "/" + e.Processor()
	}
	var queues, services []string
	for _, s := range a.Services() {
		if q, ok := s.(interface{ TaskQueue() string }); ok {
			queues = append(queues, q.TaskQueue())
		} else {
			services = append(services, s.Name())
		}
	}
	attrs := []any{"worker", a.cfg.WorkerID, "processors", strings.Join(procs, ",")}
	if len(queues) > 0 {
		attrs = append(attrs, "task_queues", strings.Join(queues, ","))
	}
	if len(services) > 0 {
		attrs = append(attrs, "services", strings.Join(services, ","))
	}
	a.logger.Info("worker started", attrs...)
}
