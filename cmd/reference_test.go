package cmd

import (
	"os"
	"strings"
	"testing"
)

// docs/cli-reference.md is what "leat docs" prints: regenerate it with
// go generate ./cmd after changing a command or a flag.
func TestCLIReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "", "docs")
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("docs: status %d, stderr %q", r.status, r.stderr)
	}
	b, err := os.ReadFile("../docs/cli-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != r.stdout {
		t.Fatal("docs/cli-reference.md is stale: run go generate ./cmd")
	}
	for _, want := range []string{"## leat tasks requeue\n", "`--retries N` | `LEAT_RETRIES` | `0` |", "[`leat completion`](#leat-completion)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "## leat docs") {
		t.Error("the reference names the hidden docs command")
	}
}
