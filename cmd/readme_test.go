package cmd

import (
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// README's CLI tables name every command and subcommand of leat, each as
// "`leat NAME" (with its parent's name before it).
func TestREADMEDocumentsEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	var walk func(prefix string, cmds []*cli.Command)
	n := 0
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := prefix + " " + c.Name
			n++
			if !strings.Contains(readme, "`"+name) {
				t.Errorf("README does not name %q", name)
			}
			walk(name, c.Subcommands)
		}
	}
	walk("leat", New(nil).Commands)
	if n < 20 {
		t.Fatalf("%d commands walked: the command tree was not read", n)
	}
}
