package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/controlplane"
	"github.com/leatdev/leat/internal/deploy"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/subprocess"
)

// runner runs the handlers of one revision: an App whose task queues run
// their tasks on the revision's handler processes.
type runner struct {
	rev, digest string
	a           *app.App
	execs       map[string]*subprocess.Handler // by queue
	cancel      context.CancelFunc
	done        chan struct{} // closed when the App's Run returned
	err         error         // what Run returned
}

// ended reports whether the runner's App stopped by itself.
func (r *runner) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// ready returns nil while every queue has a handler process ready.
func (r *runner) ready() error {
	for _, q := range sortedQueues(r.execs) {
		if err := r.execs[q].Ready(); err != nil {
			return fmt.Errorf("queue %s: %w", q, err)
		}
	}
	return nil
}

// handlers returns how many handler processes are alive.
func (r *runner) handlers() int {
	n := 0
	for _, ex := range r.execs {
		n += ex.Stats().Running
	}
	return n
}

// drain stops the runner gracefully: no task is fetched any more, running
// ones finish within the grace period (the rest go back to their queue),
// then the handler processes are closed.
func (r *runner) drain() {
	r.cancel()
	<-r.done
	r.close()
}

// close closes the handler processes and the App.
func (r *runner) close() {
	r.cancel()
	for _, ex := range r.execs {
		ex.Close()
	}
	r.a.Close()
}

func sortedQueues(m map[string]*subprocess.Handler) []string {
	out := make([]string, 0, len(m))
	for q := range m {
		out = append(out, q)
	}
	sort.Strings(out)
	return out
}

