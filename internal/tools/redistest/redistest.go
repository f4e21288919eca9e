// Package redistest starts real redis-server processes for leat's tests.
//
// A test package calls [Main] from its TestMain. The first test that asks for
// a client with [Client] starts one redis-server for the whole package (on a
// unix socket in a temporary directory, without persistence); Main stops it
// after the tests ran and then checks for leaked goroutines. Each test gets
// its own key prefix, so tests of one package run in parallel on one server.
//
// When LEAT_TEST_REDIS_URL is set, tests use that server instead and no
// process is started. When redis-server is missing, tests are skipped with the
// command that installs it, except under CI=true, where they fail.
//
// Tests that restart or stop Redis start a private server with [Start];
// [StartCluster] starts a Redis Cluster; [StartClusterReplicas] one with
// replicas, whose masters a test can kill ([Cluster.Kill]) and wait for a
// replica to take over ([Cluster.WaitFailover]).
package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// InstallHint is the command that installs redis-server on Debian or Ubuntu.
const InstallHint = "apt-get install -y redis-server"

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
	prefixSeq  atomic.Int64
)

// Main runs the tests of a package, stops the shared server and verifies that
// no goroutine leaked. Use it as the body of TestMain.
func Main(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	runAtExit()
	if shared != nil {
		shared.Stop()
	}
	if code == 0 {
		// After a test killed a server (a cluster master), go-redis keeps
		// one goroutine per pool that had a dial fail, trying to dial again
		// every second: it ends at its next try once the client is closed.
		opts = append(opts, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// URL returns the address of the shared server (or LEAT_TEST_REDIS_URL),
// starting it on first use. It skips or fails tb when no server can be had.
func URL(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv("LEAT_TEST_REDIS_URL"); u != "" {
		return u
	}
	sharedOnce.Do(func() { shared, sharedErr = startServer() })
	if sharedErr != nil {
		unavailable(tb, sharedErr)
	}
	return shared.URL
}

// SharedURL is URL for code without a testing.TB, such as runnable
// examples: it returns an error instead of skipping.
func SharedURL() (string, error) {
	if u := os.Getenv("LEAT_TEST_REDIS_URL"); u != "" {
		return u, nil
	}
	sharedOnce.Do(func() { shared, sharedErr = startServer() })
	if sharedErr != nil {
		return "", sharedErr
	}
	return shared.URL, nil
}

// Prefix returns a key prefix no other test of this process uses.
func Prefix(tb testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r == '/':
			return '.'
		}
		return '_'
	}, tb.Name())
	if len(name) > 60 {
		name = name[:60]
	}
	return fmt.Sprintf("t%d-%d.%s", os.Getpid(), prefixSeq.Add(1), name)
}

// Client returns a client of the shared server and a fresh key prefix. The
// client is closed when the test ends; the prefix's keys are deleted.
func Client(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	opt, err := redis.ParseURL(URL(tb))
	if err != nil {
		tb.Fatalf("redistest: bad redis URL: %v", err)
	}
	c := redis.NewClient(opt)
	prefix := Prefix(tb)
	tb.Cleanup(func() {
		defer c.Close()
		if tb.Failed() {
			return // keep keys for inspection
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			c.Unlink(ctx, keys...)
		}
	})
	return c, prefix
}

func unavailable(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("redistest: %v (CI=true, so this is a failure; install it with: %s)", err, InstallHint)
	}
	tb.Skipf("redistest: %v; install it with: %s (or set LEAT_TEST_REDIS_URL)", err, InstallHint)
}

// Server is a redis-server process owned by a test.
type Server struct {
	URL    string
	Addr   string // host:port the server listens on
	dir    string
	port   int
	extra  []string    // more redis-server arguments
	tls    *tls.Config // the server listens with TLS only (see StartTLS)
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// Start starts a private redis-server on a free TCP port for tb and stops it
// when tb ends. Use it for tests that restart, pause or stop Redis.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := startServer()
	if err != nil {
		unavailable(tb, err)
	}
	tb.Cleanup(s.Stop)
	return s
}

func startServer() (*Server, error) { return startServerArgs() }

// startServerArgs starts a redis-server on a free port, with extra
// arguments. A port found free can be taken by another process before the
// server binds it, so a failed start is tried again on another port.
func startServerArgs(extra ...string) (*Server, error) { return startServerTLS(nil, extra...) }

// startServerTLS is startServerArgs for a server that listens with TLS only
// when tc, the configuration of the harness's own client, is not nil.
func startServerTLS(tc *tls.Config, extra ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found in PATH")
	}
	for attempt := 1; ; attempt++ {
		s, err := startOn(bin, extra, tc)
		if err == nil || attempt == 3 {
			return s, err
		}
	}
}

func startOn(bin string, extra []string, tc *tls.Config) (*Server, error) {
	dir, err := os.MkdirTemp("", "leat-redis-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{dir: dir, port: port, extra: extra, tls: tc}
	s.Addr = "127.0.0.1:" + strconv.Itoa(port)
	s.URL = "redis://" + s.Addr
	if tc != nil {
		s.URL = "rediss://" + s.Addr
	}
	if err := s.launch(bin); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) launch(bin string) error {
	ports := []string{"--port", strconv.Itoa(s.port)}
	if s.tls != nil {
		ports = []string{"--port", "0", "--tls-port", strconv.Itoa(s.port)}
	}
	args := append(append(ports,
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--loglevel", "warning",
		"--maxclients", "10000",
	), s.extra...)
	cmd := exec.Command(bin, args...)
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	bindToParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited: // for example, the port was taken meanwhile
			s.forget()
			return fmt.Errorf("redis-server exited: %s", strings.TrimSpace(out.String()))
		default:
		}
		if ping(s.Addr, s.tls) == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.kill()
	return fmt.Errorf("redis-server did not answer within 10s: %s", out.String())
}

func (s *Server) forget() {
	s.mu.Lock()
	s.cmd, s.exited = nil, nil
	s.mu.Unlock()
}

func ping(addr string, tc *tls.Config) error {
	var conn net.Conn
	var err error
	d := &net.Dialer{Timeout: 200 * time.Millisecond}
	if tc != nil {
		conn, err = tls.DialWithDialer(d, "tcp", addr, tc)
	} else {
		conn, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// Stop kills the server (without saving) and waits for it to exit.
func (s *Server) Stop() {
	s.kill()
	os.RemoveAll(s.dir)
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart kills the server and starts a new one on the same port. Data is
// lost, as after a crash of a server without persistence.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.kill()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.launch(bin); err != nil {
		tb.Fatal(err)
	}
}

// Client returns a client of s closed when tb ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, TLSConfig: s.tls})
	tb.Cleanup(func() { c.Close() })
	return c
}
