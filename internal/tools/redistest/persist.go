package redistest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// StartPersistent is Start for a server that keeps its data in an
// append-only file in its directory (appendonly yes, appendfsync
// everysec), so that a graceful restart ([Server.Shutdown] then
// [Server.Relaunch]) finds every acknowledged write again. A hard kill can
// lose the last second of writes: that is the everysec setting of Redis.
func StartPersistent(tb testing.TB) *Server {
	tb.Helper()
	s, err := startServerArgs("--appendonly", "yes", "--appendfsync", "everysec")
	if err != nil {
		unavailable(tb, err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Shutdown stops the server gracefully: SIGTERM, on which Redis writes and
// fsyncs its append-only file (when it has one) before it exits, and waits
// for the exit (failing tb after 30 seconds). The directory is kept for
// Relaunch.
func (s *Server) Shutdown(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatalf("redistest: SIGTERM redis-server: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(shutdownTimeout):
		_ = cmd.Process.Kill()
		<-exited
		tb.Fatalf("redistest: redis-server did not exit within %s of SIGTERM (killed)", shutdownTimeout)
	}
}

// shutdownTimeout bounds the wait for a server to exit after SIGTERM.
const shutdownTimeout = 30 * time.Second

// Relaunch starts the server again on its port, with its directory and
// arguments, after Shutdown. It fails tb when the server does not come up.
func (s *Server) Relaunch(tb testing.TB) {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.launch(bin); err != nil {
		tb.Fatalf("redistest: relaunch: %v", err)
	}
}
