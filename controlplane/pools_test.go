package controlplane_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/controlplane"
)

const goodPools = `pools:
  gpu:
    token_env: GPU_TOKEN
    queues: [inference, embed]
    deployment: ml
    concurrency: 4
    redis:
      user: leat-gpu
      address: redis.internal:6379
  cpu:
    token_file: %s
    queues: [words]
    deployment: ml
    heartbeat: 2s
    redis:
      url_env: CPU_REDIS_URL
deployments:
  ml:
    git: https://git.example.com/ml.git
    ref: main
    poll: 10s
    setup:
      - python3 -m venv .venv
      - .venv/bin/pip install -r requirements.txt
    start: .venv/bin/python handler.py
    env:
      MODEL: small
      THREADS: "4"
  local:
    path: /srv/handlers
    start: python3 handler.py
`

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPools(t *testing.T) {
	tokFile := writeFile(t, "cpu.token", "cpu-token-0123456789abcdef\n")
	path := writeFile(t, "pools.yaml", strings.Replace(goodPools, "%s", tokFile, 1))
	f, err := controlplane.Load(path, env(map[string]string{
		"GPU_TOKEN": "gpu-token-0123456789abcdef", "CPU_REDIS_URL": "redis://u:p@10.0.0.1:6379",
	}))
	if err != nil {
		t.Fatal(err)
	}
	gpu, cpu := f.Pools["gpu"], f.Pools["cpu"]
	if gpu.Token() != "gpu-token-0123456789abcdef" || cpu.Token() != "cpu-token-0123456789abcdef" {
		t.Fatalf("tokens: %q %q", gpu.Token(), cpu.Token())
	}
	if gpu.Heartbeat != controlplane.DefaultHeartbeat || cpu.Heartbeat != 2*time.Second || gpu.Concurrency != 4 ||
		strings.Join(gpu.Queues, ",") != "inference,embed" || gpu.Redis.Address != "redis.internal:6379" {
		t.Fatalf("pools: %+v %+v", gpu, cpu)
	}
	ml := f.Deployments["ml"]
	if ml.Poll != 10*time.Second || ml.SetupTimeout != controlplane.DefaultSetupTimeout || len(ml.Setup) != 2 ||
		ml.Env["THREADS"] != "4" || ml.Source().Ref != "main" || f.Deployments["local"].Poll != controlplane.DefaultPoll {
		t.Fatalf("deployment: %+v", ml)
	}
}

