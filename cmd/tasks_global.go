package cmd

import (
	"fmt"
	"strconv"

	"github.com/leatdev/leat/app"
	"github.com/urfave/cli/v2"
)

// queueGlobal is "leat tasks global-concurrency": with QUEUE alone it prints
// the cap on the queue's running tasks over all workers; with N it sets it
// live (task.Queue.SetGlobalConcurrency), with none it lifts it.
func queueGlobal(c *cli.Context, a *app.App) error {
	if c.NArg() != 1 {
		if err := wantArgs(c, "QUEUE", "N|none"); err != nil {
			return err
		}
	}
	q, err := lookupQueue(c, a, c.Args().Get(0))
	if err != nil {
		return err
	}
	switch arg := c.Args().Get(1); arg {
	case "":
	case "none":
		err = q.SetGlobalConcurrency(c.Context, 0)
	default:
		n, perr := strconv.Atoi(arg)
		if perr != nil || n < 1 {
			return usageError{fmt.Errorf("global concurrency %q: want a whole number of at least 1, or none", arg)}
		}
		err = q.SetGlobalConcurrency(c.Context, n)
	}
	if err != nil {
		return err
	}
	n, err := q.GlobalConcurrency(c.Context)
	if err != nil {
		return err
	}
	if n == 0 {
		_, err = fmt.Fprintf(c.App.Writer, "%s: no cap over all workers (each runs up to its concurrency)\n", q.Name())
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s: at most %d %s running at once over all workers\n", q.Name(), n, plural(n, "task"))
	return err
}
