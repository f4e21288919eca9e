package controlplane

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// Hello is the body of POST /v1/workers/register.
type Hello struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
}

// Registration answers a registration: who the worker is, how it reaches
// Redis, and what it runs.
type Registration struct {
	ID        string        `json:"id"`
	App       string        `json:"app"`
	Prefix    string        `json:"prefix"`
	RedisURL  string        `json:"redis_url"`
	Heartbeat time.Duration `json:"heartbeat"`
	Assignment
}

// Assignment is what a pool's workers run: its queues and the deployment at
// a revision. Digest names the deployment's settings (not the revision): a
// worker rolls out when the revision or the digest changes.
type Assignment struct {
	Pool         string            `json:"pool"`
	Queues       []string          `json:"queues"`
	Concurrency  int               `json:"concurrency,omitempty"`
	Deployment   string            `json:"deployment"`
	Source       Source            `json:"source"`
	Setup        []string          `json:"setup,omitempty"`
	SetupTimeout time.Duration     `json:"setup_timeout"`
	Start        string            `json:"start"`
	Env          map[string]string `json:"env,omitempty"`
	// Revision is the revision to run; "" while the control plane has not
	// resolved the source yet.
	Revision string `json:"revision"`
	Digest   string `json:"digest"`
}

// digest names an assignment's settings.
func (a Assignment) digest() string {
	a.Revision, a.Digest = "", ""
	b, _ := json.Marshal(a)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// Health values of a heartbeat.
const (
	HealthStarting = "starting" // registered, nothing running yet
	HealthOK       = "ok"       // its handlers run the desired revision
	HealthDegraded = "degraded" // it runs, but not the desired revision (a setup failed, say)
	HealthFailing  = "failing"  // nothing runs
)

// Beat is the body of POST /v1/workers/{id}/heartbeat.
type Beat struct {
	// Revision and Digest are what its handlers run ("" when none).
	Revision string `json:"revision"`
	Digest   string `json:"digest"`
	Health   string `json:"health"`
	// Error says why the worker is not healthy.
	Error string `json:"error,omitempty"`
	// Handlers is how many handler processes are alive.
	Handlers int `json:"handlers"`
	// Setup is the last setup's outcome.
	Setup *SetupOutcome `json:"setup,omitempty"`
}

// SetupOutcome is how a revision's setup ended.
type SetupOutcome struct {
	Revision string    `json:"revision"`
	OK       bool      `json:"ok"`
	Error    string    `json:"error,omitempty"`
	At       time.Time `json:"at"`
}

// Worker is a worker's record, as the control plane keeps it in Redis and
// GET /v1/workers and leat inspect show it.
type Worker struct {
	ID         string        `json:"id"`
	Pool       string        `json:"pool"`
	Host       string        `json:"host"`
	PID        int           `json:"pid"`
	Version    string        `json:"version"`
	Remote     string        `json:"remote"`
	Registered time.Time     `json:"registered"`
	Seen       time.Time     `json:"seen"`
	Queues     []string      `json:"queues"`
	Deployment string        `json:"deployment"`
	Desired    string        `json:"desired_revision"`
	Revision   string        `json:"revision"`
	Health     string        `json:"health"`
	Error      string        `json:"error,omitempty"`
	Handlers   int           `json:"handlers"`
	Setup      *SetupOutcome `json:"setup,omitempty"`
}

// Revision is what the control plane last resolved a deployment's source
// to.
type Revision struct {
	Deployment string    `json:"deployment"`
	Source     string    `json:"source"`
	Revision   string    `json:"revision"`
	ResolvedAt time.Time `json:"resolved_at"`
	Error      string    `json:"error,omitempty"`
	ErrorAt    time.Time `json:"error_at,omitzero"`
}

// View is what GET /v1/workers answers: the live workers and the
// deployments' revisions.
type View struct {
	Workers     []Worker   `json:"workers"`
	Deployments []Revision `json:"deployments"`
}

// Clean returns s fit for a heartbeat's text fields: control characters
// but newlines and tabs dropped (a carriage return ends its line: progress
// bars keep their last state), cut to maxText bytes on a character
// boundary.
func Clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\r':
			b.WriteByte('\n')
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r == utf8.RuneError:
		default:
			if b.Len()+utf8.RuneLen(r) > maxText {
				return b.String()
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
