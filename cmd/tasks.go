package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
)

const (
	flagAll   = "all"
	flagState = "state"
	flagLimit = "limit"
)

func tasksCommand(setup Setup) *cli.Command {
	jsonFlag := func() cli.Flag {
		return &cli.BoolFlag{Name: flagJSON, Usage: "print JSON instead of a table"}
	}
	sub := func(name, usage, args string, flags []cli.Flag, action func(*cli.Context, *app.App) error) *cli.Command {
		return &cli.Command{
			Name: name, Usage: usage, ArgsUsage: args, Flags: append(flags, helpFlag()),
			HideHelp: true, OnUsageError: onUsageError,
			Action: func(c *cli.Context) error {
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
		Name:  "tasks",
		Usage: "show the counts of tasks per state of every task queue, list a queue's dead, recent or scheduled tasks, show, wait for, edit, cancel, requeue or delete a task, pause or resume a queue, set its concurrency, global concurrency or rate, drain, clean or obliterate it, or watch its tasks' state changes",
		Description: "Without a subcommand, prints one row per task queue of the app with the number of\n" +
			"its tasks in each state (kept as tasks move: reading them never scans).",
		Flags:        []cli.Flag{jsonFlag(), helpFlag()},
		HideHelp:     true,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c); err != nil {
				return err
			}
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			return printCounts(c, a)
		},
		Subcommands: append([]*cli.Command{
			sub("list", "list a queue's dead tasks (latest first), finished ones still retained, or scheduled ones (soonest first)", "QUEUE",
				[]cli.Flag{jsonFlag(),
					&cli.StringFlag{Name: flagState, Value: string(task.ListDead), Usage: "`LISTING`: dead, recent or scheduled"},
					&cli.IntFlag{Name: flagLimit, Value: 20, Usage: fmt.Sprintf("at most `N` tasks, 1 to %d", task.MaxList)}},
				func(c *cli.Context, a *app.App) error {
					if err := wantArgs(c, "QUEUE"); err != nil {
						return err
					}
					q, err := lookupQueue(c, a, c.Args().Get(0))
					if err != nil {
						return err
					}
					which := task.Listing(c.String(flagState))
					tasks, err := q.List(c.Context, which, c.Int(flagLimit))
					if errors.Is(err, task.ErrBadList) {
						return usageError{err}
					}
					if err != nil {
						return err
					}
					return printList(c, which, tasks)
				}),
			sub("show", "print a task's status, payload and result", "ID", []cli.Flag{jsonFlag()},
				withTask(func(c *cli.Context, q *rawQueue) error {
					in, err := q.Info(c.Context, c.Args().Get(0))
					if err != nil {
						return err
					}
					return printInfo(c, in)
				})),
			sub("wait", "wait for a task to finish; print its result, or fail with its error", "ID",
				[]cli.Flag{jsonFlag(), &cli.DurationFlag{Name: flagTimeout, Value: time.Minute, Usage: "give up after `DURATION`"}},
				withTask(func(c *cli.Context, q *rawQueue) error {
					ctx, cancel := context.WithTimeout(c.Context, c.Duration(flagTimeout))
					defer cancel()
					in, err := q.Wait(ctx, c.Args().Get(0))
					if errors.Is(err, context.DeadlineExceeded) && c.Context.Err() == nil && in != nil {
						return fmt.Errorf("task %s is still %s after %s", c.Args().Get(0), in.State, c.Duration(flagTimeout))
					}
					if err != nil {
						return err
					}
					if c.Bool(flagJSON) {
						if err := printInfo(c, in); err != nil {
							return err
						}
					} else if in.State == task.Succeeded {
						fmt.Fprintln(c.App.Writer, quoteTerm(string(in.Result)))
					}
					if in.State != task.Succeeded {
						return fmt.Errorf("task %s is %s: %s", in.ID, in.State, quoteTerm(in.Error))
					}
					return nil
				})),
			sub("follow", "print a task's progress reports and partial results in order as they come, then its result", "ID",
				[]cli.Flag{jsonFlag()},
				withTask(func(c *cli.Context, q *rawQueue) error {
					return followTask(c, q, c.Args().Get(0))
				})),
			sub("logs", "print a task's log lines in order (its handler's Task.Log lines, a subprocess handler's stderr)", "ID",
				[]cli.Flag{jsonFlag()},
				withTask(func(c *cli.Context, q *rawQueue) error {
					lines, err := q.Logs(c.Context, c.Args().Get(0))
					if err != nil {
						return err
					}
					enc := json.NewEncoder(c.App.Writer)
					for _, l := range lines {
						if c.Bool(flagJSON) {
							err = enc.Encode(l)
						} else {
							_, err = fmt.Fprintf(c.App.Writer, "%s  #%d  %s\n", l.Time.Format(time.RFC3339Nano), l.Attempt, quoteTerm(l.Line))
						}
						if err != nil {
							return err
						}
					}
					return nil
				})),
			sub("edit", "change a task that waits to run: its payload, its priority, or when it runs", "ID [--payload JSON] [--priority LEVEL] [--run-now | --delay DURATION | --at TIME]",
				editFlags(), withTask(editTask)),
			sub("cancel", "cancel a pending, scheduled, retrying or running task", "ID", nil,
				withTask(func(c *cli.Context, q *rawQueue) error {
					st, err := q.Cancel(c.Context, c.Args().Get(0))
					if errors.Is(err, task.ErrFinished) {
						return usageError{err}
					}
					if err != nil {
						return err
					}
					what := "cancelled"
					if st == task.Active {
						what = "cancelling (it is running: its worker cancels it)"
					}
					_, err = fmt.Fprintf(c.App.Writer, "%s: was %s, %s\n", c.Args().Get(0), st, what)
					return err
				})),
			sub("requeue", "make a dead or failed task ready again, or every dead task of a queue", "ID | --all QUEUE",
				[]cli.Flag{&cli.BoolFlag{Name: flagAll, Usage: "requeue every dead task of QUEUE"}},
				taskOrDead("requeued",
					func(c *cli.Context, q *rawQueue, id string) (string, error) {
						return "requeued", q.Requeue(c.Context, id)
					},
					func(c *cli.Context, q *rawQueue) (int, error) { return q.RequeueDead(c.Context) })),
			sub("delete", "delete an ended task (succeeded, failed, cancelled or dead) now, or every dead task of a queue", "ID | --all QUEUE",
				[]cli.Flag{&cli.BoolFlag{Name: flagAll, Usage: "delete every dead task of QUEUE"}},
				taskOrDead("deleted",
					func(c *cli.Context, q *rawQueue, id string) (string, error) {
						st, err := q.Delete(c.Context, id)
						return fmt.Sprintf("was %s, deleted", st), err
					},
					func(c *cli.Context, q *rawQueue) (int, error) { return q.DeleteDead(c.Context) })),
			sub("pause", "stop the workers from starting a queue's tasks (running tasks finish; enqueueing goes on)", "QUEUE", nil,
				func(c *cli.Context, a *app.App) error {
					return pauseOrResume(c, a, true)
				}),
			sub("resume", "let the workers start a paused queue's tasks again", "QUEUE", nil,
				func(c *cli.Context, a *app.App) error {
					return pauseOrResume(c, a, false)
				}),
			sub("concurrency", "set how many tasks of a queue each worker runs at once, live, or go back to the program's (default)", "QUEUE N|default", nil,
				func(c *cli.Context, a *app.App) error {
					if err := wantArgs(c, "QUEUE", "N|default"); err != nil {
						return err
					}
					arg := c.Args().Get(1)
					n, err := strconv.Atoi(arg)
					if arg != "default" && (err != nil || n < 1) {
						return usageErrorf("concurrency %q: want a whole number of at least 1, or default", arg)
					}
					q, err := lookupQueue(c, a, c.Args().Get(0))
					if err != nil {
						return err
					}
					if arg == "default" {
						if err := q.ClearConcurrency(c.Context); err != nil {
							return err
						}
						_, err = fmt.Fprintf(c.App.Writer, "%s: each worker's own concurrency (applied within a second)\n", q.Name())
						return err
					}
					err = q.SetConcurrency(c.Context, n)
					if errors.Is(err, task.ErrBadSetting) {
						return usageError{err}
					}
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(c.App.Writer, "%s: concurrency %d per worker (applied within a second)\n", q.Name(), n)
					return err
				}),
			sub("rate", "show or set a queue's rate limit over all workers, live: N/DURATION (say 100/1s), none, or default (the program's)", "QUEUE [N/DURATION|none|default]", nil,
				queueRate),
			sub("global-concurrency", "show or set, live, the most tasks of a queue running at once over all workers: N, or none", "QUEUE [N|none]", nil,
				queueGlobal),
		}, append(cleanupCommands(sub), eventsCommands(sub)...)...),
	}
}

