// Command declare declares the task queues wasm-lines and wasm-reactor of
// app "words" (concurrency 10 per worker), recording them in Redis for
// "leat worker --wasm" and "leat enqueue", and enqueues a first task on
// each, whose ID it prints.
//
//	go run ./declare
//
// It needs a real Redis: LEAT_REDIS_URL, else 127.0.0.1:6379.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
)

func main() {
	url := os.Getenv("LEAT_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	a, err := app.New(app.Config{Name: "words", RedisURL: url})
	if err != nil {
		fmt.Fprintln(os.Stderr, "declare:", err)
		os.Exit(1)
	}
	defer a.Close()
	for _, name := range []string{"wasm-lines", "wasm-reactor"} {
		q, err := task.Declare[json.RawMessage, json.RawMessage](a, name, task.Concurrency(10))
		if err != nil {
			fmt.Fprintln(os.Stderr, "declare:", err)
			os.Exit(1)
		}
		// The first enqueue records the queue's definition in Redis.
		id, err := q.Enqueue(context.Background(), json.RawMessage(`{"text": "declared and ready"}`))
		if err != nil {
			fmt.Fprintln(os.Stderr, "declare:", err)
			os.Exit(1)
		}
		fmt.Println(name, id)
	}
}
