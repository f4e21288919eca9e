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

// defaultTableLimit is how many keys "leat table" lists without keys given.
const defaultTableLimit = 100

func tableCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "table",
		Usage:     "print the values of keys in a processor's table",
		ArgsUsage: "PROCESSOR TABLE [KEY...]",
		Description: "PROCESSOR is STREAM/NAME, or a NAME that only one stream's processor has; TABLE is\n" +
			"one of its tables (stream.DeclareTable), which its workers record with the processor\n" +
			"when they start. Each KEY's value, as the acknowledged events left it, is read from\n" +
			"the partition the key's events go to and printed as JSON; a key without a value\n" +
			"prints null (exit 0); at most 100 keys at a time. Without KEY, the table's keys are\n" +
			"listed, partition by partition, up to --limit (a note on stderr says when there are\n" +
			"more). --json prints one object of key to value.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: flagJSON, Usage: "print one JSON object instead of a table"},
			&cli.IntFlag{Name: flagLimit, Usage: "list at most `N` keys when none is given", Value: defaultTableLimit},
			helpFlag(),
		},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() < 2 {
				return usageErrorf("table: want at least 2 arguments, PROCESSOR TABLE [KEY...], got %d (see %s table --help)", c.NArg(), c.App.Name)
			}
			if c.Int(flagLimit) < 1 {
				return usageErrorf("--limit %d: give at least 1", c.Int(flagLimit))
			}
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			args := c.Args().Slice()
			entries, more, err := readTable(c.Context, a, args[0], args[1], args[2:], c.Int(flagLimit))
			if err != nil {
				return err
			}
			if more {
				fmt.Fprintf(c.App.ErrWriter, "the first %d keys; the table holds more (--limit)\n", len(entries))
			}
			if c.Bool(flagJSON) {
				out := make(map[string]json.RawMessage, len(entries))
				for _, e := range entries {
					out[e.Key] = e.Value
				}
				return writeJSON(c, out)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\n", e.Key, e.Value)
			}
			return tw.Flush()
		},
	}
}

// readTable reads keys of table name of the processor called proc, each as
// JSON (null when it has none); without keys, up to limit of the table's
// keys, and whether it holds more.
func readTable(ctx context.Context, a *app.App, proc, name string, keys []string, limit int) ([]inspect.TableEntry, bool, error) {
	p, err := findProcessor(ctx, a, proc)
	if err != nil {
		return nil, false, err
	}
	if len(keys) > inspect.MaxTableKeys {
		return nil, false, usageErrorf("table: %d keys, at most %d at a time", len(keys), inspect.MaxTableKeys)
	}
	in := inspect.New(a.Client(), a.Config().KeyPrefix, a.Name())
	var (
		entries []inspect.TableEntry
		more    bool
	)
	if len(keys) == 0 {
		entries, more, err = in.TableScan(ctx, p.stream, p.name, name, limit)
	} else {
		var values []json.RawMessage
		values, err = in.TableValues(ctx, p.stream, p.name, name, keys)
		for i, k := range keys[:len(values)] {
			entries = append(entries, inspect.TableEntry{Key: k, Value: values[i]})
		}
	}
	if errors.Is(err, inspect.ErrUnknownTable) || errors.Is(err, inspect.ErrUnknownStream) {
		return nil, false, usageError{err}
	}
	return entries, more, err
}