// rawQueue is a task queue as the CLI opens it (task.Lookup).
type rawQueue = task.Queue[json.RawMessage, json.RawMessage]

// taskOrDead is the action of a subcommand on one task (ID), or with --all
// on every dead task of a queue (QUEUE): one runs it on a task and returns
// what to print after the ID; all runs it on a queue's dead tasks and
// returns how many, printed as "DONE N dead tasks of QUEUE". A task in a
// state one refuses (task.ErrFinished) is a usage error.
func taskOrDead(done string, one func(*cli.Context, *rawQueue, string) (string, error), all func(*cli.Context, *rawQueue) (int, error)) func(*cli.Context, *app.App) error {
	return func(c *cli.Context, a *app.App) error {
		if c.Bool(flagAll) {
			if err := wantArgs(c, "QUEUE"); err != nil {
				return err
			}
			q, err := lookupQueue(c, a, c.Args().Get(0))
			if err != nil {
				return err
			}
			n, err := all(c, q)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.App.Writer, "%s %d dead %s of %s\n", done, n, plural(n, "task"), q.Name())
			return err
		}
		if err := wantArgs(c, "ID"); err != nil {
			return err
		}
		q, err := findTask(c, a)
		if err != nil {
			return err
		}
		what, err := one(c, q, c.Args().Get(0))
		if errors.Is(err, task.ErrFinished) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.App.Writer, "%s: %s\n", c.Args().Get(0), what)
		return err
	}
}

