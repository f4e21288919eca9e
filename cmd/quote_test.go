package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
)

func TestQuoteTerm(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é, 日本, {\"a\":1}": "plain text, é, 日本, {\"a\":1}",
		"\x1b[2J\rrow\n\tcell":         `\x1b[2J\rrow\n\tcell`,
		"bell\x07 del\x7f nul\x00":     `bell\x07 del\x7f nul\x00`,
		"c1\u009b31m rlo\u202egnp.exe": `c1\u009b31m rlo\u202egnp.exe`,
		"bad \xff\xfe utf-8":           `bad \xff\xfe utf-8`,
	} {
		if got := quoteTerm(in); got != want {
			t.Errorf("quoteTerm(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTasksOutputQuoted: the log lines, error and result a handler wrote
// reach the terminal of "tasks logs" and "tasks show" with their control
// characters escaped; --json escapes them as JSON does.
func TestTasksOutputQuoted(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	evil := "\x1b[2J\x1b]0;pwned\x07\rforged\tcell\u202eexe."
	q, err := task.Handle(a, "evil", func(ctx context.Context, tk *task.Task[json.RawMessage]) (json.RawMessage, error) {
		tk.Log(evil)
		return nil, task.SkipRetry(errors.New(evil))
	})
	if err != nil {
		t.Fatal(err)
	}
	id, err := q.Enqueue(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() { stop(); <-done }()
	if in, err := q.Wait(ctx, id); err != nil || in.State != task.Failed {
		t.Fatalf("%+v, %v", in, err)
	}
	quoted := `\x1b[2J\x1b]0;pwned\x07\rforged\tcell\u202eexe.`
	for _, cmd := range []string{"logs", "show"} {
		r := run(t, nil, "", s.quiet("tasks", cmd, id)...)
		if r.status != 0 || !strings.Contains(r.stdout, quoted) || strings.ContainsAny(r.stdout, "\x1b\x07\r\u202e") {
			t.Errorf("%s: %+v", cmd, r)
		}
		r = run(t, nil, "", s.quiet("tasks", cmd, "--json", id)...)
		if r.status != 0 || !strings.Contains(r.stdout, `\u001b[2J\u001b]0;pwned\u0007\rforged\tcell`) || strings.ContainsAny(r.stdout, "\x1b\x07\r") {
			t.Errorf("%s --json: %+v", cmd, r)
		}
	}
	if r := run(t, nil, "", s.quiet("tasks", "list", "--state", "recent", "evil")...); r.status != 0 || !strings.Contains(r.stdout, `\x1b[2J`) || strings.ContainsAny(r.stdout, "\x1b\x07\r\u202e") {
		t.Errorf("list: %+v", r)
	}
}
