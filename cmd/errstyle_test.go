package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// Every error is one line "leat: what went wrong", whatever package made it
// and however deep it was wrapped: the library's package prefixes do not
// show.
func TestErrorStyle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("handler failed: %w", errors.New("leat: skip retry")), "leat: handler failed: skip retry\n"},
		{fmt.Errorf("task %q in queue %q: %w", "a1", "mail", task.ErrNotFound), `leat: task "a1" in queue "mail": not found` + "\n"},
		{fmt.Errorf("%w %q", task.ErrUnknownQueue, "q"), `leat: unknown queue "q"` + "\n"},
		{fmt.Errorf("%w: bad", stream.ErrEncode), "leat: encode: bad\n"},
		// Only whole prefixes at the start of a cause: a user's text keeps
		// its words.
		{errors.New("unknown app: shop"), "leat: unknown app: shop\n"},
	} {
		var b bytes.Buffer
		report(&b, tc.err)
		if b.String() != tc.want {
			t.Errorf("%v: printed %q, want %q", tc.err, b.String(), tc.want)
		}
	}
}

// The CLI's own lines, end to end.
func TestErrorStyleCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	for _, args := range [][]string{
		{"tasks", "show", "missing"},
		{"enqueue", "nosuch", `{}`},
		{"send", "nosuch", `{}`},
	} {
		r := run(t, nil, "", s.args(args...)...)
		if r.status == 0 || !strings.HasPrefix(r.stderr, "leat: ") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: %+v", args, r)
		}
		if m := packagePrefix.FindString(strings.TrimPrefix(r.stderr, "leat: ")); m != "" {
			t.Errorf("%v: %q shows a package prefix %q", args, r.stderr, m)
		}
	}
	r := run(t, nil, "", s.args("tasks", "show", "missing")...)
	if want := `leat: task "missing" in any queue of app "shop": not found` + "\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}
