package task_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/leatdev/leat/task"
)

// Headers given at enqueue reach every attempt's handler (without any
// middleware), Info, and the tasks of EnqueueMany; several Headers options
// merge. Headers a worker could not give back as they were given are
// refused with nothing written.
func TestTaskHeaders(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	seen := map[string][]map[string]string{}
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		mu.Lock()
		seen[tk.ID] = append(seen[tk.ID], tk.Headers)
		mu.Unlock()
		if tk.Payload == 1 && tk.Attempt == 1 {
			return 0, errors.New("retried: the headers stay")
		}
		return tk.Payload, nil
	}, task.Backoff(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		h    map[string]string
		says string
	}{
		{map[string]string{"": "x"}, "header name is empty"},
		{map[string]string{"caf\xe9": "x"}, "not UTF-8"},
		{map[string]string{"a": "caf\xe9"}, "not UTF-8"},
		{map[string]string{"big": strings.Repeat("x", task.MaxHeaderBytes)}, "over the 8192 allowed"},
	} {
		if _, err := q.EnqueueMany(ctx, []int{1, 2}, task.Headers(c.h)); !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("headers %q: %v, want ErrInvalid saying %q", c.h, err, c.says)
		}
	}
	if n := scanStates(t, e, "jobs"); len(n) != 0 {
		t.Fatalf("tasks written: %v", n)
	}
	one, err := q.Enqueue(ctx, 1, task.Headers(map[string]string{"tenant": "acme", "lang": "fr"}), task.Headers(map[string]string{"lang": "é"}))
	if err != nil {
		t.Fatal(err)
	}
	many, err := q.EnqueueMany(ctx, []int{2, 3}, task.Headers(map[string]string{"batch": "7"}))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := q.Enqueue(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	want := map[string]map[string]string{
		one: {"tenant": "acme", "lang": "é"}, many[0]: {"batch": "7"}, many[1]: {"batch": "7"}, plain: nil,
	}
	for id, h := range want {
		in, err := q.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if in.State != task.Succeeded || !sameHeaders(in.Headers, h) {
			t.Errorf("task %s: %s with headers %v, want succeeded with %v", id, in.State, in.Headers, h)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen[one]) != 2 {
		t.Fatalf("task with a retry ran %d times", len(seen[one]))
	}
	for id, h := range want {
		for i, got := range seen[id] {
			if !sameHeaders(got, h) {
				t.Errorf("task %s attempt %d: the handler saw headers %v, want %v", id, i+1, got, h)
			}
		}
	}
}

func sameHeaders(a, b map[string]string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
