package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestTasksExample(t *testing.T) {
	c, _ := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, c); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"owl.png enqueued twice: same task true, duplicate true",
		`cat.png    succeeded after 1 attempt(s): {"url":"https://cdn.example.com/200/cat.png"}`,
		"flaky.png  succeeded after 3 attempt(s)",
		"broken.png failed after 1 attempt(s): leat: skip retry: corrupt image",
		"dog.png    succeeded after 1 attempt(s)",
		"counts: 4 succeeded, 1 failed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not mention %q:\n%s", want, out.String())
		}
	}
	if keys := c.Keys(ctx, "leat-tasks:*").Val(); len(keys) > 0 {
		t.Errorf("keys left behind: %v", keys)
	}
}
