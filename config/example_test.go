package config_test

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/config"
	"github.com/leatdev/leat/task"
)

// Parse reports every mistake of a file at once, with its line and field.
func ExampleParse() {
	_, err := config.Parse("leat.yaml", []byte(`app: shop
queues:
  words:
    retries: "3x"
    timeout: 30
    concurrency: 8.5
`))
	fmt.Println(err)
	// Output:
	// leat.yaml:4: queues.words.retries: must be an integer 0..10000, got "3x"
	// leat.yaml:5: queues.words.timeout: must be a duration such as "30s" or "1h30m", more than 0 and at most 7d (168h0m0s) (a string), got 30
	// leat.yaml:6: queues.words.concurrency: must be an integer 1..2147483647, got 8.5
}

type words struct {
	Text string `json:"text"`
}

type counts struct {
	Words int `json:"words"`
}

// A Go program gives a queue of the file a Go handler: the file's settings
// and cron schedules, the program's handler.
func ExampleHandle() {
	f, err := config.Parse("leat.yaml", []byte(`app: shop
queues:
  words:
    concurrency: 4
    retries: 3
    levels: [premium, default]
    cron:
      - name: hourly
        schedule: "@hourly"
        payload: {text: "a b a"}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := app.New(app.Config{Name: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	q, err := config.Handle(a, f, "words", func(ctx context.Context, t *task.Task[words]) (counts, error) {
		return counts{Words: len(t.Payload.Text)}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := q.Definition()
	fmt.Println(d.Name, d.Concurrency, d.MaxRetries, len(d.Levels))
	// a.Run(ctx) would now run the queue's tasks and its schedule.
	// Output: words 4 3 2
}
