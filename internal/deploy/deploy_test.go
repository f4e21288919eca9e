package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/deploy"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is missing (scripts/test installs it)")
		}
		t.Skip("git is missing (scripts/test installs it)")
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A git source resolves to its ref's commit, fetches into a directory per
// revision, and is set up once per revision and setup.
func TestGitSource(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	write(t, filepath.Join(repo, "handler.py"), "one\n")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	gitIn(t, repo, "tag", "-a", "v1", "-m", "v1")
	rev1 := gitIn(t, repo, "rev-parse", "HEAD")
	write(t, filepath.Join(repo, "handler.py"), "two\n")
	gitIn(t, repo, "commit", "-q", "-am", "two")
	rev2 := gitIn(t, repo, "rev-parse", "HEAD")

	for ref, want := range map[string]string{"main": rev2, "": rev2, "v1": rev1, "refs/heads/main": rev2, rev1: rev1} {
		got, err := deploy.Resolve(ctx, deploy.Source{Git: repo, Ref: ref})
		if err != nil || got != want {
			t.Errorf("ref %q: %q %v, want %s", ref, got, err, want)
		}
	}
	if _, err := deploy.Resolve(ctx, deploy.Source{Git: repo, Ref: "nope"}); err == nil || !strings.Contains(err.Error(), `ref "nope" not found`) {
		t.Errorf("missing ref: %v", err)
	}

	d, err := deploy.Open(t.TempDir(), "words")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := d.Fetch(ctx, deploy.Source{Git: repo, Ref: "main"}, rev1)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "handler.py")); string(b) != "one\n" || dir != d.Path(rev1) {
		t.Fatalf("%s: handler.py %q", dir, b)
	}
	steps := []string{"echo ran >> setup.log", "test \"$GREETING\" = hello && test -z \"$LEAT_SECRET\""}
	env := []string{"PATH=" + os.Getenv("PATH"), "GREETING=hello"}
	for i, want := range []bool{true, false} {
		ran, err := d.Setup(ctx, rev1, steps, env)
		if err != nil || ran != want {
			t.Fatalf("setup %d: ran %v, %v", i, ran, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "setup.log")); string(b) != "ran\n" {
		t.Fatalf("setup ran %q", b)
	}
	// Other steps set the revision up again.
	if ran, err := d.Setup(ctx, rev1, append(steps, "true"), env); err != nil || !ran {
		t.Fatalf("changed setup: ran %v, %v", ran, err)
	}

	// A failing step names itself, carries its last lines, writes no
	// marker: the next setup runs again.
	if _, err := d.Fetch(ctx, deploy.Source{Git: repo, Ref: "main"}, rev2); err != nil {
		t.Fatal(err)
	}
	bad := []string{"true", "for i in $(seq 1 30); do echo line $i; done; echo oops >&2; exit 3"}
	for range 2 {
		ran, err := d.Setup(ctx, rev2, bad, env)
		if !ran || err == nil || !strings.Contains(err.Error(), "setup step 2") || !strings.Contains(err.Error(), "exit status 3") ||
			!strings.Contains(err.Error(), "line 30\noops") || strings.Contains(err.Error(), "line 10\n") {
			t.Fatalf("failing setup: ran %v, %v", ran, err)
		}
	}
	if err := d.Prune(rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path(rev1)); !os.IsNotExist(err) {
		t.Fatalf("pruned revision: %v", err)
	}
	// A revision that is not in the repository is refused, and no
	// directory is left.
	missing := strings.Repeat("c", 40)
	if _, err := d.Fetch(ctx, deploy.Source{Git: repo}, missing); err == nil {
		t.Fatal("fetched a missing revision")
	}
	if _, err := os.Stat(d.Path(missing)); !os.IsNotExist(err) {
		t.Fatalf("missing revision's directory: %v", err)
	}
}

// A directory source's revision is the digest of its files: a change
// makes a new one, and a copy is checked against it.
func TestPathSource(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	write(t, filepath.Join(src, "handler.py"), "one\n")
	if err := os.Mkdir(filepath.Join(src, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(src, "lib", "x.py"), "x\n")
	s := deploy.Source{Path: src}
	rev1, err := deploy.Resolve(ctx, s)
	if err != nil || !deploy.ValidRevision(rev1) {
		t.Fatalf("resolve: %q %v", rev1, err)
	}
	if again, _ := deploy.Resolve(ctx, s); again != rev1 {
		t.Fatal("the digest is not stable")
	}
	d, err := deploy.Open(t.TempDir(), "local")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := d.Fetch(ctx, s, rev1)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "lib", "x.py")); string(b) != "x\n" {
		t.Fatalf("copy: %q", b)
	}
	write(t, filepath.Join(src, "handler.py"), "two\n")
	rev2, _ := deploy.Resolve(ctx, s)
	if rev2 == rev1 {
		t.Fatal("a change kept the revision")
	}
	if _, err := d.Fetch(ctx, s, rev1); err != nil {
		t.Fatalf("a revision fetched before is kept: %v", err)
	}
	if _, err := d.Fetch(ctx, s, strings.Repeat("d", 64)); err == nil || !strings.Contains(err.Error(), "changed while it was copied") {
		t.Fatalf("stale revision: %v", err)
	}
}

func TestSourceRefused(t *testing.T) {
	for _, s := range []deploy.Source{
		{}, {Git: "/r", Path: "/p"}, {Path: "rel/dir"}, {Path: "/p", Ref: "main"}, {Git: "--upload-pack=touch x"},
		{Git: "/r", Ref: "-x"}, {Git: "/r", Ref: "a..b"}, {Git: "/r", Ref: "a b"},
	} {
		if err := s.Check(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b"} {
		if _, err := deploy.Open(t.TempDir(), name); err == nil {
			t.Errorf("deployment %q accepted", name)
		}
	}
	if _, err := (&deploy.Dir{}).Setup(context.Background(), "../x", nil, nil); err == nil {
		t.Error("setup of revision ../x accepted")
	}
}