// Every mistake is refused with its line; several at once are each named.
func TestParsePoolsRefuses(t *testing.T) {
	const base = `pools:
  p:
    token_env: T
    queues: [q]
    deployment: d
deployments:
  d:
    git: /srv/repo
    start: ./run
`
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"unknown field", strings.Replace(base, "    queues: [q]\n", "    queues: [q]\n    token: secret\n", 1),
			[]string{"line 5: field token not found"}},
		{"int duration", base + "    poll: 5\n", []string{"line 10: cannot unmarshal !!int `5` into time.Duration"}},
		{"number for a string", strings.Replace(base, "start: ./run", "start: 5", 1), []string{"line 9: deployments.d.start: want a string, got int"}},
		{"bool in a list", strings.Replace(base, "[q]", "[q, true]", 1), []string{"line 4: pools.p.queues[1]: want a string, got bool"}},
		{"string for a number", strings.Replace(base, "    queues: [q]\n", "    queues: [q]\n    concurrency: lots\n", 1),
			[]string{"line 5: cannot unmarshal !!str `lots` into int"}},
		{"undeclared deployment", strings.Replace(base, "deployment: d", "deployment: e", 1),
			[]string{`line 5: pools.p.deployment: deployment "e" is not declared`}},
		{"git and path", base + "    path: /srv/x\n", []string{"line 7: deployments.d: source: give git or path, not both"}},
		{"option as ref", base + "    ref: --upload-pack=x\n", []string{"line 7: deployments.d: source: ref"}},
		{"leat variable", base + "    env:\n      LEAT_REDIS_URL: x\n", []string{"line 11: deployments.d.env.LEAT_REDIS_URL: LEAT_ variables"}},
		{"two token sources", strings.Replace(base, "token_env: T", "token_env: T\n    token_file: /x", 1),
			[]string{"line 2: pools.p: give exactly one of token_env"}},
		{"dot-dot name", strings.Replace(strings.Replace(base, "deployment: d", "deployment: ..", 1), "  d:\n", "  ..:\n", 1),
			[]string{"line 7: deployments...: invalid deployment name"}},
		{"short heartbeat", base[:strings.Index(base, "deployments:")] + "    heartbeat: 1ms\n" + base[strings.Index(base, "deployments:"):],
			[]string{"line 6: pools.p.heartbeat: 1ms: want 500ms to 5m0s"}},
		{"two documents", base + "---\npools: {}\n", []string{"more than one YAML document"}},
		{"empty", "", []string{"the file is empty"}},
		{"duplicate key", strings.Replace(base, "    queues: [q]\n", "    queues: [q]\n    queues: [r]\n", 1), []string{"line 5: mapping key \"queues\" already defined"}},
		{"three mistakes", strings.Replace(strings.Replace(strings.Replace(base, "deployment: d", "deployment: e", 1),
			"start: ./run", "start: \"\"", 1), "queues: [q]", "queues: [q, q]", 1),
			[]string{`line 4: pools.p.queues: queue "q" named twice`, `line 5: pools.p.deployment: deployment "e"`, "line 9: deployments.d.start: no start command"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := controlplane.Parse([]byte(tc.text))
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if n := len(strings.Split(err.Error(), "\n")); n != len(tc.want) {
				t.Errorf("%d errors, want %d: %v", n, len(tc.want), err)
			}
		})
	}
}

func TestLoadPoolsSecrets(t *testing.T) {
	const two = `pools:
  a:
    token_env: A
    queues: [q]
    deployment: d
  b:
    token_file: %s
    queues: [q]
    deployment: d
    redis:
      url_env: B_URL
deployments:
  d:
    path: /srv/d
    start: ./run
`
	tok := writeFile(t, "b.token", "same-token-0123456789abcdef\n")
	path := writeFile(t, "pools.yaml", strings.Replace(two, "%s", tok, 1))
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unset", map[string]string{"B_URL": "redis://x:6379"}, "pool a: token: environment variable A is not set"},
		{"short", map[string]string{"A": "short", "B_URL": "redis://x:6379"}, "pool a: the token is 5 characters: use at least 16"},
		{"shared", map[string]string{"A": "same-token-0123456789abcdef", "B_URL": "redis://x:6379"}, "pool b: same token as pool a"},
		{"bad url", map[string]string{"A": "a-token-0123456789abcdef", "B_URL": "http://secret@x"}, `pool b: redis URL: scheme "http"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := controlplane.Load(path, env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("the error repeats the URL: %v", err)
			}
		})
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"ok\tfine\nnext":         "ok\tfine\nnext",
		"\x1b[31mred\x1b[0m":     "[31mred[0m",
		"10%\r50%\r100%":         "10%\n50%\n100%",
		"bad \xff byte \x00 nul": "bad  byte  nul",
	} {
		if got := controlplane.Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	long := controlplane.Clean(strings.Repeat("é", 3000))
	if len(long) > 4096 || !strings.HasSuffix(long, "é") {
		t.Errorf("long text cut to %d bytes, ending %q", len(long), long[len(long)-4:])
	}
}

// The example's pools file is valid as shipped.
func TestExamplePoolsFile(t *testing.T) {
	f, err := controlplane.Load("../examples/control-plane/pools.yaml", func(name string) string {
		if name == "WORDS_POOL_TOKEN" {
			return "0123456789abcdef0123456789abcdef"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Pools) != 1 || len(f.Deployments) != 1 {
		t.Fatalf("pools %v, deployments %v", f.Pools, f.Deployments)
	}
}
