package cmd

import (
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// TestRedisURLNeverShowsPasswords gives malformed Redis URLs holding a
// password: each is refused before any connection, with a message that shows
// no part of the user-info and says what to write instead.
func TestRedisURLNeverShowsPasswords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want []string
	}{
		// Without a scheme, url.Parse takes "default" for one and the rest
		// for an opaque part.
		{"default:hunter2@127.0.0.1:6379", []string{"no scheme; write redis://USER:PASSWORD@127.0.0.1:6379"}},
		{"127.0.0.1:6379", []string{"no scheme; write redis://127.0.0.1:6379"}},
		// go-redis reads "redis:u:pw@host" as a URL without a host and would
		// connect to 127.0.0.1:6379.
		{"redis:u:hunter2@db.example", []string{"write redis:// with two slashes"}},
		{"rediss:u:hunter2@db.example", []string{"write rediss:// with two slashes"}},
		{"redis://u:hunter2@", []string{"no host; write redis://HOST:PORT"}},
		{"redis://u:hunter2@/0", []string{"no host"}},
		{"unix://u:hunter2@", []string{"no socket path"}},
		// Unescaped '#', '/' and '?' cut the URL inside the password.
		{"redis://u:hun#ter2@db.example:6379", []string{"'/', '?' or '#'", "percent-encode", "%23"}},
		{"redis://u:hun/ter2@db.example:6379", []string{"'/', '?' or '#'", "%2F"}},
		{"redis://u:hun?ter2@db.example:6379", []string{"'/', '?' or '#'", "%3F"}},
		{"redis://u:hunter2%zz@db.example:6379", []string{"percent-encode them"}},
		{"redis://u:hun ter2@db.example:6379", []string{"percent-encode them"}},
		{"redis://u:hunter2@db.example:63x9", []string{"the port is not a number"}},
		{"redis://:hunter2", []string{"the port is not a number"}},
		{"http://u:hunter2@db.example", []string{`scheme "http" is not supported`}},
		{"default:hunter2@db.example://x", []string{"no scheme"}},
		{"redis://u:hunter2@db.example:6379/x", []string{"invalid database number"}},
		{"", []string{"it is empty"}},
		// Cluster URLs, which name more nodes with addr parameters, and
		// any URL with --cluster.
		{"redis://u:hunter2@db.example:6379?addr=db2.example:6379&addr=db3", []string{"unable to parse addr param: db3"}},
		{"redis://u:hunter2@db.example:6379/2?addr=db2.example:6379", []string{"a Redis Cluster has database 0 only"}},
		{"rediss://u:hunter2@db.example:6379?addr=db2.example:6379&ssl=1", []string{"unexpected option: ssl"}},
		{"unix://u:hunter2@/tmp/redis.sock?addr=db2.example:6379", []string{"a Redis Cluster is reached over TCP"}},
		{"redis://u:hun#ter2@db.example:6379?addr=db2.example:6379", []string{"'/', '?' or '#'", "%23"}},
		{"--cluster redis://u:hunter2@db.example:6379/1", []string{"a Redis Cluster has database 0 only"}},
		{"--cluster unix://u:hunter2@/tmp/redis.sock", []string{"a Redis Cluster is reached over TCP"}},
		{"--cluster redis://u:hunter2@db.example:6379?dial_timeout=soon", []string{"invalid dial_timeout"}},
		// Sentinel URLs, which name the master with master_name.
		{"redis://u:hunter2@sentinel.example:26379?master_name=", []string{"master_name is empty"}},
		{"redis://u:hunter2@sentinel.example:26379?master_name=m&replica_only=true", []string{"replica_only sends commands to replicas"}},
		{"redis://u:hunter2@sentinel.example:26379?master_name=m&route_by_latency=1", []string{"route_by_latency sends commands to replicas"}},
		{"redis://u:hunter2@sentinel.example:26379?master_name=m&addr=s2", []string{"unable to parse addr param: s2"}},
		{"rediss://u:hunter2@sentinel.example:26379?master_name=m&ssl=1", []string{"unexpected option: ssl"}},
		{"redis://u:hunter2@sentinel.example:26379/x?master_name=m", []string{"invalid database number"}},
		{"unix://u:hunter2@/tmp/sentinel.sock?master_name=m", []string{"sentinels are reached over TCP"}},
		{"--cluster redis://u:hunter2@sentinel.example:26379?master_name=m", []string{"not a Redis Cluster: drop --cluster"}},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			global := []string{"--app", "shop", "--redis", tc.url}
			if u, ok := strings.CutPrefix(tc.url, "--cluster "); ok {
				global = []string{"--app", "shop", "--cluster", "--redis", u}
			}
			r := run(t, nil, "", append(global, "send", "--key", "k", "orders", `{"k":1}`)...)
			wantFailure(t, r, exitUsage, append([]string{"invalid --redis URL: "}, tc.want...)...)
			for _, secret := range []string{"hunter2", "hun", "ter2", "u:"} {
				if strings.Contains(r.stderr, secret) {
					t.Errorf("stderr %q shows %q", r.stderr, secret)
				}
			}
		})
	}
}

// TestTLSAgainstPlainServer connects with rediss:// to a server without TLS:
// the message says so instead of timing out.
func TestTLSAgainstPlainServer(t *testing.T) {
	t.Parallel()
	addr := strings.TrimPrefix(redistest.URL(t), "redis://")
	r := run(t, nil, "", "--app", "shop", "--redis", "rediss://u:hunter2@"+addr, "send", "--key", "k", "orders", `{"k":1}`)
	wantFailure(t, r, exitFailure, "cannot reach Redis at rediss://"+addr, "it looks like TLS is not enabled there", "redis://")
	if strings.Contains(r.stderr, "hunter2") {
		t.Errorf("stderr %q shows the password", r.stderr)
	}
}

// FuzzRedisURLSecrets: whatever surrounds a password in a --redis value,
// the checks and the redaction never show it.
func FuzzRedisURLSecrets(f *testing.F) {
	for _, s := range []string{"redis://u:%s@host:6379", "default:%s@host:6379", "redis:u:%s@host", "redis://u:p#%s@host/0?x",
		"rediss://:%s@h", "%s", "unix://u:%s@/tmp/s", "redis://u:%s@[::1]:6379/2",
		"redis://u:%s@h:1?addr=h2:2&addr=h3", "rediss://%s@h:1/3?addr=h2:2"} {
		f.Add(s)
	}
	const secret = "Zq9SECRETx7"
	f.Fuzz(func(t *testing.T, form string) {
		if strings.Count(form, "%s") != 1 || strings.Contains(form, "%%") {
			return
		}
		raw := strings.Replace(form, "%s", secret, 1)
		start := 0
		if i := strings.Index(raw, "://"); i >= 0 {
			start = i + 3
		}
		if at := strings.Index(raw, secret); at < start || at > strings.LastIndex(raw, "@") {
			return // not in the user-info (a scheme, a host, a path): not secret
		}
		if err := checkRedisURL(raw); err != nil && strings.Contains(err.Error(), secret) {
			t.Fatalf("checkRedisURL(%q) shows the password: %v", raw, err)
		}
		if err := checkURL(raw, true); err != nil && strings.Contains(err.Error(), secret) {
			t.Fatalf("checkURL(%q, cluster) shows the password: %v", raw, err)
		}
		if out := redactURL(raw); strings.Contains(out, secret) {
			t.Fatalf("redactURL(%q) = %q", raw, out)
		}
	})
}
