package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// tlsShop is app "shop" on a TLS-only server, with the global flags that
// reach it (the CA, and with mutual TLS the client certificate).
func tlsShop(t *testing.T, mutual bool) (shop, *redistest.TLSServer) {
	srv := redistest.StartTLS(t, mutual)
	s := shop{
		client: srv.Client(t),
		keys:   rdb.NewKeySpace("leat", "shop"),
		global: []string{"--redis", srv.URL, "--tls-ca", srv.Files.CA, "--prefix", "leat", "--app", "shop"},
	}
	if mutual {
		s.global = append(s.global, "--tls-cert", srv.Files.ClientCert, "--tls-key", srv.Files.ClientKey)
	}
	return s, srv
}

// A worker and sendmany reach a server over TLS, with and without a client
// certificate, and reset works too.
func TestTLS(t *testing.T) {
	t.Parallel()
	for _, mutual := range []bool{false, true} {
		name := "server-only"
		if mutual {
			name = "mutual"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, _ := tlsShop(t, mutual)
			ta := &ticksApp{}
			b := start(t, ta.setup, s.quiet("worker")...)
			a := ta.waitApp(t, b)
			waitUntil(t, b, "partitions owned", func() bool { return len(a.Executors()[0].Owned()) == 4 })
			if r := run(t, ta.setup, ticks(30), s.args("sendmany", "ticks", "-")...); r.status != 0 {
				t.Fatalf("sendmany: %+v", r)
			}
			if r := run(t, nil, "", s.args("send", "ticks", `{"key":"k1","n":30}`)...); r.status != 0 {
				t.Fatalf("send: %+v", r)
			}
			waitUntil(t, b, "31 events processed", func() bool { return ta.tl.count() == 31 })
			if r := b.stop(t); r.status != 0 || r.stderr != "" {
				t.Fatalf("stopped worker: %+v", r)
			}
			if r := run(t, nil, "", s.args("reset", "--yes", "ticks/count")...); r.status != 0 {
				t.Fatalf("reset: %+v", r)
			}
		})
	}
}

// Failed TLS connections say why, and what to pass.
func TestTLSErrors(t *testing.T) {
	t.Parallel()
	srv := redistest.StartTLS(t, true)
	other := redistest.GenerateTLS(t) // another CA
	send := []string{"--app", "shop", "send", "ticks", `{"key":"k"}`}
	for _, tc := range []struct {
		name   string
		flags  []string
		status int
		want   []string
	}{
		{"plain URL on a TLS port", []string{"--redis", "redis://" + srv.Addr}, 1,
			[]string{"expects TLS", "rediss://", "redis://" + srv.Addr}},
		{"wrong CA", []string{"--redis", srv.URL, "--tls-ca", other.CA, "--tls-cert", srv.Files.ClientCert, "--tls-key", srv.Files.ClientKey}, 1,
			[]string{"TLS certificate verification failed", "unknown authority", "--tls-ca"}},
		{"no client certificate", []string{"--redis", srv.URL, "--tls-ca", srv.Files.CA}, 1,
			[]string{"asks for a client certificate", "--tls-cert and --tls-key"}},
		{"client certificate of another CA", []string{"--redis", srv.URL, "--tls-ca", srv.Files.CA, "--tls-cert", other.ClientCert, "--tls-key", other.ClientKey}, 1,
			[]string{"dropped the TLS connection", "--tls-cert and --tls-key"}},
		{"wrong server name", []string{"--redis", srv.URL, "--tls-ca", srv.Files.CA, "--tls-server-name", "redis.example",
			"--tls-cert", srv.Files.ClientCert, "--tls-key", srv.Files.ClientKey}, 1,
			[]string{"TLS certificate verification failed", "redis.example", "--tls-server-name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, nil, "", append(tc.flags, send...)...)
			wantFailure(t, r, tc.status, tc.want...)
		})
	}
}

// Bad TLS files are usage errors naming the file and the flag.
func TestTLSFileErrors(t *testing.T) {
	t.Parallel()
	files := redistest.GenerateTLS(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	const url = "rediss://127.0.0.1:1"
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"missing CA", []string{"--redis", url, "--tls-ca", missing}, []string{"--tls-ca", missing, "no such file"}},
		{"CA without certificates", []string{"--redis", url, "--tls-ca", garbage}, []string{"--tls-ca", garbage, "no PEM certificate"}},
		{"certificate without key", []string{"--redis", url, "--tls-cert", files.ClientCert}, []string{"--tls-cert", files.ClientCert, "--tls-key"}},
		{"key without certificate", []string{"--redis", url, "--tls-key", files.ClientKey}, []string{"--tls-key", files.ClientKey, "--tls-cert"}},
		{"missing key", []string{"--redis", url, "--tls-cert", files.ClientCert, "--tls-key", missing}, []string{missing, "no such file"}},
		{"key of another certificate", []string{"--redis", url, "--tls-cert", files.ClientCert, "--tls-key", files.ServerKey},
			[]string{files.ClientCert, files.ServerKey, "does not match"}},
		{"garbage certificate", []string{"--redis", url, "--tls-cert", garbage, "--tls-key", files.ClientKey}, []string{"--tls-cert", garbage}},
		{"files without rediss://", []string{"--redis", "redis://127.0.0.1:1", "--tls-ca", files.CA}, []string{"rediss://", "--tls-ca"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, nil, "", append(tc.flags, "--app", "shop", "send", "ticks", `{"key":"k"}`)...)
			wantFailure(t, r, exitUsage, tc.want...)
		})
	}
}

// The TLS flags have LEAT_* variables, shown in the help.
func TestTLSFlagsHelp(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "", "--help")
	for _, w := range []string{"--tls-ca FILE", "LEAT_TLS_CA", "--tls-cert FILE", "LEAT_TLS_CERT", "--tls-key FILE",
		"LEAT_TLS_KEY", "--tls-server-name NAME", "LEAT_TLS_SERVER_NAME", "LEAT_REDIS_URL rather than this flag"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("help does not mention %q", w)
		}
	}
}
