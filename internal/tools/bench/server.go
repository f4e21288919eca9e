package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// serverStartMax bounds the wait for a started redis-server to answer.
const serverStartMax = 10 * time.Second

// Server is a redis-server process the benchmark started for itself.
type Server struct {
	// URL is the server's address, redis://127.0.0.1:PORT.
	URL  string
	cmd  *exec.Cmd
	dir  string
	exit *job
}

// StartAOFServer starts a redis-server found in PATH on a free local port,
// persisting every write to an append-only file (appendonly yes,
// appendfsync everysec) in a new temporary directory, and waits until it
// answers. Stop stops it and deletes the directory.
func StartAOFServer(ctx context.Context) (*Server, error) { return StartServer(ctx, true) }

// StartServer starts a redis-server found in PATH on a free local port,
// without persistence or, with aof, as StartAOFServer does, and waits until
// it answers. Stop stops it and deletes its directory.
func StartServer(ctx context.Context, aof bool) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("bench: redis-server is not in PATH; install it (apt-get install -y redis-server) or name a running server with --redis")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "leat-bench-aof-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--daemonize", "no", "--logfile", dir + "/redis.log"}
	if aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "everysec")
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: start redis-server: %w", err)
	}
	s := &Server{URL: fmt.Sprintf("redis://127.0.0.1:%d", port), cmd: cmd, dir: dir}
	s.exit = spawn(cmd.Wait)
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(serverStartMax)
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exit.done:
			log, _ := os.ReadFile(dir + "/redis.log")
			os.RemoveAll(dir)
			return nil, fmt.Errorf("bench: redis-server exited: %v\n%s", s.exit.err, log)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Stop()
			return nil, fmt.Errorf("bench: redis-server on port %d not answering after %s: %w", port, serverStartMax, err)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			s.Stop()
			return nil, err
		}
	}
}

// Stop kills the server, waits for it and deletes its directory.
func (s *Server) Stop() {
	s.cmd.Process.Kill()
	s.exit.wait()
	os.RemoveAll(s.dir)
}
