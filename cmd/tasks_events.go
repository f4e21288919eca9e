package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
)

const (
	flagSince = "since"
	flagCount = "count"
)

// eventsCommands are the "leat tasks" subcommands of queue events: watch
// follows them, events turns them on or off.
func eventsCommands(sub func(name, usage, args string, flags []cli.Flag, action func(*cli.Context, *app.App) error) *cli.Command) []*cli.Command {
	return []*cli.Command{
		sub("watch", "print every state change of a queue's tasks as it happens (its events must be on: leat tasks events)", "QUEUE",
			[]cli.Flag{
				&cli.BoolFlag{Name: flagJSON, Usage: "print one JSON object per event"},
				&cli.StringFlag{Name: flagSince, Value: "$", Usage: "start after `POSITION`: $ (new events only), 0 (the whole history kept) or an event ID to resume after"},
				&cli.IntFlag{Name: flagCount, Usage: "stop after `N` events (0: follow until interrupted)"},
			},
			watchQueue),
		sub("events", "show whether a queue records its tasks' state changes, or turn that on (keeping about N of the latest) or off, live", "QUEUE [N|on|off]", nil,
			queueEvents),
	}
}

// watchQueue prints the events of the queue named by the first argument.
func watchQueue(c *cli.Context, a *app.App) error {
	if err := wantArgs(c, "QUEUE"); err != nil {
		return err
	}
	since := c.String(flagSince)
	if err := task.CheckEventPosition(since); err != nil {
		return usageError{err}
	}
	limit := c.Int(flagCount)
	if limit < 0 {
		return usageErrorf("--count %d: want 0 or more", limit)
	}
	q, err := lookupQueue(c, a, c.Args().Get(0))
	if err != nil {
		return err
	}
	n, err := q.EventsCap(c.Context)
	if err != nil {
		return err
	}
	if n == 0 && !c.Bool(flagJSON) {
		fmt.Fprintf(c.App.ErrWriter, "%s: events are off; only the history kept is shown until they are on (leat tasks events %s on)\n", q.Name(), q.Name())
	}
	enc := json.NewEncoder(c.App.Writer)
	seen := 0
	for ev, err := range q.Events(c.Context, since) {
		if err != nil {
			if errors.Is(err, context.Canceled) && c.Context.Err() != nil {
				return nil // interrupted
			}
			return err
		}
		if c.Bool(flagJSON) {
			err = enc.Encode(ev)
		} else {
			err = printEvent(c, ev)
		}
		if err != nil {
			return err
		}
		seen++
		if limit > 0 && seen >= limit {
			return nil
		}
	}
	return nil
}

// printEvent prints one event as a line: time, ID, task, previous and new
// state, attempt and error.
func printEvent(c *cli.Context, ev task.QueueEvent) error {
	prev := string(ev.Prev)
	if prev == "" {
		prev = "new"
	}
	line := fmt.Sprintf("%s  %s  %s  %s -> %s  #%d", ev.Time.Format(time.RFC3339Nano), ev.ID, quoteTerm(ev.Task), prev, ev.State, ev.Attempt)
	if ev.Error != "" {
		line += "  " + quoteTerm(ev.Error)
	}
	_, err := fmt.Fprintln(c.App.Writer, line)
	return err
}

// queueEvents shows or sets whether a queue records its events.
func queueEvents(c *cli.Context, a *app.App) error {
	if c.NArg() != 1 {
		if err := wantArgs(c, "QUEUE", "N|on|off"); err != nil {
			return err
		}
	}
	q, err := lookupQueue(c, a, c.Args().Get(0))
	if err != nil {
		return err
	}
	if c.NArg() == 2 {
		arg := c.Args().Get(1)
		n := 0
		switch arg {
		case "off":
			n = -1
		case "on":
		default:
			n, err = strconv.Atoi(arg)
			if err != nil || n < 1 || n > task.MaxEventsCap {
				return usageErrorf("events %q: want on, off or a whole number of events to keep, 1 to %d", arg, task.MaxEventsCap)
			}
		}
		if err := q.SetEvents(c.Context, n); err != nil {
			return err
		}
	}
	n, err := q.EventsCap(c.Context)
	if err != nil {
		return err
	}
	if n == 0 {
		_, err = fmt.Fprintf(c.App.Writer, "%s: events off\n", q.Name())
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s: events on, keeping about %d (follow them: leat tasks watch %s)\n", q.Name(), n, q.Name())
	return err
}
