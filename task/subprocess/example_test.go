package subprocess_test

import (
	"log"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/subprocess"
	"github.com/redis/go-redis/v9"
)

// A Go program runs a queue's tasks in Python processes: the queue takes
// no task while no process is ready, and the handler can lower or raise
// its concurrency with a {"concurrency": N} line.
func Example() {
	a, err := app.New(app.Config{Name: "shop", Client: redis.NewClient(&redis.Options{Addr: "localhost:6379"})})
	if err != nil {
		log.Fatal(err)
	}
	h, err := subprocess.New(subprocess.Config{Command: []string{"python3", "handler.py"}})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	if _, err := task.Handle(a, "resize", h.Handle, task.FetchWhen(h.Wait), task.ConcurrencyFunc(h.Concurrency), task.Concurrency(8)); err != nil {
		log.Fatal(err)
	}
	// a.Run(ctx) then runs the worker.
}
