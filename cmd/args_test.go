package cmd

import (
	"slices"
	"testing"
)

// A command's own flags may follow its arguments; they move before them,
// with their values, and nothing else moves.
func TestInterspersedFlags(t *testing.T) {
	t.Parallel()
	a := New(nil)
	for _, tc := range []struct{ in, want []string }{
		{[]string{"leat", "--app", "shop", "tasks", "list", "greet", "--limit", "3", "--json"},
			[]string{"leat", "--app", "shop", "tasks", "list", "--limit", "3", "--json", "greet"}},
		{[]string{"leat", "enqueue", "greet", `{"n":1}`, "--priority=high"},
			[]string{"leat", "enqueue", "--priority=high", "greet", `{"n":1}`}},
		// A negative number is a payload, not a flag; after "--" nothing moves.
		{[]string{"leat", "enqueue", "q", "-5"}, []string{"leat", "enqueue", "q", "-5"}},
		{[]string{"leat", "send", "s", "--", "--key", "k"}, []string{"leat", "send", "s", "--", "--key", "k"}},
		// Unknown flags and global flags after the command stay, for their errors.
		{[]string{"leat", "send", "s", "{}", "--nope"}, []string{"leat", "send", "s", "{}", "--nope"}},
		{[]string{"leat", "send", "s", "{}", "--app", "x"}, []string{"leat", "send", "s", "{}", "--app", "x"}},
		{[]string{"leat", "nosuch", "a", "--json"}, []string{"leat", "nosuch", "a", "--json"}},
		{[]string{"leat"}, []string{"leat"}},
	} {
		if got := interspersed(a, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}
