package controlplane

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"time"

	"github.com/leatdev/leat/internal/deploy"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Config configures a Plane.
type Config struct {
	// File is the pools file, as Load read it (required).
	File *File
	// Client is the control plane's Redis connection (required).
	Client redis.UniversalClient
	// App and Prefix name the app's keys (Prefix default "leat").
	App, Prefix string
	// RedisURL is the control plane's own Redis URL: the Redis users it
	// creates are handed out at its address (or the pool's), never with
	// its credentials.
	RedisURL string
	// APIToken is the HTTP API's token, which no pool may share.
	APIToken string
	// Logger receives refused tokens and revision changes (default
	// slog.Default()).
	Logger *slog.Logger
	// Resolve resolves a source to its revision (default deploy.Resolve).
	Resolve func(context.Context, Source) (string, error)
}

// A Plane is the control plane of one app's worker pools: it registers
// workers, records their heartbeats in Redis and answers what they run.
// Several Planes (leat serve replicas) may serve the same app: all they
// share lives in Redis.
type Plane struct {
	cfg   Config
	ks    rdb.KeySpace
	log   *slog.Logger
	pools []namedPool // sorted by name
}

type namedPool struct {
	name string
	*Pool
	sum [32]byte // SHA-256 of the token, compared in constant time
}

// New returns the Plane of cfg; it checks that no pool shares the API's
// token. It does no I/O: see Prepare.
func New(cfg Config) (*Plane, error) {
	if cfg.File == nil || cfg.Client == nil {
		return nil, errors.New("controlplane: File and Client are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Resolve == nil {
		cfg.Resolve = func(ctx context.Context, s Source) (string, error) { return deploy.Resolve(ctx, deploy.Source(s)) }
	}
	p := &Plane{cfg: cfg, ks: rdb.NewKeySpace(cfg.Prefix, cfg.App), log: cfg.Logger}
	for _, name := range sortedKeys(cfg.File.Pools) {
		pool := cfg.File.Pools[name]
		if pool.token == "" {
			return nil, fmt.Errorf("pool %s has no token: load the file with Load", name)
		}
		if cfg.APIToken != "" && pool.token == cfg.APIToken {
			return nil, fmt.Errorf("pool %s: its token is the API's: give workers a token of their own", name)
		}
		p.pools = append(p.pools, namedPool{name: name, Pool: pool, sum: sha256.Sum256([]byte(pool.token))})
	}
	return p, nil
}

// Prepare creates the Redis users of the pools that have no URL of their
// own, which fails when the control plane's Redis user may not run ACL
// SETUSER, and resolves each deployment whose revision is not recorded.
func (p *Plane) Prepare(ctx context.Context) error {
	for _, pool := range p.pools {
		if pool.redisURL != "" {
			continue
		}
		if _, err := p.workerURL(ctx, pool); err != nil {
			return err
		}
	}
	recs, err := p.revisions(ctx)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(p.cfg.File.Deployments) {
		if recs[name].Revision == "" {
			p.poll(ctx, name, recs[name])
		}
	}
	return nil
}

// poolOf returns the pool whose token is token, comparing with every
// pool's in constant time.
func (p *Plane) poolOf(token string) (namedPool, bool) {
	sum := sha256.Sum256([]byte(token))
	var found namedPool
	ok := 0
	for _, pool := range p.pools {
		if subtle.ConstantTimeCompare(sum[:], pool.sum[:]) == 1 {
			found, ok = pool, 1
		}
	}
	return found, ok == 1 && token != ""
}

// userName is the Redis user of pool.
func (p *Plane) userName(pool namedPool) string {
	if pool.Redis.User != "" {
		return pool.Redis.User
	}
	return fmt.Sprintf("%s-%s-%s", p.ks.Prefix, p.ks.App, pool.name)
}

// password derives the pool's Redis password from its token: every
// replica computes the same one and none is stored; a new token makes a
// new password.
func (p *Plane) password(pool namedPool) string {
	m := hmac.New(sha256.New, []byte(pool.token))
	fmt.Fprintf(m, "leat worker password\x00%s\x00%s\x00%s", p.ks.Prefix, p.ks.App, pool.name)
	return hex.EncodeToString(m.Sum(nil))
}

// workerURL returns the Redis URL the pool's workers get: the operator's,
// or the control plane's address with the pool's user, which it creates
// or updates.
func (p *Plane) workerURL(ctx context.Context, pool namedPool) (string, error) {
	if pool.redisURL != "" {
		return pool.redisURL, nil
	}
	user := p.userName(pool)
	if err := rdb.SetWorkerUser(ctx, p.cfg.Client, user, p.password(pool), p.ks.Prefix); err != nil {
		if redis.IsPermissionError(err) {
			return "", fmt.Errorf("pool %s: leat's Redis user may not create the pool's Redis user %s (ACL SETUSER): "+
				"grant it +acl|setuser, or give the pool the URL of a user you created (redis.url_env or redis.url_file)", pool.name, user)
		}
		return "", fmt.Errorf("pool %s: create Redis user %s: %w", pool.name, user, err)
	}
	u, err := url.Parse(p.cfg.RedisURL)
	if err != nil {
		return "", errors.New("the control plane's Redis URL does not parse")
	}
	u.User = url.UserPassword(user, p.password(pool))
	if pool.Redis.Address != "" {
		u.Host = pool.Redis.Address
	}
	return u.String(), nil
}

// assignment returns what pool's workers run now.
func (p *Plane) assignment(ctx context.Context, pool namedPool) (Assignment, error) {
	d := p.cfg.File.Deployments[pool.Deployment]
	a := Assignment{
		Pool: pool.name, Queues: pool.Queues, Concurrency: pool.Concurrency, Deployment: pool.Deployment,
		Source: d.Source(), Setup: d.Setup, SetupTimeout: d.SetupTimeout, Start: d.Start, Env: d.Env,
	}
	a.Digest = a.digest()
	b, err := rdb.PlaneRevision(ctx, p.cfg.Client, p.ks.PlaneRevisions(), pool.Deployment)
	if err != nil {
		return a, err
	}
	var rec Revision
	if len(b) > 0 && json.Unmarshal(b, &rec) == nil && rec.Source == sourceName(d.Source()) {
		a.Revision = rec.Revision
	}
	return a, nil
}

// revisions returns the recorded revisions by deployment.
func (p *Plane) revisions(ctx context.Context) (map[string]Revision, error) {
	raw, err := rdb.PlaneRevisions(ctx, p.cfg.Client, p.ks.PlaneRevisions())
	if err != nil {
		return nil, err
	}
	out := map[string]Revision{}
	for name, v := range raw {
		var rec Revision
		if json.Unmarshal([]byte(v), &rec) == nil {
			out[name] = rec
		}
	}
	return out, nil
}

// sourceName names a source in a revision's record, so that a record of
// another source (the file changed) is not taken for this one's.
func sourceName(s Source) string {
	if s.Path != "" {
		return "path " + s.Path
	}
	ref := s.Ref
	if ref == "" {
		ref = "HEAD"
	}
	return "git " + s.Git + " " + ref
}

// Run polls the deployments' sources until ctx ends, each at its Poll
// interval, and records each new revision.
func (p *Plane) Run(ctx context.Context) error {
	names := sortedKeys(p.cfg.File.Deployments)
	done := make(chan struct{}, len(names))
	for _, name := range names {
		go func() {
			defer func() { done <- struct{}{} }()
			t := time.NewTicker(p.cfg.File.Deployments[name].Poll)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				recs, err := p.revisions(ctx)
				if err != nil {
					if ctx.Err() == nil {
						p.log.Warn("control plane: read revisions", "error", err)
					}
					continue
				}
				p.poll(ctx, name, recs[name])
			}
		}()
	}
	for range names {
		<-done
	}
	return nil
}

