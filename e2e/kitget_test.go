package e2e

import (
	"archive/zip"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A program outside this repository gets the testing kit with go get, as a
// user would once leat is published: the kit's go.mod requires a released
// leat, with no replace directive (ignored in dependencies, so it would
// break every user). The test serves both modules at that version from a
// module proxy in a directory, built from this tree the way the Go module
// proxy builds them from a tag, and every other module from the local
// module cache, so it needs no network.
func TestGoGetKit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch")
	}
	gomod, err := os.ReadFile("../leattest/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?m)^\s*replace\b`).Match(gomod) {
		t.Fatal("leattest/go.mod has a replace directive: go get ignores it in dependencies")
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/leatdev/leat (v\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("leattest/go.mod does not require github.com/leatdev/leat")
	}
	version := string(m[1])

	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	cache := filepath.Join(goEnv("GOMODCACHE"), "cache", "download")
	proxy := t.TempDir()
	publish(t, proxy, "github.com/leatdev/leat", version, "..")
	publish(t, proxy, "github.com/leatdev/leat/leattest", version, "../leattest")

	user := t.TempDir()
	write(t, filepath.Join(user, "go.mod"), "module example.com/kituser\n\ngo 1.25.0\n")
	write(t, filepath.Join(user, "kit_test.go"), `package kituser

import (
	"testing"

	"github.com/leatdev/leat/leattest"
)

func TestKit(t *testing.T) {
	k := leattest.New(t)
	_ = k
}
`)
	env := append(os.Environ(),
		"GOWORK=off", "GOFLAGS=-mod=mod -modcacherw", "GOSUMDB=off", "GONOSUMDB=", "GOPRIVATE=", "GOTOOLCHAIN=local",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(cache),
		"GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"))
	for _, args := range [][]string{
		{"get", "github.com/leatdev/leat/leattest@" + version},
		// Every package the program and its test import resolves.
		{"list", "-deps", "-test", "./..."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = user, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	got, err := os.ReadFile(filepath.Join(user, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"github.com/leatdev/leat/leattest " + version, "github.com/leatdev/leat " + version} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the user's go.mod does not require %s:\n%s", want, got)
		}
	}
}

// publish writes module path at version into the proxy directory, from
// the module's directory dir: its go.mod, an info file and a zip of its
// files, leaving out nested modules and what git does not track.
func publish(t *testing.T, proxy, path, version, dir string) {
	t.Helper()
	at := filepath.Join(proxy, filepath.FromSlash(path), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(at, "list"), version+"\n")
	write(t, filepath.Join(at, version+".mod"), string(gomod))
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)})
	write(t, filepath.Join(at, version+".info"), string(info))

	f, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	root, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module
				}
				if strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "__pycache__" {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		w, err := zw.Create(path + "@" + version + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
