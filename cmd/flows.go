package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
)

// flagWait makes "flows submit" wait for the flow's end.
const flagWait = "wait"

func flowsCommand(setup Setup) *cli.Command {
	jsonFlag := func() cli.Flag {
		return &cli.BoolFlag{Name: flagJSON, Usage: "print JSON instead of text"}
	}
	sub := func(name, usage, args string, flags []cli.Flag, action func(*cli.Context, *app.App) error) *cli.Command {
		return &cli.Command{
			Name: name, Usage: usage, ArgsUsage: args, Flags: append(flags, helpFlag()),
			HideHelp: true, OnUsageError: onUsageError,
			Action: func(c *cli.Context) error {
				want := []string{}
				if args != "" {
					want = append(want, args)
				}
				if err := wantArgs(c, want...); err != nil {
					return err
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
		Name:         "flows",
		Usage:        "submit a flow (a graph of tasks across queues) from a file, show, wait for, cancel or list flows",
		Flags:        []cli.Flag{helpFlag()},
		HideHelp:     true,
		OnUsageError: onUsageError,
		Subcommands: []*cli.Command{
			sub("submit", "submit the flow of a YAML or JSON file (- for standard input) and print its ID; with --wait, wait for its end as \"flows wait\" does", "FILE",
				[]cli.Flag{&cli.BoolFlag{Name: flagJSON, Usage: "print JSON instead of text: {\"id\": ID}, or with --wait the flow"},
					&cli.BoolFlag{Name: flagWait, Usage: "wait for the flow to end, then print its sinks' results (fail when it did not succeed)"},
					&cli.DurationFlag{Name: flagTimeout, Value: time.Minute, Usage: "with --wait, give up after `DURATION` (the flow goes on)"}},
				func(c *cli.Context, a *app.App) error {
					if c.Duration(flagTimeout) <= 0 {
						return usageErrorf("--timeout must be positive")
					}
					in := os.Stdin
					if name := c.Args().Get(0); name != "-" {
						f, err := os.Open(name)
						if err != nil {
							return usageError{err}
						}
						defer f.Close()
						in = f
					}
					flow, err := readFlow(c, a, in)
					if err != nil {
						return err
					}
					id, err := flow.Submit(c.Context)
					switch {
					case errors.Is(err, task.ErrInvalidFlow):
						return usageError{err}
					case errors.Is(err, task.ErrDuplicate):
						fmt.Fprintln(c.App.Writer, id)
						return usageError{err}
					case err != nil:
						if id != "" {
							fmt.Fprintln(c.App.Writer, id)
						}
						return err
					}
					if !c.Bool(flagWait) {
						if c.Bool(flagJSON) {
							return writeJSON(c, map[string]string{"id": id})
						}
						fmt.Fprintln(c.App.Writer, id)
						return nil
					}
					if !c.Bool(flagJSON) {
						fmt.Fprintln(c.App.Writer, id)
					}
					return waitFlow(c, a, id)
				}),
			sub("show", "print a flow's state and its graph, a block per depth, each node with its queue, state and parents", "ID",
				[]cli.Flag{jsonFlag(), &cli.BoolFlag{Name: flagAll, Usage: fmt.Sprintf("print every node of a layer of more than %d", showLayerMax)}},
				func(c *cli.Context, a *app.App) error {
					in, err := task.GetFlow(c.Context, a, c.Args().Get(0))
					if errors.Is(err, task.ErrNotFound) {
						return usageError{err}
					}
					if err != nil {
						return err
					}
					return printFlow(c, in)
				}),
			sub("wait", "wait for a flow to end; print its sinks' results, or fail when it did not succeed", "ID",
				[]cli.Flag{jsonFlag(), &cli.DurationFlag{Name: flagTimeout, Value: time.Minute, Usage: "give up after `DURATION`"}},
				func(c *cli.Context, a *app.App) error { return waitFlow(c, a, c.Args().Get(0)) }),
			sub("cancel", "cancel a running flow: its nodes not started are cancelled, its running ones asked to stop", "ID", nil,
				func(c *cli.Context, a *app.App) error {
					err := task.CancelFlow(c.Context, a, c.Args().Get(0))
					if errors.Is(err, task.ErrNotFound) || errors.Is(err, task.ErrFinished) {
						return usageError{err}
					}
					return err
				}),
			sub("list", "list the app's flows, newest first", "",
				[]cli.Flag{jsonFlag(),
					&cli.StringFlag{Name: flagState, Usage: "only flows in `STATE`: running, succeeded, failed or cancelled"},
					&cli.IntFlag{Name: flagLimit, Value: 20, Usage: "at most `N` flows"}},
				func(c *cli.Context, a *app.App) error {
					state := task.FlowState(c.String(flagState))
					switch state {
					case "", task.FlowRunning, task.FlowSucceeded, task.FlowFailed, task.FlowCancelled:
					default:
						return usageErrorf("unknown flow state %q: running, succeeded, failed or cancelled", state)
					}
					if c.Int(flagLimit) < 1 {
						return usageErrorf("--limit must be at least 1")
					}
					list, err := task.ListFlows(c.Context, a, state, c.Int(flagLimit))
					if err != nil {
						return err
					}
					if c.Bool(flagJSON) {
						if list == nil {
							list = []task.FlowSummary{}
						}
						return writeJSON(c, list)
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tSTATE\tNODES\tLEFT\tCREATED")
					for _, f := range list {
						fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", quoteTerm(f.ID), f.State, f.Nodes, f.Left, f.CreatedAt.Format(time.RFC3339))
					}
					return tw.Flush()
				}),
		},
	}
}

// printFlow prints a flow: JSON with --json, else its layered graph
// (drawFlow).
func printFlow(c *cli.Context, in *task.FlowInfo) error {
	if c.Bool(flagJSON) {
		return writeJSON(c, in)
	}
	drawFlow(c.App.Writer, in, c.Bool(flagAll))
	return nil
}

// waitFlow waits up to --timeout for flow id to end, then prints its sinks'
// results (or, with --json, the flow) and fails when it did not succeed.
func waitFlow(c *cli.Context, a *app.App, id string) error {
	ctx, cancel := context.WithTimeout(c.Context, c.Duration(flagTimeout))
	defer cancel()
	in, err := task.WaitFlow(ctx, a, id)
	switch {
	case errors.Is(err, task.ErrNotFound):
		return usageError{err}
	case errors.Is(err, context.DeadlineExceeded) && c.Context.Err() == nil:
		return fmt.Errorf("flow %s has not ended after %s", quoteTerm(id), c.Duration(flagTimeout))
	case err != nil:
		return err
	}
	if c.Bool(flagJSON) {
		if err := writeJSON(c, in); err != nil {
			return err
		}
	} else if in.State == task.FlowSucceeded {
		sinkResults(c.App.Writer, in)
	}
	if in.State != task.FlowSucceeded {
		why := ""
		if in.FailedBy != "" {
			why = " (node " + quoteTerm(in.FailedBy) + ")"
		}
		return fmt.Errorf("flow %s is %s%s", quoteTerm(id), in.State, why)
	}
	return nil
}
