package task_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// A diamond flow: a, then b and c in parallel, then d, which reads what b
// and c returned.
func ExampleNewFlow() {
	// The test harness's redis-server; use your own URL instead.
	url, err := redistest.SharedURL()
	if err != nil {
		fmt.Println(err)
		return
	}
	opt, _ := redis.ParseURL(url)
	client := redis.NewClient(opt)
	defer client.Close()
	a, err := app.New(app.Config{Name: "diamond", Client: client, KeyPrefix: fmt.Sprintf("example-flow-%d", os.Getpid()),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	steps, err := task.Handle(a, "steps", func(ctx context.Context, t *task.Task[string]) (string, error) {
		var seen []string
		for name, p := range t.Parents {
			var r string
			_ = json.Unmarshal(p.Result, &r)
			seen = append(seen, name+":"+r)
		}
		sort.Strings(seen)
		return t.Payload + "[" + strings.Join(seen, " ") + "]", nil
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	worker, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- a.Run(worker) }()

	f := task.NewFlow(a)
	na := task.AddNode(f, "a", steps, "A")
	nb := task.AddNode(f, "b", steps, "B").After(na)
	nc := task.AddNode(f, "c", steps, "C").After(na)
	f.Chord([]*task.Node{nb, nc}, task.AddNode(f, "d", steps, "D"))
	id, err := f.Submit(ctx)
	if err != nil {
		panic(err)
	}
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.State, string(info.Results["d"]))
	stop()
	<-done
	// Output: succeeded "D[b:B[a:A[]] c:C[a:A[]]]"
}
