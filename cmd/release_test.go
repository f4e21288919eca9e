package cmd

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// scripts/release builds a static binary that prints the version it was
// given, packed with the license; the binary's completion answers the
// shells' scripts. (One target, the machine's own, to keep the test short.)
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	t.Parallel()
	const v = "v9.8.7-rc.1"
	out := t.TempDir()
	target := "linux/" + runtime.GOARCH
	c := exec.Command("../scripts/release", v, out)
	c.Env = append(os.Environ(), "LEAT_RELEASE_TARGETS="+target)
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, b)
	}
	name := "leat-" + v + "-linux-" + runtime.GOARCH
	for _, f := range []string{name + ".tar.gz", "SHA256SUMS", name + "/LICENSE", name + "/CHANGELOG.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	bin := filepath.Join(out, name, "leat")

	// Static: no program interpreter (dynamic loader), no shared libraries.
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a program interpreter: it is not static")
		}
	}
	if libs, _ := ef.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %q", libs)
	}

	if b, err := exec.Command(bin, "--version").Output(); err != nil || string(b) != "leat "+v+"\n" {
		t.Errorf("--version: %q, %v", b, err)
	}
	// A bad version builds nothing.
	bad := exec.Command("../scripts/release", "9.8.7", t.TempDir())
	if b, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(b), "usage: scripts/release vMAJOR.MINOR.PATCH") {
		t.Errorf("scripts/release 9.8.7: %v\n%s", err, b)
	}

	// The words completion offers: commands, subcommands, a command's
	// flags; hidden commands are not offered.
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{args: nil, want: []string{"send", "tasks", "serve", "completion"}, not: []string{"docs"}},
		{args: []string{"tasks"}, want: []string{"list", "requeue", "rate"}},
		{args: []string{"worker", "--re"}, want: []string{"--retries", "--read-block"}},
		{args: []string{"--app", "shop", "inspect", "--js"}, want: []string{"--json"}},
	} {
		b, err := exec.Command(bin, append(tc.args, "--generate-bash-completion")...).Output()
		words := strings.Fields(string(b))
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
		}
		for _, w := range tc.want {
			if !slices.Contains(words, w) {
				t.Errorf("%q: %q not offered: %q", tc.args, w, words)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(words, w) {
				t.Errorf("%q: %q offered: %q", tc.args, w, words)
			}
		}
	}

	// The bash script, loaded in bash, completes "leat ta" to "table" and "tasks",
	// and "leat tasks re" to the subcommands starting with "re".
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := `source <(leat completion bash)
COMP_WORDS=(leat ta); COMP_CWORD=1; _leat_complete; echo "${COMPREPLY[*]}"
COMP_WORDS=(leat tasks re); COMP_CWORD=2; _leat_complete; echo "${COMPREPLY[*]}"`
	sh := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	sh.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	b, err := sh.CombinedOutput()
	if want := "table tasks\nrequeue resume\n"; err != nil || string(b) != want {
		t.Errorf("bash completion: %v, output %q, want %q", err, b, want)
	}
}