// pauseOrResume pauses or resumes the queue named by the first argument.
func pauseOrResume(c *cli.Context, a *app.App, pause bool) error {
	if err := wantArgs(c, "QUEUE"); err != nil {
		return err
	}
	q, err := lookupQueue(c, a, c.Args().Get(0))
	if err != nil {
		return err
	}
	if !pause {
		if err := q.Resume(c.Context); err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.App.Writer, "%s: resumed\n", q.Name())
		return err
	}
	if err := q.Pause(c.Context); err != nil {
		return err
	}
	_, at, err := q.Paused(c.Context)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s: paused since %s (running tasks finish; resume with leat tasks resume %s)\n",
		q.Name(), at.UTC().Format(time.RFC3339), q.Name())
	return err
}

// withTask is the action of a "leat tasks" subcommand on one task: it
// checks the ID argument and finds the task's queue before action runs.
func withTask(action func(c *cli.Context, q *rawQueue) error) func(*cli.Context, *app.App) error {
	return func(c *cli.Context, a *app.App) error {
		if err := wantArgs(c, "ID"); err != nil {
			return err
		}
		q, err := findTask(c, a)
		if err != nil {
			return err
		}
		return action(c, q)
	}
}

// lookupQueue opens the task queue called name as recorded in Redis; an
// unknown queue is a usage error.
func lookupQueue(c *cli.Context, a *app.App, name string) (*rawQueue, error) {
	q, err := task.Lookup(c.Context, a, name)
	if errors.Is(err, task.ErrUnknownQueue) {
		return nil, unknownQueue(c.Context, a, err)
	}
	return q, err
}

