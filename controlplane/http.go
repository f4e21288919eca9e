package controlplane

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/leatdev/leat/internal/deploy"
	"github.com/leatdev/leat/internal/rdb"
)

// maxBody bounds a worker's request body.
const maxBody = 64 << 10

// maxText bounds a text field of a worker's request (its errors).
const maxText = 4096

var idRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}-[0-9a-f]{16}$`)

// Routes are the workers' endpoints, outside the API's token: each
// request carries a pool's token instead.
const (
	RouteRegister  = "POST /v1/workers/register"
	RouteHeartbeat = "POST /v1/workers/{id}/heartbeat"
)

// Handler serves RouteRegister and RouteHeartbeat.
func (p *Plane) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(RouteRegister, p.guard(p.register))
	mux.HandleFunc(RouteHeartbeat, p.guard(p.heartbeat))
	return mux
}

// guard answers no-store, checks the pool token and the body's type and
// size, then calls fn with the pool. A refused token is logged with the
// remote address; the answer says no more than that it was refused.
func (p *Plane) guard(fn func(w http.ResponseWriter, r *http.Request, pool namedPool)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		pool, ok := p.poolOf(strings.TrimSpace(token))
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			p.log.Warn("control plane: worker token refused", "remote", r.RemoteAddr, "route", r.Method+" "+r.URL.Path)
			w.Header().Set("WWW-Authenticate", `Bearer realm="leat workers"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong worker token")
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "bad_content_type", "send the body as application/json")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		fn(w, r, pool)
	}
}

// decode reads the JSON body into v: one object, no unknown field.
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if !utf8.Valid(b) {
		return errors.New("body is not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("body holds more than one JSON value")
	}
	return nil
}

// checkText refuses a text field longer than n or holding control
// characters but newlines and tabs.
func checkText(name, s string, n int) error {
	if len(s) > n {
		return fmt.Errorf("%s is over %d bytes", name, n)
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return fmt.Errorf("%s holds control characters", name)
		}
	}
	return nil
}

func (p *Plane) register(w http.ResponseWriter, r *http.Request, pool namedPool) {
	var h Hello
	err := decode(r, &h)
	if err == nil {
		err = errors.Join(checkText("host", h.Host, 255), checkText("version", h.Version, 64))
		if h.PID < 0 {
			err = errors.Join(err, errors.New("pid is negative"))
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	ctx := r.Context()
	redisURL, err := p.workerURL(ctx, pool)
	if err != nil {
		p.internal(w, r, err)
		return
	}
	a, err := p.assignment(ctx, pool)
	if err != nil {
		p.internal(w, r, err)
		return
	}
	now := time.Now().UTC()
	rec := Worker{
		ID: newID(pool.name), Pool: pool.name, Host: h.Host, PID: h.PID, Version: h.Version, Remote: r.RemoteAddr,
		Registered: now, Seen: now, Queues: pool.Queues, Deployment: pool.Deployment, Desired: a.Revision,
		Health: HealthStarting,
	}
	if err := p.save(r, rec, pool); err != nil {
		p.internal(w, r, err)
		return
	}
	p.log.Info("control plane: worker registered", "worker", rec.ID, "pool", pool.name, "host", h.Host, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, Registration{ID: rec.ID, App: p.ks.App, Prefix: p.ks.Prefix, RedisURL: redisURL,
		Heartbeat: pool.Heartbeat, Assignment: a})
}

func (p *Plane) heartbeat(w http.ResponseWriter, r *http.Request, pool namedPool) {
	id := r.PathValue("id")
	var b Beat
	err := decode(r, &b)
	if err == nil {
		err = checkBeat(b)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	ctx := r.Context()
	var rec Worker
	found := false
	if idRE.MatchString(id) {
		raw, ok, err := rdb.PlaneWorker(ctx, p.cfg.Client, p.ks.PlaneWorker(id))
		if err != nil {
			p.internal(w, r, err)
			return
		}
		found = ok && json.Unmarshal(raw, &rec) == nil && rec.Pool == pool.name
	}
	if !found {
		// Expired (silent for three heartbeats), or another pool's:
		// the worker registers again.
		writeError(w, http.StatusNotFound, "unknown_worker", "no such worker: register again")
		return
	}
	a, err := p.assignment(ctx, pool)
	if err != nil {
		p.internal(w, r, err)
		return
	}
	rec.Seen, rec.Remote = time.Now().UTC(), r.RemoteAddr
	rec.Queues, rec.Deployment, rec.Desired = pool.Queues, pool.Deployment, a.Revision
	rec.Revision, rec.Health, rec.Error, rec.Handlers = b.Revision, b.Health, b.Error, b.Handlers
	if b.Setup != nil {
		rec.Setup = b.Setup
	}
	if err := p.save(r, rec, pool); err != nil {
		p.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// checkBeat refuses a heartbeat with values out of their form.
func checkBeat(b Beat) error {
	var errs []error
	if b.Revision != "" && !deploy.ValidRevision(b.Revision) {
		errs = append(errs, errors.New("revision: want a full commit ID or digest in hex"))
	}
	if len(b.Digest) > 64 {
		errs = append(errs, errors.New("digest is over 64 bytes"))
	}
	switch b.Health {
	case HealthStarting, HealthOK, HealthDegraded, HealthFailing:
	default:
		errs = append(errs, fmt.Errorf("health %q: want starting, ok, degraded or failing", b.Health))
	}
	if b.Handlers < 0 || b.Handlers > 1_000_000 {
		errs = append(errs, errors.New("handlers out of range"))
	}
	errs = append(errs, checkText("error", b.Error, maxText))
	if s := b.Setup; s != nil {
		if s.Revision != "" && !deploy.ValidRevision(s.Revision) {
			errs = append(errs, errors.New("setup.revision: want a full commit ID or digest in hex"))
		}
		errs = append(errs, checkText("setup.error", s.Error, maxText))
	}
	return errors.Join(errs...)
}

// save writes rec to live for three heartbeats of pool.
func (p *Plane) save(r *http.Request, rec Worker, pool namedPool) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return rdb.SavePlaneWorker(r.Context(), p.cfg.Client, p.ks.PlaneWorkers(), p.ks.PlaneWorker(rec.ID), rec.ID, b,
		3*pool.Heartbeat, time.Now())
}

// internal answers 500 without detail and logs the error.
func (p *Plane) internal(w http.ResponseWriter, r *http.Request, err error) {
	p.log.Error("control plane: request failed", "route", r.Method+" "+r.URL.Path, "error", err)
	writeError(w, http.StatusInternalServerError, "internal", "internal error")
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"code": code, "error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
