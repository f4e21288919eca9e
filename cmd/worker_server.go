package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/leatdev/leat/controlplane"
	"github.com/urfave/cli/v2"
)

// Names of the flags of a worker configured by a control plane.
const (
	flagServer    = "server"
	flagDeployDir = "deploy-dir"
	envWorkerTok  = "LEAT_WORKER_TOKEN"
)

func serverFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:    flagServer,
			Usage:   "register with the control plane at `URL` (leat serve --pools) and run what it assigns; the pool's token comes from " + envWorkerTok,
			EnvVars: []string{envName(flagServer)},
		},
		&cli.StringFlag{
			Name:        flagDeployDir,
			Usage:       "with --server, keep the deployments' revisions under `DIR` (a cache: any worker may start with it empty)",
			EnvVars:     []string{envName(flagDeployDir)},
			DefaultText: "the user's cache directory/leat/deploy",
		},
	}
}

// Backoffs of a worker configured by a control plane.
const (
	registerBackoffMin = time.Second
	registerBackoffMax = 30 * time.Second
	rolloutBackoffMin  = 30 * time.Second
	rolloutBackoffMax  = 10 * time.Minute
)

// agent is a worker configured by a control plane: it registers,
// heartbeats, and rolls out what the heartbeats' answers assign.
//
// Shutdown order: stop heartbeating; let a rollout under way end (its
// setup is cancelled); drain the running revision (no new task, running
// ones finish within the grace period); close its handler processes.
type agent struct {
	c      *cli.Context
	client *controlplane.Client
	dir    string
	log    *slog.Logger
	hello  controlplane.Hello

	mu      sync.Mutex
	reg     *controlplane.Registration
	cur     *runner
	setup   *controlplane.SetupOutcome
	lastErr string
	rolling bool
	retry   map[string]time.Time // assignment key → no rollout before
	backoff map[string]time.Duration
	wg      sync.WaitGroup // the rollout under way
}

// serverWorker runs "leat worker --server URL".
func serverWorker(c *cli.Context) error {
	if err := wantArgs(c); err != nil {
		return err
	}
	for _, f := range []string{flagExec, flagQueue, flagTestInput, flagProcessors} {
		if c.IsSet(f) {
			return usageErrorf("--%s takes its queues and handler from the control plane: drop --%s", flagServer, f)
		}
	}
	token := os.Getenv(envWorkerTok)
	if token == "" {
		return usageErrorf("--%s needs the pool's token in %s", flagServer, envWorkerTok)
	}
	client, err := controlplane.NewClient(c.String(flagServer), token)
	if err != nil {
		return usageErrorf("--%s: %w", flagServer, err)
	}
	dir := c.String(flagDeployDir)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return usageErrorf("no cache directory for the deployments (%v): give --%s", err, flagDeployDir)
		}
		dir = filepath.Join(cache, "leat", "deploy")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String(flagLogLevel))); err != nil {
		return usageErrorf("--log-level %q is invalid: use debug, info, warn or error", c.String(flagLogLevel))
	}
	host, _ := os.Hostname()
	ag := &agent{
		c: c, client: client, dir: dir,
		log:   slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level})),
		hello: controlplane.Hello{Host: host, PID: os.Getpid(), Version: version()},
		retry: map[string]time.Time{}, backoff: map[string]time.Duration{},
	}
	return ag.run(c.Context)
}

// say prints a line of the worker's progress on stdout.
func (ag *agent) say(format string, args ...any) {
	fmt.Fprintf(ag.c.App.Writer, format+"\n", args...)
}

// run registers, then heartbeats until ctx ends.
func (ag *agent) run(ctx context.Context) error {
	defer ag.stop()
	reg, err := ag.register(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while registering
		}
		return err
	}
	ag.consider(ctx, reg.Assignment)
	t := time.NewTimer(reg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		ag.mu.Lock()
		id, every := ag.reg.ID, ag.reg.Heartbeat
		ag.mu.Unlock()
		a, err := ag.client.Heartbeat(ctx, id, ag.beat())
		switch {
		case errors.Is(err, controlplane.ErrUnknownWorker):
			ag.log.Warn("the control plane forgot this worker: registering again", "worker", id)
			reg, err := ag.register(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			a, every = &reg.Assignment, reg.Heartbeat
		case errors.Is(err, controlplane.ErrUnauthorized):
			// The token was revoked: what runs goes on until stopped, as
			// Redis still takes its credentials; the operator decides.
			ag.log.Error("the control plane refuses this worker's token", "worker", id)
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			ag.log.Warn("heartbeat failed", "worker", id, "error", err)
		}
		if a != nil {
			ag.consider(ctx, *a)
		}
		t.Reset(every)
	}
}