// poll resolves deployment name's source and records the outcome over
// prev, its last record.
func (p *Plane) poll(ctx context.Context, name string, prev Revision) {
	d := p.cfg.File.Deployments[name]
	src := sourceName(d.Source())
	if prev.Source != src {
		prev = Revision{}
	}
	rev, err := p.cfg.Resolve(ctx, d.Source())
	if ctx.Err() != nil {
		return
	}
	now := time.Now().UTC()
	rec := prev
	rec.Deployment, rec.Source = name, src
	switch {
	case err != nil:
		rec.Error, rec.ErrorAt = err.Error(), now
		p.log.Warn("control plane: cannot resolve the deployment's source", "deployment", name, "error", err)
	case rev == prev.Revision && prev.Error == "":
		return
	default:
		if rev != prev.Revision {
			p.log.Info("control plane: new revision", "deployment", name, "revision", rev, "previous", prev.Revision)
		}
		rec.Revision, rec.ResolvedAt, rec.Error, rec.ErrorAt = rev, now, "", time.Time{}
	}
	b, _ := json.Marshal(rec)
	if err := rdb.SetPlaneRevision(ctx, p.cfg.Client, p.ks.PlaneRevisions(), name, b); err != nil && ctx.Err() == nil {
		p.log.Warn("control plane: record revision", "deployment", name, "error", err)
	}
}

// newID returns a new worker ID of pool.
func newID(pool string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return pool + "-" + hex.EncodeToString(b)
}

// Read returns the live workers of app's control plane and the revisions
// of its deployments, from Redis: what GET /v1/workers and leat inspect
// show. Workers come sorted by pool and ID.
func Read(ctx context.Context, c redis.UniversalClient, prefix, app string) (View, error) {
	ks := rdb.NewKeySpace(prefix, app)
	recs, err := rdb.PlaneWorkers(ctx, c, ks.PlaneWorkers(), ks.PlaneWorker, time.Now())
	if err != nil {
		return View{}, err
	}
	v := View{Workers: []Worker{}, Deployments: []Revision{}}
	for _, b := range recs {
		var w Worker
		if json.Unmarshal(b, &w) == nil {
			v.Workers = append(v.Workers, w)
		}
	}
	sort.Slice(v.Workers, func(i, j int) bool {
		a, b := v.Workers[i], v.Workers[j]
		return a.Pool < b.Pool || a.Pool == b.Pool && a.ID < b.ID
	})
	raw, err := rdb.PlaneRevisions(ctx, c, ks.PlaneRevisions())
	if err != nil {
		return View{}, err
	}
	for _, name := range sortedKeys(raw) {
		var r Revision
		if json.Unmarshal([]byte(raw[name]), &r) == nil {
			v.Deployments = append(v.Deployments, r)
		}
	}
	return v, nil
}
