package cmd_test

import (
	"context"
	"fmt"
	"os"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/cmd"
	"github.com/leatdev/leat/stream"
)

// Run reports a failure as one line starting with "leat: " and returns the
// exit status: here 2, a usage error found before any connection to Redis.
func ExampleRun() {
	args := []string{"leat", "--app", "shop", "send", "orders"}
	status := cmd.Run(context.Background(), nil, args, os.Stdin, os.Stdout, os.Stdout)
	fmt.Println("exit status", status)
	// Output:
	// leat: send: want 2 arguments, STREAM JSON, got 1 (see leat send --help)
	// exit status 2
}

type Order struct {
	ID       int64  `json:"id"`
	Customer string `json:"customer"`
	Amount   int64  `json:"amount"`
}

// An app embeds the CLI in its own binary with a Setup that declares its
// streams. Then `shop --app shop send orders '{"id":1,"customer":"c7"}'`
// decodes the JSON into an Order and routes it by the app's key function,
// exactly as the app's own sends do.
func ExampleMain() {
	cmd.Main(func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		if _, err := stream.Declare[Order](a, "orders", stream.KeyFunc(func(o Order) string { return o.Customer })); err != nil {
			a.Close()
			return nil, err
		}
		return a, nil
	})
}
