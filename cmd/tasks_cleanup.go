package cmd

import (
	"fmt"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
)

// Flags of the clean-up commands.
const (
	flagOlderThan = "older-than"
	flagForce     = "force"
)

// cleanupCommands are the subcommands of "leat tasks" that clean a queue
// up: drain, clean and obliterate.
func cleanupCommands(sub func(name, usage, args string, flags []cli.Flag, action func(*cli.Context, *app.App) error) *cli.Command) []*cli.Command {
	return []*cli.Command{
		sub("drain", "delete a queue's tasks that wait to run (pending, scheduled, retrying); running ones go on", "QUEUE", nil, queueDrain),
		sub("clean", "delete a queue's ended tasks of one state that ended at least a given time ago", "QUEUE --state STATE [--older-than DURATION]",
			[]cli.Flag{
				&cli.StringFlag{Name: flagState, Usage: "succeeded, failed, cancelled or dead (required)"},
				&cli.DurationFlag{Name: flagOlderThan, Usage: "only the tasks that ended at least this long ago (default 0: all of them)"},
			}, queueClean),
		sub("obliterate", "delete a whole queue: every task, its settings and its registry entry (refused while workers run it)", "QUEUE",
			[]cli.Flag{&cli.BoolFlag{Name: flagForce, Usage: "delete it even while workers run it"}}, queueObliterate),
	}
}

func queueDrain(c *cli.Context, a *app.App) error {
	if err := wantArgs(c, "QUEUE"); err != nil {
		return err
	}
	q, err := lookupQueue(c, a, c.Args().First())
	if err != nil {
		return err
	}
	n, err := q.Drain(c.Context)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s: %d waiting %s deleted\n", q.Name(), n, plural(n, "task"))
	return err
}

func queueClean(c *cli.Context, a *app.App) error {
	if err := wantArgs(c, "QUEUE"); err != nil {
		return err
	}
	st := task.State(c.String(flagState))
	if !st.Final() {
		return usageError{fmt.Errorf("--state %q: want succeeded, failed, cancelled or dead", st)}
	}
	age := c.Duration(flagOlderThan)
	if age < 0 {
		return usageError{fmt.Errorf("--older-than %s: want a duration of at least 0", age)}
	}
	q, err := lookupQueue(c, a, c.Args().First())
	if err != nil {
		return err
	}
	n, err := q.Clean(c.Context, st, age)
	if err != nil {
		return err
	}
	when := ""
	if age > 0 {
		when = " that ended at least " + age.String() + " ago"
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s: %d %s %s%s deleted\n", q.Name(), n, st, plural(n, "task"), when)
	return err
}

func queueObliterate(c *cli.Context, a *app.App) error {
	if err := wantArgs(c, "QUEUE"); err != nil {
		return err
	}
	q, err := lookupQueue(c, a, c.Args().First())
	if err != nil {
		return err
	}
	n, err := q.Obliterate(c.Context, c.Bool(flagForce))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s: obliterated (%d %s deleted)\n", q.Name(), n, plural(int(n), "key"))
	return err
}
