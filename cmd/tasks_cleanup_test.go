package cmd

import (
	"strings"
	"testing"
)

// leat tasks drain, clean and obliterate: what each deletes, what each
// leaves, and their refusals.
func TestCleanupCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	enqueue := func(args ...string) string {
		t.Helper()
		r := run(t, nil, "", s.args(append([]string{"enqueue"}, args...)...)...)
		if r.status != 0 {
			t.Fatalf("enqueue: %+v", r)
		}
		return strings.TrimSpace(r.stdout)
	}
	ok, dead := enqueue("greet", `{"name":"ada"}`), enqueue("greet", `{"name":"fail"}`)
	run(t, nil, "", s.args("tasks", "wait", ok)...)
	run(t, nil, "", s.args("tasks", "wait", dead)...)
	later := enqueue("--delay", "1h", "greet", `{"name":"later"}`)

	if r := run(t, nil, "", s.args("tasks", "drain", "greet")...); r.status != 0 || r.stdout != "greet: 1 waiting task deleted\n" {
		t.Fatalf("drain: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "show", later)...), 2, "not found")
	wantFailure(t, run(t, nil, "", s.args("tasks", "clean", "greet", "--state", "pending")...), 2, "want succeeded, failed, cancelled or dead")
	if r := run(t, nil, "", s.args("tasks", "clean", "greet", "--state", "succeeded", "--older-than", "1h")...); r.status != 0 || !strings.Contains(r.stdout, "greet: 0 succeeded tasks that ended at least 1h0m0s ago deleted") {
		t.Fatalf("clean --older-than 1h: %+v", r)
	}
	if r := run(t, nil, "", s.args("tasks", "clean", "greet", "--state", "succeeded")...); r.status != 0 || r.stdout != "greet: 1 succeeded task deleted\n" {
		t.Fatalf("clean: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "show", ok)...), 2, "not found")
	if r := run(t, nil, "", s.args("tasks", "show", dead)...); r.status != 0 {
		t.Fatalf("the failed task after cleaning succeeded ones: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "obliterate", "greet")...), 1, "workers run the queue")
	if r := run(t, nil, "", s.args("tasks", "obliterate", "--force", "greet")...); r.status != 0 || !strings.HasPrefix(r.stdout, "greet: obliterated (") {
		t.Fatalf("obliterate --force: %+v", r)
	}
}

// leat tasks edit changes a waiting task's payload, priority and due time,
// and refuses what cannot be changed.
func TestEditCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	later := strings.TrimSpace(run(t, nil, "", s.args("enqueue", "--delay", "1h", "greet", `{"name":"later"}`)...).stdout)
	wantFailure(t, run(t, nil, "", s.args("tasks", "edit", later)...), 2, "say what to change")
	wantFailure(t, run(t, nil, "", s.args("tasks", "edit", later, "--run-now", "--delay", "1m")...), 2, "exclusive")
	wantFailure(t, run(t, nil, "", s.args("tasks", "edit", later, "--payload", "{nope")...), 2, "not valid JSON")
	wantFailure(t, run(t, nil, "", s.args("tasks", "edit", later, "--priority", "urgent")...), 2, "unknown priority")
	if r := run(t, nil, "", s.args("tasks", "edit", later, "--payload", `{"name":"grace"}`, "--priority", "low", "--run-now")...); r.status != 0 ||
		r.stdout != later+": payload, priority low, ready now\n" {
		t.Fatalf("edit: %+v", r)
	}
	if r := run(t, nil, "", s.args("tasks", "wait", later)...); r.status != 0 || !strings.Contains(r.stdout, "hello grace") {
		t.Fatalf("the edited task's result: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "edit", later, "--run-now")...), 2, "only a task that waits to run")
}