// unknownQueue is the usage error for err, a task.ErrUnknownQueue: it says
// which queues the app's registry has.
func unknownQueue(ctx context.Context, a *app.App, err error) error {
	defs, lerr := task.Queues(ctx, a)
	if lerr != nil {
		return usageError{err}
	}
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	known := "it has none"
	if len(names) > 0 {
		known = "its queues: " + strings.Join(names, ", ")
	}
	return usageError{fmt.Errorf("%w in the registry of app %q (%s; a queue is recorded when a program declaring it runs or enqueues, or by leat apply -f leat.yaml)", err, a.Name(), known)}
}

// findTask returns the queue of the task named by the first argument; an
// unknown task is a usage error.
func findTask(c *cli.Context, a *app.App) (*rawQueue, error) {
	q, err := task.Find(c.Context, a, c.Args().Get(0))
	if errors.Is(err, task.ErrNotFound) {
		return nil, usageError{err}
	}
	return q, err
}

// queueCounts is one row of "leat tasks".
type queueCounts struct {
	Queue    string               `json:"queue"`
	Counts   map[task.State]int64 `json:"counts"`
	PausedAt *time.Time           `json:"paused_at"` // null when not paused
}

func printCounts(c *cli.Context, a *app.App) error {
	sums, err := task.Summaries(c.Context, a)
	if err != nil {
		return err
	}
	rows := make([]queueCounts, 0, len(sums))
	for _, sum := range sums {
		row := queueCounts{Queue: sum.Definition.Name, Counts: sum.Counts}
		if sum.Paused {
			at := sum.PausedAt.UTC()
			row.PausedAt = &at
		}
		rows = append(rows, row)
	}
	if c.Bool(flagJSON) {
		return writeJSON(c, rows)
	}
	if len(rows) == 0 {
		// as inspect says of streams: an app name or prefix mistyped shows
		// here, not as an empty table
		_, err := fmt.Fprintf(c.App.Writer, "no task queues in the registry of app %q (key prefix %q)\n", a.Name(), a.Config().KeyPrefix)
		return err
	}
	header := []string{"QUEUE"}
	for _, s := range task.States {
		header = append(header, strings.ToUpper(string(s)))
	}
	var cells [][]string
	for _, r := range rows {
		name := r.Queue
		if r.PausedAt != nil {
			name += " (paused)"
		}
		row := []string{name}
		for _, s := range task.States {
			row = append(row, fmtInt(int64(r.Counts[s])))
		}
		cells = append(cells, row)
	}
	table(c.App.Writer, strings.Join(header, "\t"), cells)
	return nil
}

// printList prints the tasks of a listing: a row each, with the time that
// orders the listing (death, end, or due).
func printList(c *cli.Context, which task.Listing, tasks []*task.Info) error {
	if c.Bool(flagJSON) {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if tasks == nil {
			tasks = []*task.Info{}
		}
		return enc.Encode(tasks)
	}
	if len(tasks) == 0 {
		_, err := fmt.Fprintf(c.App.Writer, "no %s tasks\n", which)
		return err
	}
	when, at := "FINISHED", func(in *task.Info) time.Time { return in.FinishedAt }
	switch which {
	case task.ListDead:
		when = "DIED"
	case task.ListScheduled:
		when, at = "DUE", func(in *task.Info) time.Time { return in.DueAt }
	}
	var rows [][]string
	for _, in := range tasks {
		rows = append(rows, []string{in.ID, string(in.State), fmt.Sprintf("%d/%d", in.Attempts, in.MaxRetries+1),
			in.EnqueuedAt.Format(time.RFC3339), at(in).Format(time.RFC3339), orDash(quoteTerm(clipLine(in.Error, 60)))})
	}
	table(c.App.Writer, "ID\tSTATE\tATTEMPTS\tENQUEUED\t"+when+"\tERROR", rows)
	return nil
}

