package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the sentinel of StartSentinel monitors.
const SentinelMaster = "leat"

// Sentinel is a master, a replica and one Redis Sentinel monitoring them,
// started for one test (StartSentinel).
type Sentinel struct {
	Master, Replica *Server
	Addr            string // the sentinel's host:port
	cmd             *exec.Cmd
	exited          chan struct{}
	dir             string
}

// sentinelDownAfter is how long the sentinel waits for a master that does
// not answer before it fails it over (down-after-milliseconds).
const sentinelDownAfter = time.Second

// StartSentinel starts a master, a replica of it in sync, and a sentinel
// (quorum 1, down-after 1s) monitoring them as SentinelMaster, and stops
// them when tb ends. It skips or fails tb like Start when redis-server is
// missing.
func StartSentinel(tb testing.TB) *Sentinel { return startSentinel(tb) }

// StartSentinelStubbornMaster is StartSentinel with a master that refuses
// to become a replica (REPLICAOF and SLAVEOF renamed away): once the
// sentinel has failed it over, it stays up and writable, as an old master
// cut off from the sentinels but not from its clients would, and keeps the
// clients that do not move.
func StartSentinelStubbornMaster(tb testing.TB) *Sentinel {
	return startSentinel(tb, "--rename-command", "REPLICAOF", "", "--rename-command", "SLAVEOF", "")
}

func startSentinel(tb testing.TB, masterArgs ...string) *Sentinel {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(tb, fmt.Errorf("redis-server not found in PATH"))
	}
	master, err := startServerArgs(masterArgs...)
	if err != nil {
		unavailable(tb, err)
	}
	tb.Cleanup(master.Stop)
	replica, err := startServerArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(replica.Stop)
	waitNode(tb, replica.Addr, time.Now().Add(20*time.Second), func(ctx context.Context, nc *redis.Client) (bool, string) {
		repl, err := nc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(repl, "master_link_status:up"), "replica not in sync: " + repl
	})
	s := &Sentinel{Master: master, Replica: replica}
	if s.dir, err = os.MkdirTemp("", "leat-sentinel-"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.stop)
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	s.Addr = "127.0.0.1:" + strconv.Itoa(port)
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 10000\n",
		port, s.dir, SentinelMaster, master.port, SentinelMaster, sentinelDownAfter.Milliseconds(), SentinelMaster)
	path := filepath.Join(s.dir, "sentinel.conf") // the sentinel rewrites it
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.cmd = exec.Command(bin, path, "--sentinel")
	bindToParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	// Ready once it knows the replica (it learns it from the master).
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	defer sc.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rs, err := sc.Replicas(context.Background(), SentinelMaster).Result()
		if err == nil && len(rs) == 1 {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: sentinel not ready: %v %v", rs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Client returns a failover client of the sentinel's master, closed when tb
// ends.
func (s *Sentinel) Client(tb testing.TB) *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: []string{s.Addr}})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// KillMaster kills the master with SIGKILL, as a crash would, and returns
// when.
func (s *Sentinel) KillMaster() time.Time {
	s.Master.kill()
	return time.Now()
}

// Failover asks the sentinel for a failover while the master is up
// (SENTINEL FAILOVER) and returns when it was asked.
func (s *Sentinel) Failover(tb testing.TB) time.Time {
	tb.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	defer sc.Close()
	if err := sc.Failover(context.Background(), SentinelMaster).Err(); err != nil {
		tb.Fatalf("redistest: SENTINEL FAILOVER: %v", err)
	}
	return time.Now()
}

// WaitPromoted waits, up to timeout, until the sentinel names the replica
// as the master and the replica says it is one; it returns when it saw
// both.
func (s *Sentinel) WaitPromoted(tb testing.TB, timeout time.Duration) time.Time {
	tb.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	defer sc.Close()
	rc := redis.NewClient(&redis.Options{Addr: s.Replica.Addr})
	defer rc.Close()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		role, rerr := rc.Do(ctx, "ROLE").Slice()
		cancel()
		if err == nil && len(addr) == 2 && addr[0]+":"+addr[1] == s.Replica.Addr && rerr == nil && len(role) > 0 && role[0] == "master" {
			return time.Now()
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: replica %s not promoted within %s (sentinel says %v %v; role %v %v)", s.Replica.Addr, timeout, addr, err, role, rerr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *Sentinel) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}
