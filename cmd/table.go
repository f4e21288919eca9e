package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/urfave/cli/v2"
)

func tableCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "table",
		Usage:     "print the values of keys in a processor's table",
		ArgsUsage: "PROCESSOR TABLE KEY...",
		Description: "PROCESSOR is STREAM/NAME, or a NAME that only one stream's processor has; TABLE is\n" +
			"one of its tables (stream.DeclareTable), which its workers record with the processor\n" +
			"when they start. Each KEY's value, as the acknowledged events left it, is read from\n" +
			"the partition the key's events go to and printed as JSON; a key without a value\n" +
			"prints null (exit 0); at most 100 keys at a time. --json prints one object of key to\n" +
			"value.",
		Flags:        []cli.Flag{&cli.BoolFlag{Name: flagJSON, Usage: "print one JSON object instead of a table"}, helpFlag()},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() < 3 {
				return usageErrorf("table: want at least 3 arguments, PROCESSOR TABLE KEY..., got %d (see %s table --help)", c.NArg(), c.App.Name)
			}
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			args := c.Args().Slice()
			values, err := readTable(c.Context, a, args[0], args[1], args[2:])
			if err != nil {
				return err
			}
			if c.Bool(flagJSON) {
				out := make(map[string]json.RawMessage, len(values))
				for i, k := range args[2:] {
					out[k] = values[i]
				}
				return writeJSON(c, out)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE")
			for i, k := range args[2:] {
				fmt.Fprintf(tw, "%s\t%s\n", k, values[i])
			}
			return tw.Flush()
		},
	}
}

// readTable reads keys of table name of the processor called proc, each as
// JSON (null when it has none).
func readTable(ctx context.Context, a *app.App, proc, name string, keys []string) ([]json.RawMessage, error) {
	p, err := findProcessor(ctx, a, proc)
	if err != nil {
		return nil, err
	}
	if len(keys) > inspect.MaxTableKeys {
		return nil, usageErrorf("table: %d keys, at most %d at a time", len(keys), inspect.MaxTableKeys)
	}
	values, err := inspect.New(a.Client(), a.Config().KeyPrefix, a.Name()).TableValues(ctx, p.stream, p.name, name, keys)
	if errors.Is(err, inspect.ErrUnknownTable) || errors.Is(err, inspect.ErrUnknownStream) {
		return nil, usageError{err}
	}
	return values, err
}
