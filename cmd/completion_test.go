package cmd

import (
	"strings"
	"testing"
)

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{
		"bash": "complete -o bashdefault -o default -F _leat_complete leat\n",
		"zsh":  "compdef _leat_complete leat\n",
		"fish": "complete -c leat ",
	} {
		r := run(t, nil, "", "completion", shell)
		if r.status != 0 || r.stderr != "" || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: status %d, stderr %q, stdout without %q:\n%s", shell, r.status, r.stderr, want, r.stdout)
		}
	}
	wantFailure(t, run(t, nil, "", "completion", "tcsh"), exitUsage, `completion: unknown shell "tcsh": want bash, zsh or fish`)
	wantFailure(t, run(t, nil, "", "completion"), exitUsage, "completion: want 1 argument, SHELL, got 0")
}