// rollout fetches and sets up revision a.Revision, starts its handlers,
// and once they are ready drains the revision running before. A failure
// at any step leaves the running revision as it is.
func (ag *agent) rollout(ctx context.Context, reg controlplane.Registration, a controlplane.Assignment) error {
	ag.say("rolling out revision %s of deployment %s", a.Revision, a.Deployment)
	d, err := deploy.Open(ag.dir, a.Deployment)
	if err != nil {
		return err
	}
	timeout := a.SetupTimeout
	if timeout <= 0 {
		timeout = controlplane.DefaultSetupTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	path, err := d.Fetch(sctx, deploy.Source(a.Source), a.Revision)
	ran := false
	if err == nil {
		ran, err = d.Setup(sctx, a.Revision, a.Setup, setupEnv(a))
	}
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	outcome := &controlplane.SetupOutcome{Revision: a.Revision, OK: err == nil, At: time.Now().UTC()}
	if err != nil {
		outcome.Error = controlplane.Clean(err.Error())
	}
	ag.mu.Lock()
	ag.setup = outcome
	ag.mu.Unlock()
	if err != nil {
		return fmt.Errorf("setup of revision %s failed: %w", a.Revision, err)
	}
	if ran {
		ag.say("revision %s set up", a.Revision)
	}
	r, err := ag.start(ctx, reg, a, path)
	if err != nil {
		return err
	}
	ag.mu.Lock()
	old := ag.cur
	ag.cur = r
	ag.mu.Unlock()
	ag.say("revision %s running queues %s", a.Revision, strings.Join(a.Queues, ", "))
	keep := []string{a.Revision}
	if old != nil {
		old.drain()
		ag.say("revision %s drained", old.rev)
		keep = append(keep, old.rev)
	}
	if err := d.Prune(keep...); err != nil {
		ag.log.Warn("cannot remove old revisions", "deployment", a.Deployment, "error", err)
	}
	return nil
}

// start starts the handlers of a at path and waits until each queue has a
// handler process ready.
func (ag *agent) start(ctx context.Context, reg controlplane.Registration, a controlplane.Assignment, path string) (*runner, error) {
	cfg := app.Config{Name: reg.App, RedisURL: reg.RedisURL, KeyPrefix: reg.Prefix, Logger: ag.log,
		WorkerID: reg.ID + "-" + a.Revision[:12]}
	tlsCfg, err := tlsConfig(ag.c, reg.RedisURL)
	if err != nil {
		return nil, err
	}
	cfg.TLS = tlsCfg
	a2, err := app.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("open the app with the control plane's settings: %w", err)
	}
	r := &runner{rev: a.Revision, digest: a.Digest, a: a2, execs: map[string]*subprocess.Handler{}, cancel: func() {}, done: make(chan struct{})}
	fail := func(err error) (*runner, error) {
		r.close()
		return nil, err
	}
	if err := ping(ctx, reg.RedisURL, a2.Ping); err != nil {
		return fail(fmt.Errorf("reach Redis with the control plane's credentials: %w", err))
	}
	start := ag.c.Duration(flagStartTimeout)
	if start <= 0 {
		start = subprocess.DefaultStartTimeout
	}
	for _, q := range a.Queues {
		ex, err := subprocess.New(subprocess.Config{
			Command: execCommand(a.Start), Dir: path, Env: handlerEnv(ag, a, q), StartTimeout: start,
			Logger: ag.log.With("queue", q, "revision", a.Revision[:12]), MaxTasksPerProcess: ag.c.Int(flagMaxTasks),
		})
		if err != nil {
			return fail(fmt.Errorf("queue %s: %w", q, err))
		}
		r.execs[q] = ex
		opts := execOptions(ex)
		if a.Concurrency > 0 {
			opts = append(opts, task.Concurrency(a.Concurrency))
		}
		if g := ag.c.Duration(flagGrace); g > 0 {
			opts = append(opts, task.Grace(g))
		}
		_, err = task.HandleLookup(ctx, a2, q, ex.Handle, opts...)
		if errors.Is(err, task.ErrUnknownQueue) {
			// No program nor file declared it: run it with the default
			// settings, which this worker records.
			ag.log.Warn("queue not declared: running it with the default settings", "queue", q)
			_, err = task.Handle[json.RawMessage, json.RawMessage](a2, q, ex.Handle, opts...)
		}
		if err != nil {
			return fail(fmt.Errorf("queue %s: %w", q, err))
		}
	}
	// Ready before the old revision drains: a handler that cannot start
	// leaves the old one running.
	for _, q := range a.Queues {
		wctx, cancel := context.WithTimeout(ctx, 2*start)
		err := r.execs[q].Warm(wctx)
		cancel()
		if err != nil {
			if rerr := r.execs[q].Ready(); rerr != nil && ctx.Err() == nil {
				err = rerr // why: the last start's error, with its stderr
			}
			return fail(fmt.Errorf("the handler of queue %s did not start within %s: %w", q, 2*start, err))
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go func() {
		defer close(r.done)
		r.err = a2.Run(runCtx)
		if r.err == nil && runCtx.Err() == nil {
			r.err = errors.New("the worker's app stopped")
		}
	}()
	return r, nil
}

// handlerEnv is the environment a's handler processes get beside the
// worker's allowed variables: the deployment's, the worker's --env, and
// LEAT_QUEUE, LEAT_REVISION and LEAT_DEPLOYMENT.
func handlerEnv(ag *agent, a controlplane.Assignment, queue string) []string {
	env := deploymentEnv(a)
	env = append(env, execEnv(ag.c)...)
	return append(env, "LEAT_QUEUE="+queue)
}

// deploymentEnv is a's environment, sorted, with LEAT_REVISION and
// LEAT_DEPLOYMENT.
func deploymentEnv(a controlplane.Assignment) []string {
	var env []string
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return append(env, "LEAT_REVISION="+a.Revision, "LEAT_DEPLOYMENT="+a.Deployment)
}

// setupEnv is the whole environment of a's setup steps: the worker's
// allowed variables (as a handler gets them), then a's.
func setupEnv(a controlplane.Assignment) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "LEAT_") {
			continue
		}
		for _, p := range subprocess.EnvAllowed {
			if pre, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, pre) || name == p {
				env = append(env, kv)
				break
			}
		}
	}
	return append(env, deploymentEnv(a)...)
}