// register registers with the control plane, retrying with a backoff
// until it answers; a refused token ends the worker.
func (ag *agent) register(ctx context.Context) (*controlplane.Registration, error) {
	wait := registerBackoffMin
	for {
		reg, err := ag.client.Register(ctx, ag.hello)
		if err == nil {
			ag.mu.Lock()
			ag.reg = reg
			ag.mu.Unlock()
			ag.say("worker %s registered with pool %s of app %s: queues %v, deployment %s", reg.ID, reg.Pool, reg.App, reg.Queues, reg.Deployment)
			return reg, nil
		}
		if errors.Is(err, controlplane.ErrUnauthorized) {
			return nil, fmt.Errorf("%w: check %s", err, envWorkerTok)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ag.log.Warn("cannot register with the control plane: retrying", "error", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, registerBackoffMax)
	}
}

// key names an assignment's revision and settings.
func key(rev, digest string) string { return rev + "/" + digest }

// consider starts rolling a out when it is not what runs, no rollout is
// under way, and its last failure's backoff is over.
func (ag *agent) consider(ctx context.Context, a controlplane.Assignment) {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if ag.cur != nil && ag.cur.ended() {
		ag.lastErr = fmt.Sprintf("revision %s stopped: %v", ag.cur.rev, ag.cur.err)
		ag.say("revision %s stopped: %v", ag.cur.rev, ag.cur.err)
		ag.cur.close()
		ag.cur = nil
	}
	switch {
	case ag.rolling || ctx.Err() != nil:
		return
	case a.Revision == "":
		ag.lastErr = "the control plane has not resolved the deployment's source yet"
		return
	case ag.cur != nil && key(ag.cur.rev, ag.cur.digest) == key(a.Revision, a.Digest):
		return
	case time.Now().Before(ag.retry[key(a.Revision, a.Digest)]):
		return
	}
	ag.rolling = true
	reg := *ag.reg
	ag.wg.Add(1)
	go func() {
		defer ag.wg.Done()
		err := ag.rollout(ctx, reg, a)
		ag.mu.Lock()
		defer ag.mu.Unlock()
		ag.rolling = false
		k := key(a.Revision, a.Digest)
		if err == nil {
			ag.lastErr = ""
			delete(ag.retry, k)
			delete(ag.backoff, k)
			return
		}
		if ctx.Err() != nil {
			return
		}
		ag.lastErr = err.Error()
		d := max(rolloutBackoffMin, min(2*ag.backoff[k], rolloutBackoffMax))
		ag.backoff[k], ag.retry[k] = d, time.Now().Add(d)
		ag.say("revision %s not rolled out (next attempt in %s): %v", a.Revision, d, err)
	}()
}

// beat returns the worker's state for a heartbeat.
func (ag *agent) beat() (b controlplane.Beat) {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	b = controlplane.Beat{Health: controlplane.HealthFailing, Error: ag.lastErr, Setup: ag.setup}
	defer func() { b.Error = controlplane.Clean(b.Error) }() // text from handlers' and setups' output
	if ag.cur == nil {
		if ag.setup == nil && ag.lastErr == "" {
			b.Health = controlplane.HealthStarting
		}
		if b.Error == "" {
			b.Error = "no revision runs yet"
		}
		return b
	}
	b.Revision, b.Digest, b.Handlers = ag.cur.rev, ag.cur.digest, ag.cur.handlers()
	switch err := ag.cur.ready(); {
	case err != nil:
		b.Health, b.Error = controlplane.HealthDegraded, err.Error()
	case ag.lastErr != "" || ag.rolling:
		b.Health = controlplane.HealthDegraded
		if b.Error == "" {
			b.Error = "rolling out a new revision"
		}
	default:
		b.Health = controlplane.HealthOK
	}
	return b
}

// stop waits for a rollout under way, then drains what runs.
func (ag *agent) stop() {
	ag.wg.Wait()
	ag.mu.Lock()
	cur := ag.cur
	ag.cur = nil
	ag.mu.Unlock()
	if cur != nil {
		cur.drain()
		ag.say("revision %s stopped", cur.rev)
	}
}
