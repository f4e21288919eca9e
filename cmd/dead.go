package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/core"
	"github.com/urfave/cli/v2"
)

// deadCommand is "leat dead": the dead letters of stream processors, as
// "leat tasks" is for task queues.
func deadCommand(setup Setup) *cli.Command {
	jsonFlag := func() cli.Flag {
		return &cli.BoolFlag{Name: flagJSON, Usage: "print JSON instead of a table"}
	}
	allFlag := func(what string) cli.Flag {
		return &cli.BoolFlag{Name: flagAll, Usage: what + " every dead letter the processor holds when the command starts"}
	}
	sub := func(name, usage, args string, flags []cli.Flag, action func(*cli.Context, *app.App) error) *cli.Command {
		return &cli.Command{
			Name: name, Usage: usage, ArgsUsage: args, Flags: append(flags, helpFlag()),
			HideHelp: true, OnUsageError: onUsageError,
			Action: func(c *cli.Context) error {
				if c.NArg() < 2 {
					return wantArgs(c, strings.Fields(args)[:2]...)
				}
				a, err := openApp(c, setup)
				if err != nil {
					return err
				}
				defer a.Close()
				return action(c, a)
			},
		}
	}
	return &cli.Command{
		Name: "dead",
		Usage: "list, show, replay or purge the dead letters of a stream processor " +
			"(the events its DeadLetter failure policy set aside)",
		HideHelp:     true,
		OnUsageError: onUsageError,
		Flags:        []cli.Flag{helpFlag()},
		Subcommands: []*cli.Command{
			sub("list", "list a processor's dead letters, oldest first: ID, original entry and partition, key, when and why it died, attempts",
				"STREAM PROCESSOR", []cli.Flag{jsonFlag(),
					&cli.IntFlag{Name: flagLimit, Value: 20, Usage: fmt.Sprintf("at most `N` dead letters, 1 to %d", inspect.MaxDeadList)},
					&cli.StringFlag{Name: "after", Usage: "list those after dead-letter `ID` (the next page)"}},
				func(c *cli.Context, a *app.App) error {
					if err := wantArgs(c, "STREAM", "PROCESSOR"); err != nil {
						return err
					}
					in := inspect.New(a.Client(), a.Config().KeyPrefix, a.Name())
					page, err := in.DeadLetters(c.Context, c.Args().Get(0), c.Args().Get(1), c.String("after"), c.Int(flagLimit))
					if errors.Is(err, inspect.ErrBadDeadList) {
						return usageError{err}
					}
					if err != nil {
						return err
					}
					return printDeadPage(c, page)
				}),
			sub("show", "print a dead letter whole: its record decoded with its codec, its headers and error", "STREAM PROCESSOR ID",
				[]cli.Flag{jsonFlag()},
				func(c *cli.Context, a *app.App) error {
					if err := wantArgs(c, "STREAM", "PROCESSOR", "ID"); err != nil {
						return err
					}
					in := inspect.New(a.Client(), a.Config().KeyPrefix, a.Name())
					d, err := in.DeadLetter(c.Context, c.Args().Get(0), c.Args().Get(1), c.Args().Get(2))
					if errors.Is(err, inspect.ErrNoDeadLetter) {
						return usageError{err}
					}
					if err != nil {
						return err
					}
					return printDeadLetter(c, d)
				}),
			sub("replay", "send dead letters back to their partition (same key), in order, each once, and remove them from the dead letters",
				"STREAM PROCESSOR ID... | --all STREAM PROCESSOR", []cli.Flag{allFlag("replay")},
				deadAction("replayed", func(a *app.App) deadFn { return a.ReplayDead }, func(a *app.App) deadAllFn { return a.ReplayAllDead })),
			sub("purge", "delete dead letters, without asking", "STREAM PROCESSOR ID... | --all STREAM PROCESSOR",
				[]cli.Flag{allFlag("delete")},
				deadAction("purged", func(a *app.App) deadFn { return a.DeleteDead }, func(a *app.App) deadAllFn { return a.DeleteAllDead })),
		},
	}
}

type (
	deadFn    = func(ctx context.Context, stream, processor string, ids ...string) (app.DeadResult, error)
	deadAllFn = func(ctx context.Context, stream, processor string) (int, error)
)

