package taskrdb_test

import (
	"testing"
	"time"

	"github.com/leatdev/leat/internal/taskrdb"
)

// TestEnqueueRunAgain: running an enqueue call again (its reply was lost)
// reports a task that carries the call's token as created, and creates
// nothing; a task with the same ID or unique key and another token, or
// none, is a duplicate.
func TestEnqueueRunAgain(t *testing.T) {
	f := newFixture(t)
	task := func(id, token, unique string) taskrdb.NewTask {
		return taskrdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour, Token: token,
			UniqueKey: unique, UniqueTTL: time.Hour}
	}
	f.enqueue(task("a", "tok-a", ""), task("b", "", ""), task("c", "tok-c", "u"))
	for _, tc := range []struct {
		name    string
		task    taskrdb.NewTask
		created bool
		id      string
	}{
		{"same ID, same token", task("a", "tok-a", ""), true, "a"},
		{"same ID, another token", task("a", "tok-x", ""), false, "a"},
		{"same ID, no token", task("a", "", ""), false, "a"},
		{"same ID without a token, a token now", task("b", "tok-b", ""), false, "b"},
		{"unique key and token of the task", task("c", "tok-c", "u"), true, "c"},
		{"unique key, another ID with the token", task("d", "tok-c", "u"), false, "c"},
	} {
		created, ids, err := taskrdb.Enqueue(f.ctx, f.c, f.keys, []taskrdb.NewTask{tc.task})
		if err != nil {
			t.Fatal(err)
		}
		if created[0] != tc.created || ids[0] != tc.id {
			t.Errorf("%s: created %v, ID %q; want %v, %q", tc.name, created[0], ids[0], tc.created, tc.id)
		}
	}
	if n, err := f.c.HGet(f.ctx, f.ks.TaskCounts("q"), "pending").Int(); err != nil || n != 3 {
		t.Fatalf("pending count %d (%v), want 3: a task created twice", n, err)
	}
	if s, err := f.c.XLen(f.ctx, f.ks.TaskStream("q", 0)).Result(); err != nil || s != 3 {
		t.Fatalf("ready entries %d (%v), want 3", s, err)
	}
}
