package redistest

import (
	"context"
	"crypto/tls"
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
	Addr            string   // the sentinel's host:port
	TLS             TLSFiles // with StartSentinelTLS: the certificates of all three
	tls             *tls.Config
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
func StartSentinel(tb testing.TB) *Sentinel { return startSentinel(tb, nil) }

// StartSentinelTLS is StartSentinel with TLS everywhere: the master, the
// replica and the sentinel listen with TLS only (certificates from
// GenerateTLS, in s.TLS; no client certificate asked), and replicate and
// monitor over TLS. With stubborn, the master refuses to become a replica
// (see StartSentinelStubbornMaster).
func StartSentinelTLS(tb testing.TB, stubborn bool) *Sentinel {
	tb.Helper()
	files := GenerateTLS(tb)
	if stubborn {
		return startSentinel(tb, &files, stubbornMaster...)
	}
	return startSentinel(tb, &files)
}

// stubbornMaster are the arguments of a master that refuses to become a
// replica.
var stubbornMaster = []string{"--rename-command", "REPLICAOF", "", "--rename-command", "SLAVEOF", ""}

// StartSentinelStubbornMaster is StartSentinel with a master that refuses
// to become a replica (REPLICAOF and SLAVEOF renamed away): once the
// sentinel has failed it over, it stays up and writable, as an old master
// cut off from the sentinels but not from its clients would, and keeps the
// clients that do not move.
func StartSentinelStubbornMaster(tb testing.TB) *Sentinel {
	return startSentinel(tb, nil, stubbornMaster...)
}

func startSentinel(tb testing.TB, files *TLSFiles, masterArgs ...string) *Sentinel {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(tb, fmt.Errorf("redis-server not found in PATH"))
	}
	s := &Sentinel{}
	var tlsArgs []string
	tlsConf := ""
	if files != nil {
		s.TLS = *files
		if s.tls, err = files.Config(false); err != nil {
			tb.Fatalf("redistest: %v", err)
		}
		tlsArgs = []string{"--tls-cert-file", files.ServerCert, "--tls-key-file", files.ServerKey,
			"--tls-ca-cert-file", files.CA, "--tls-auth-clients", "no", "--tls-replication", "yes"}
		tlsConf = fmt.Sprintf("tls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\ntls-auth-clients no\ntls-replication yes\n",
			files.ServerCert, files.ServerKey, files.CA)
	}
	master, err := startServerTLS(s.tls, append(tlsArgs, masterArgs...)...)
	if err != nil {
		unavailable(tb, err)
	}
	tb.Cleanup(master.Stop)
	replica, err := startServerTLS(s.tls, append(tlsArgs, "--replicaof", "127.0.0.1", strconv.Itoa(master.port))...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(replica.Stop)
	s.Master, s.Replica = master, replica
	rc := redis.NewClient(s.options(replica.Addr))
	defer rc.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		repl, err := rc.Info(ctx, "replication").Result()
		cancel()
		if err == nil && strings.Contains(repl, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: replica not in sync: %s %v", repl, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.dir, err = os.MkdirTemp("", "leat-sentinel-"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.stop)
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	s.Addr = "127.0.0.1:" + strconv.Itoa(port)
	listen := fmt.Sprintf("port %d\n", port)
	if files != nil {
		listen = fmt.Sprintf("port 0\ntls-port %d\n", port)
	}
	conf := fmt.Sprintf("%sbind 127.0.0.1\ndir %s\n%ssentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 10000\n",
		listen, s.dir, tlsConf, SentinelMaster, master.port, SentinelMaster, sentinelDownAfter.Milliseconds(), SentinelMaster)
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
	// Ready once it knows the replica (it learns it from the master) and
	// would promote it: connected, its link to the master up, and its own
	// INFO read. A sentinel that has the replica only from the master's
	// INFO answers SENTINEL FAILOVER with NOGOODSLAVE.
	sc := redis.NewSentinelClient(s.options(s.Addr))
	defer sc.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rs, err := sc.Replicas(context.Background(), SentinelMaster).Result()
		if err == nil && len(rs) == 1 && promotable(rs[0]) {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: sentinel not ready: %v %v", rs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// promotable reports whether a replica, as SENTINEL REPLICAS describes it,
// is one the sentinel would promote: flagged a replica and nothing else
// (not disconnected, not down), its link to the master up, and its INFO
// read within the sentinel's validity window.
func promotable(r map[string]string) bool {
	refresh, err := strconv.ParseInt(r["info-refresh"], 10, 64)
	return r["flags"] == "slave" && r["master-link-status"] == "ok" && err == nil && refresh < 10_000
}

// Client returns a failover client of the sentinel's master, closed when tb
// ends.
func (s *Sentinel) Client(tb testing.TB) *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: []string{s.Addr}, TLSConfig: s.tls})
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
	sc := redis.NewSentinelClient(s.options(s.Addr))
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
	sc := redis.NewSentinelClient(s.options(s.Addr))
	defer sc.Close()
	rc := redis.NewClient(s.options(s.Replica.Addr))
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

// ServerOf returns the address (127.0.0.1:PORT, the TLS port of a server
// that listens with TLS only) of the server a command through c reaches, or
// the command's error: which server of a Sentinel setup a client is on.
func ServerOf(c interface {
	ConfigGet(ctx context.Context, parameter string) *redis.MapStringStringCmd
}) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ports, err := c.ConfigGet(ctx, "*port").Result()
	if err != nil {
		return err.Error()
	}
	if p := ports["tls-port"]; p != "" && p != "0" {
		return "127.0.0.1:" + p
	}
	return "127.0.0.1:" + ports["port"]
}

// options are the options of a client of one of s's servers.
func (s *Sentinel) options(addr string) *redis.Options {
	return &redis.Options{Addr: addr, TLSConfig: s.tls, MaxRetries: -1, DialTimeout: time.Second}
}

func (s *Sentinel) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}
