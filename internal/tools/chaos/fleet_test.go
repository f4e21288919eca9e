//go:build linux

package chaos_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// fleet is the runner's worker processes, each connected to Redis through
// a proxy of its own, so that its link can be frozen.
type fleet struct {
	t      *testing.T
	bin    string // the chaosworker program
	dir    string // record and log files
	url    string // the Redis server
	prefix string

	mu    sync.Mutex
	procs []*proc // every worker started, in start order
}

// proc is one worker process.
type proc struct {
	n        int
	id       string
	cmd      *exec.Cmd
	proxy    *redistest.Proxy
	out, log string        // record file, stderr
	done     chan struct{} // closed when the process exited
	expected atomic.Bool   // its exit was caused by the runner
	err      error         // exit status, after done
}

// buildWorker builds the chaosworker program into dir.
func buildWorker(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "chaosworker")
	cmd := exec.Command("go", "build", "-o", bin, "./chaosworker")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build chaosworker: %v\n%s", err, out)
	}
	return bin
}

// start starts a new worker.
func (f *fleet) start() *proc {
	f.t.Helper()
	f.mu.Lock()
	n := len(f.procs) + 1
	f.mu.Unlock()
	p := &proc{
		n:     n,
		id:    fmt.Sprintf("w%d", n),
		proxy: redistest.NewProxy(f.t, f.url),
		out:   filepath.Join(f.dir, fmt.Sprintf("w%d.records", n)),
		log:   filepath.Join(f.dir, fmt.Sprintf("w%d.log", n)),
		done:  make(chan struct{}),
	}
	logf, err := os.Create(p.log)
	if err != nil {
		f.t.Fatal(err)
	}
	p.cmd = exec.Command(f.bin, "-redis", p.proxy.URL(), "-prefix", f.prefix, "-id", p.id, "-out", p.out)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// The kernel kills a worker whose runner died.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		f.t.Fatalf("start worker: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	return p
}

// all returns every worker started.
func (f *fleet) all() []*proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*proc(nil), f.procs...)
}

// alive returns the workers that have not exited.
func (f *fleet) alive() []*proc {
	var out []*proc
	for _, p := range f.all() {
		if !p.exited() {
			out = append(out, p)
		}
	}
	return out
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the worker.
func (p *proc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// kill SIGKILLs the worker and waits for its exit.
func (p *proc) kill() {
	p.expected.Store(true)
	_ = p.signal(syscall.SIGKILL)
	<-p.done
}

// stop stops the worker gracefully (SIGTERM) and waits up to d for its
// exit; then it kills it and reports false.
func (p *proc) stop(d time.Duration) bool {
	p.expected.Store(true)
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err == nil
	case <-time.After(d):
		p.kill()
		return false
	}
}

// stopped reports whether the process is stopped (by SIGSTOP), from
// /proc/PID/stat.
func (p *proc) stopped() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
}

// tail returns the last lines of the worker's log.
func (p *proc) tail(lines int) string {
	b, _ := os.ReadFile(p.log)
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
