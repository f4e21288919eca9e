package cmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/leatdev/leat/task"
)

// TestTasksWatchCLI: "leat tasks events" turns a queue's events on and off
// live; "leat tasks watch" prints them, as lines or JSON, from the history
// or after an event's ID, and refuses a bad position.
func TestTasksWatchCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)

	r := run(t, nil, "", s.args("tasks", "events", "greet")...)
	if r.status != 0 || r.stdout != "greet: events off\n" {
		t.Fatalf("events: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "events", "greet", "lots")...), 2, "want on, off or a whole number")
	r = run(t, nil, "", s.args("tasks", "events", "greet", "500")...)
	if r.status != 0 || !strings.Contains(r.stdout, "events on, keeping about 500") {
		t.Fatalf("events 500: %+v", r)
	}
	r = run(t, nil, "", s.args("enqueue", "greet", `{"name":"ada"}`)...)
	if r.status != 0 {
		t.Fatalf("enqueue: %+v", r)
	}
	ok := strings.TrimSpace(r.stdout)
	r = run(t, nil, "", s.args("enqueue", "greet", `{"name":"fail"}`)...)
	if r.status != 0 {
		t.Fatalf("enqueue: %+v", r)
	}
	failed := strings.TrimSpace(r.stdout)
	run(t, nil, "", s.args("tasks", "wait", ok)...)
	run(t, nil, "", s.args("tasks", "wait", failed)...)

	// The whole history, as JSON: three events per task, in order.
	r = run(t, nil, "", s.args("tasks", "watch", "--json", "--since", "0", "--count", "6", "greet")...)
	if r.status != 0 {
		t.Fatalf("watch --json: %+v", r)
	}
	var evs []task.QueueEvent
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev task.QueueEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("watch --json line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	states := map[string][]string{}
	for _, ev := range evs {
		states[ev.Task] = append(states[ev.Task], string(ev.Prev)+">"+string(ev.State))
	}
	if got := strings.Join(states[ok], " "); got != ">pending pending>active active>succeeded" {
		t.Errorf("events of the task that succeeded: %s", got)
	}
	if got := strings.Join(states[failed], " "); got != ">pending pending>active active>dead" {
		t.Errorf("events of the task that died: %s", got)
	}

	// As lines, resuming after the first event: the other five.
	r = run(t, nil, "", s.args("tasks", "watch", "--since", evs[0].ID, "--count", "5", "greet")...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.status != 0 || len(lines) != 5 || !strings.Contains(lines[4], evs[5].ID) {
		t.Fatalf("watch --since %s: %+v", evs[0].ID, r)
	}
	for _, l := range lines {
		if strings.Contains(l, failed) && strings.Contains(l, "active -> dead") && !strings.Contains(l, "no such person") {
			t.Errorf("the failure's line %q lacks its error", l)
		}
	}
	if !strings.Contains(r.stdout, ok+"  active -> succeeded  #1") {
		t.Errorf("watch lines lack the success:\n%s", r.stdout)
	}

	wantFailure(t, run(t, nil, "", s.args("tasks", "watch", "--since", "yesterday", "greet")...), 2, "bad event position")
	wantFailure(t, run(t, nil, "", s.args("tasks", "watch", "nosuch")...), 2, "nosuch")

	r = run(t, nil, "", s.args("tasks", "events", "greet", "off")...)
	if r.status != 0 || r.stdout != "greet: events off\n" {
		t.Fatalf("events off: %+v", r)
	}
}
