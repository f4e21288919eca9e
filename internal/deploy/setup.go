package deploy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// markerSuffix ends the name of a revision's setup marker.
const markerSuffix = ".setup"

// tailLines is how many of a failed step's last output lines its error
// carries.
const tailLines = 20

// Setup runs steps (each a /bin/sh command line) one after the other in the
// directory of revision rev, with env as their whole environment, unless a
// setup with the same steps and environment succeeded there already. It
// writes the marker once every step succeeded; a step that fails (or runs
// past ctx's deadline) stops the setup with an error naming it, with the
// last lines it printed. It reports whether the steps ran.
func (d *Dir) Setup(ctx context.Context, rev string, steps, env []string) (ran bool, err error) {
	if !ValidRevision(rev) {
		return false, fmt.Errorf("revision %q: want a full commit ID or digest in hex", rev)
	}
	unlock, err := d.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	marker := filepath.Join(d.root, rev+markerSuffix)
	want := setupDigest(steps, env)
	if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == want {
		return false, nil
	}
	_ = os.Remove(marker)
	dir := d.Path(rev)
	for i, step := range steps {
		if err := runStep(ctx, dir, step, env); err != nil {
			return true, fmt.Errorf("setup step %d (%s): %w", i+1, step, err)
		}
	}
	return true, os.WriteFile(marker, []byte(want+"\n"), 0o640)
}

// setupDigest names a setup: its steps and environment.
func setupDigest(steps, env []string) string {
	h := sha256.New()
	for _, s := range steps {
		fmt.Fprintf(h, "step %q\n", s)
	}
	for _, e := range env {
		fmt.Fprintf(h, "env %q\n", e)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// runStep runs one step, its output kept to its last lines.
func runStep(ctx context.Context, dir, step string, env []string) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", step)
	cmd.Dir, cmd.Env = dir, env
	tail := &lineTail{max: tailLines}
	cmd.Stdout, cmd.Stderr = tail, tail
	cmd.WaitDelay = 5 * time.Second
	ownGroup(cmd)
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
	}
	if out := tail.String(); out != "" {
		return fmt.Errorf("%w; last output:\n%s", err, out)
	}
	return err
}

// lineTail keeps the last max lines written to it, 512 bytes each at most.
type lineTail struct {
	mu      sync.Mutex
	max     int
	lines   []string
	partial []byte
}

func (t *lineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(t.partial) < 512 {
				t.partial = append(t.partial, p[:min(len(p), 512-len(t.partial))]...)
			}
			break
		}
		if len(t.partial) < 512 {
			t.partial = append(t.partial, p[:min(i, 512-len(t.partial))]...)
		}
		t.push(string(t.partial))
		t.partial = t.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (t *lineTail) push(line string) {
	t.lines = append(t.lines, strings.TrimRight(line, "\r"))
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.partial) > 0 {
		lines = append(lines[:len(lines):len(lines)], string(t.partial))
	}
	return strings.Join(lines, "\n")
}
