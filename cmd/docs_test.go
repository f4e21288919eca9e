package cmd

import (
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// The CLI pages (docs/cli.md, the task CLI in docs/tasks.md, serve in
// docs/http-api.md) name every command and subcommand of leat, each as
// "`leat NAME" (with its parent's name before it).
func TestDocsNameEveryCommand(t *testing.T) {
	var readme string
	for _, page := range []string{"../docs/cli.md", "../docs/tasks.md", "../docs/http-api.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		readme += string(b)
	}
	var walk func(prefix string, cmds []*cli.Command)
	n := 0
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := prefix + " " + c.Name
			n++
			if !strings.Contains(readme, "`"+name) {
				t.Errorf("the CLI pages of docs/ do not name %q", name)
			}
			walk(name, c.Subcommands)
		}
	}
	walk("leat", New(nil).Commands)
	if n < 20 {
		t.Fatalf("%d commands walked: the command tree was not read", n)
	}
}