// clipLine returns s on one line, cut to n runes with an ellipsis.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func printInfo(c *cli.Context, in *task.Info) error {
	if c.Bool(flagJSON) {
		return writeJSON(c, in)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format(time.RFC3339Nano)
	}
	q := quoteTerm // text from handlers and producers
	fmt.Fprintf(tw, "id\t%s\nqueue\t%s\nstate\t%s\nattempts\t%d of %d\n", q(in.ID), q(in.Queue), in.State, in.Attempts, in.MaxRetries+1)
	if in.Priority != "" {
		fmt.Fprintf(tw, "priority\t%s\n", q(in.Priority))
	}
	if in.Key != "" {
		fmt.Fprintf(tw, "key\t%s\n", q(in.Key))
	}
	fmt.Fprintf(tw, "enqueued\t%s\ndue\t%s\nstarted\t%s\nfinished\t%s\n", at(in.EnqueuedAt), at(in.DueAt), at(in.StartedAt), at(in.FinishedAt))
	if in.Worker != "" {
		fmt.Fprintf(tw, "worker\t%s\n", q(in.Worker))
	}
	fmt.Fprintf(tw, "payload\t%s\n", q(string(in.Payload)))
	for _, name := range slices.Sorted(maps.Keys(in.Headers)) {
		fmt.Fprintf(tw, "header %s\t%s\n", q(name), q(in.Headers[name]))
	}
	if len(in.Result) > 0 {
		fmt.Fprintf(tw, "result\t%s\n", q(string(in.Result)))
	}
	if in.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", q(in.Error))
	}
	if h := in.Webhook; h != nil {
		state := h.State
		if state == "" {
			state = "waiting for the task to end"
		}
		fmt.Fprintf(tw, "webhook\t%s\nwebhook delivery\t%s, %d attempts\n", q(h.URL), q(state), h.Attempts)
		if !h.DeliveredAt.IsZero() {
			fmt.Fprintf(tw, "webhook delivered\t%s\n", at(h.DeliveredAt))
		}
		if h.LastError != "" {
			fmt.Fprintf(tw, "webhook error\t%s\n", q(h.LastError))
		}
	}
	return tw.Flush()
}

// queueRate is "leat tasks rate": with QUEUE alone it prints the rate limit
// that applies; with a setting it sets it live (task.Queue.SetRate), lifts
// it (none) or goes back to the program's (default, task.Queue.ClearRate).
func queueRate(c *cli.Context, a *app.App) error {
	if c.NArg() != 1 {
		if err := wantArgs(c, "QUEUE", "N/DURATION|none|default"); err != nil {
			return err
		}
	}
	q, err := lookupQueue(c, a, c.Args().Get(0))
	if err != nil {
		return err
	}
	switch arg := c.Args().Get(1); arg {
	case "":
	case "default":
		err = q.ClearRate(c.Context)
	case "none":
		err = q.SetRate(c.Context, 0, 0)
	default:
		n, window, perr := parseRate(arg)
		if perr != nil {
			return usageError{perr}
		}
		err = q.SetRate(c.Context, n, window)
	}
	if errors.Is(err, task.ErrBadSetting) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	sum, err := q.Summary(c.Context)
	if err != nil {
		return err
	}
	n, window, source := sum.Rate.N, sum.Rate.Window, "set live"
	if !sum.LiveRate {
		source = "the program's Rate option"
	}
	if n == 0 {
		_, err = fmt.Fprintf(c.App.Writer, "%s: no rate limit (%s)\n", q.Name(), source)
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s: at most %d %s started per %s over all workers (%s)\n",
		q.Name(), n, plural(n, "task"), window, source)
	return err
}

// parseRate reads N/DURATION: a whole number of at least 1 and a duration
// of at least a millisecond.
func parseRate(s string) (int, time.Duration, error) {
	ns, ds, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 {
		return 0, 0, fmt.Errorf("rate %q: want N/DURATION with N a whole number of at least 1 (say 100/1s), none, or default", s)
	}
	d, err := time.ParseDuration(ds)
	if err != nil || d < time.Millisecond {
		return 0, 0, fmt.Errorf("rate %q: want a window of at least 1ms after the / (say 100/1s)", s)
	}
	return n, d, nil
}