// deadAction runs one (on the IDs given) or all (with --all) and prints
// how many dead letters it did.
func deadAction(done string, one func(*app.App) deadFn, all func(*app.App) deadAllFn) func(*cli.Context, *app.App) error {
	return func(c *cli.Context, a *app.App) error {
		stream, proc := c.Args().Get(0), c.Args().Get(1)
		ids := c.Args().Slice()[2:]
		var n int
		switch {
		case c.Bool(flagAll) && len(ids) > 0:
			return usageErrorf("%s: give dead-letter IDs or --all, not both", c.Command.Name)
		case c.Bool(flagAll):
			var err error
			n, err = all(a)(c.Context, stream, proc)
			if err != nil {
				return deadError(err)
			}
		case len(ids) == 0:
			return usageErrorf("%s: give dead-letter IDs or --all (see %s dead %s --help)", c.Command.Name, c.App.Name, c.Command.Name)
		default:
			res, err := one(a)(c.Context, stream, proc, ids...)
			if err != nil {
				if res.Done > 0 {
					fmt.Fprintf(c.App.Writer, "%s %d dead %s of %s/%s\n", done, res.Done, plural(res.Done, "letter"), stream, proc)
				}
				return deadError(err)
			}
			n = res.Done
			if len(res.Missing) > 0 {
				fmt.Fprintf(c.App.Writer, "%s %d dead %s of %s/%s\n", done, n, plural(n, "letter"), stream, proc)
				return fmt.Errorf("no dead %s %s of %s/%s", plural(len(res.Missing), "letter"), strings.Join(res.Missing, ", "), stream, proc)
			}
		}
		_, err := fmt.Fprintf(c.App.Writer, "%s %d dead %s of %s/%s\n", done, n, plural(n, "letter"), stream, proc)
		return err
	}
}

// deadError makes bad requests usage errors.
func deadError(err error) error {
	if errors.Is(err, app.ErrBadDeadLetter) || errors.Is(err, core.ErrUnknownStream) {
		return usageError{err}
	}
	return err
}

func printDeadPage(c *cli.Context, page *inspect.DeadPage) error {
	w := c.App.Writer
	if c.Bool(flagJSON) {
		return json.NewEncoder(w).Encode(page)
	}
	var rows [][]string
	for _, d := range page.Letters {
		rows = append(rows, []string{d.ID, d.EntryID, fmt.Sprint(d.Partition), orDash(quoteTerm(d.Key)),
			deadTimeText(d.Time), deadAttempts(d.Attempts), quoteTerm(d.Error)})
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "no dead letters of %s/%s\n", page.Stream, page.Processor)
		return err
	}
	table(w, "ID\tENTRY\tPARTITION\tKEY\tDIED\tATTEMPTS\tERROR", rows)
	if page.Next != "" {
		fmt.Fprintf(w, "%d in all; next page: --after %s\n", page.Total, page.Next)
	}
	return nil
}

func printDeadLetter(c *cli.Context, d *inspect.DeadLetter) error {
	w := c.App.Writer
	if c.Bool(flagJSON) {
		return json.NewEncoder(w).Encode(d)
	}
	fmt.Fprintf(w, "dead letter %s\nentry      %s (partition %d)\nkey        %s\ndied       %s\nattempts   %s\ncodec      %s\nerror      %s\n",
		d.ID, d.EntryID, d.Partition, quoteTerm(d.Key), deadTimeText(d.Time), deadAttempts(d.Attempts), orDash(d.Codec), quoteTerm(d.Error))
	for _, name := range slices.Sorted(maps.Keys(d.Headers)) {
		fmt.Fprintf(w, "header     %s: %s\n", quoteTerm(name), quoteTerm(d.Headers[name]))
	}
	switch {
	case !d.Replayable:
		fmt.Fprintln(w, "record     none (the original entry was malformed; it cannot be replayed)")
	case d.DecodeError != "":
		fmt.Fprintf(w, "record     (raw, %s) %s\n", quoteTerm(d.DecodeError), quoteTerm(string(d.Data)))
	default:
		b, err := json.Marshal(d.Record)
		if err != nil {
			fmt.Fprintf(w, "record     (raw) %s\n", quoteTerm(string(d.Data)))
		} else {
			fmt.Fprintf(w, "record     %s\n", quoteTerm(string(b)))
		}
	}
	return nil
}

func deadTimeText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func deadAttempts(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}
