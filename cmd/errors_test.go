package cmd

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestUnreachableRedis(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	start := time.Now()
	r := run(t, nil, "", "--redis", "redis://user:hunter2@"+addr, "--app", "shop", "send", "--key", "k", "orders", `{"k":1}`)
	wantFailure(t, r, exitFailure, "cannot reach Redis at redis://"+addr, "connection refused")
	if strings.Contains(r.stderr, "hunter2") {
		t.Errorf("stderr %q shows the password", r.stderr)
	}
	if d := time.Since(start); d >= pingTimeout {
		t.Errorf("took %s, want less than the ping timeout %s", d, pingTimeout)
	}
}

func TestRedisRefuses(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	admin := s.Client(t)
	if err := admin.ConfigSet(context.Background(), "requirepass", "secret").Err(); err != nil {
		t.Fatal(err)
	}
	// A user who may log in but run no command.
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "idle", "on", ">idlepass", "-@all").Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"wrong password", "redis://:hunter2@" + s.Addr, []string{"Redis refused the credentials", "WRONGPASS"}},
		{"no password", "redis://" + s.Addr, []string{"Redis refused the credentials", "NOAUTH"}},
		{"no permission", "redis://idle:idlepass@" + s.Addr, []string{"Redis at redis://" + s.Addr + " answered PING with an error", "NOPERM"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, nil, "", "--redis", tc.url, "--app", "shop", "send", "--key", "k", "orders", `{"k":1}`)
			wantFailure(t, r, exitFailure, tc.want...)
			if strings.Contains(r.stderr, "hunter2") || strings.Contains(r.stderr, "idlepass") {
				t.Errorf("stderr %q shows the password", r.stderr)
			}
		})
	}
}

// TestUsageErrors runs commands that fail before they need Redis, or that
// the server rejects as bad input.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"send without JSON", s.args("send", "orders"), []string{"send: want 2 arguments, STREAM JSON, got 1"}},
		{"sendmany without args", s.args("sendmany"), []string{"sendmany: want 2 arguments"}},
		{"unknown flag after args", s.args("send", "--key", "k", "orders", "{}", "--nope=1"), []string{"send: want 2 arguments, STREAM JSON, got 3; --nope is not a flag of this command"}},
		{"bad header", s.args("send", "--header", "novalue", "--key", "k", "orders", `{"k":1}`), []string{`--header "novalue": want NAME=VALUE`}},
		{"empty header name", s.args("send", "--header", "=v", "--key", "k", "orders", `{"k":1}`), []string{"want NAME=VALUE"}},
		{"header value not UTF-8", s.args("send", "--header", "n=\xff", "--key", "k", "orders", `{"k":1}`), []string{`header "n": value "\xff" is not UTF-8`}},
		{"header name not UTF-8", s.args("send", "--header", "\xfe=v", "--key", "k", "orders", `{"k":1}`), []string{`header name "\xfe" is not UTF-8`}},
		{"unknown flag", s.args("send", "--nope", "orders", `{"k":1}`), []string{"send: flag provided but not defined: -nope"}},
		{"unknown global flag", []string{"--nope", "send"}, []string{"flag provided but not defined: -nope"}},
		{"bad partition count", s.args("send", "--partitions", "0", "--key", "k", "orders", `{"k":1}`), []string{"--partitions 0 out of range"}},
		{"partition count not a number", s.args("send", "--partitions", "x", "orders", `{"k":1}`), []string{"invalid value"}},
		{"unknown command", s.args("nope"), []string{`unknown command "nope"`}},
		{"bad stream name", s.args("send", "--key", "k", "or:ders", `{"k":1}`), []string{`stream name "or:ders" is invalid`}},
		{"bad app name", []string{"--app", "a b", "send", "orders", `{"k":1}`}, []string{`--app: app name "a b" is invalid`}},
		{"bad prefix", []string{"--app", "shop", "--prefix", "a b", "send", "orders", `{"k":1}`}, []string{`--prefix "a b" is invalid`}},
		{"bad Redis URL", []string{"--app", "shop", "--redis", "http://u:hunter2@host", "send", "orders", `{"k":1}`}, []string{"invalid --redis URL", `scheme "http" is not supported`}},
		{"unparsable Redis URL", []string{"--app", "shop", "--redis", "redis://:hunter 2@host", "send", "orders", `{"k":1}`}, []string{"invalid --redis URL: the user name or password holds characters", "percent-encode"}},
		{"bad log level", []string{"--app", "shop", "--log-level", "loud", "send", "orders", `{"k":1}`}, []string{`--log-level "loud" is invalid`}},
		{"bad JSON", s.args("send", "--key", "k", "orders", `{"k":`), []string{"record: invalid JSON"}},
		{"missing key field", s.args("send", "--key", "k", "orders", `{"j":1}`), []string{`record: key field "k" is missing`}},
		{"missing file", s.args("sendmany", "--key", "k", "orders", "/nonexistent/records.jsonl"), []string{"no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, nil, "", tc.args...)
			wantFailure(t, r, exitUsage, tc.want...)
			if strings.Contains(r.stderr, "hunter2") {
				t.Errorf("stderr %q shows the password", r.stderr)
			}
		})
	}
}

func TestNoAppName(t *testing.T) {
	if os.Getenv("LEAT_APP") != "" {
		t.Skip("LEAT_APP is set")
	}
	t.Parallel()
	r := run(t, nil, "", "send", "orders", `{"k":1}`)
	wantFailure(t, r, exitUsage, "no app name: pass --app, set LEAT_APP")
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {}, {"send", "--help"}, {"sendmany", "-h"}} {
		r := run(t, nil, "", args...)
		if r.status != 0 || r.stderr != "" || !strings.Contains(r.stdout, "USAGE:") {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, r.status, r.stdout, r.stderr)
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis://127.0.0.1:6379":                  "redis://127.0.0.1:6379",
		"redis://:secret@host:6379/2":             "redis://host:6379/2",
		"rediss://user:secret@host:6380":          "rediss://host:6380",
		"redis://host?password=secret&db=1":       "redis://host",
		"unix://user:secret@/tmp/redis.sock?db=2": "unix:///tmp/redis.sock",
		"redis://host:6379/%zz":                   "redis://host:6379/%zz",
		"default:hunter2@host:6379":               "host:6379",
		"redis:u:hunter2@host":                    "host",
		"redis://u:hun#ter2@host:6379":            "redis://host:6379",
		"redis://u:hun/ter2@host:6379":            "redis://host:6379",
		"redis://u:hun?ter2@host:6379":            "redis://host:6379",
		"redis://u:hun@ter2@host:6379":            "redis://host:6379",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
