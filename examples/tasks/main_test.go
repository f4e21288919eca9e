package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/cmd"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The example runs twice on one Redis, each run reporting its own tasks,
// and leaves its queue declared for the CLI and the HTTP API.
func TestTasksExample(t *testing.T) {
	c, _ := redistest.Client(t)
	clean(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		runOnce(t, ctx, c)
	}
	var out, errs bytes.Buffer
	args := []string{"leat", "--redis", redistest.URL(t), "--app", "images", "tasks"}
	if st := cmd.Run(ctx, nil, args, strings.NewReader(""), &out, &errs); st != 0 || !strings.Contains(out.String(), "thumbnails") {
		t.Errorf("leat --app images tasks: status %d, stderr %q, stdout:\n%s", st, errs.String(), out.String())
	}
}

func runOnce(t *testing.T, ctx context.Context, c redis.UniversalClient) {
	t.Helper()
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
}

// clean deletes app images's keys under the default prefix now and when the
// test ends: the example leaves them on purpose, and the server may be
// one of the user's (LEAT_TEST_REDIS_URL).
func clean(t *testing.T, c *redis.Client) {
	del := func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "leat:*{images*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	}
	del()
	t.Cleanup(del)
}
