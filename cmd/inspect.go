package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
)

func inspectCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "show the app's streams, processors, task queues, leader and workers, one stream per partition, or one task queue",
		ArgsUsage: "[STREAM | queue QUEUE]",
		Description: "Without arguments: the app's streams (partitions, retention size, entries kept), its\n" +
			"processors (live executors, partitions owned, lag, pending, quarantined partitions,\n" +
			"dead letters),\n" +
			"its task queues (tasks per state, age of the oldest ready task, tasks finished per\n" +
			"second over the last minute), its leader and term, and its workers with the age of\n" +
			"each executor's last heartbeat and the partitions it holds.\n\n" +
			"With STREAM: each partition's length and first and last entry IDs, and for each\n" +
			"processor of the stream, per partition: the owner (worker and executor), the lag\n" +
			"(entries not yet delivered), the pending entries (delivered, not acknowledged) and\n" +
			"the age of the oldest, the consumers, and a quarantine report if the partition is\n" +
			"stopped. A lag at 80% of the retention size or more is flagged: trimming would soon\n" +
			"drop entries the processor has not read.\n\n" +
			"With queue QUEUE: the task queue's tasks per state, per priority level the oldest\n" +
			"ready entry no worker took yet and the entries delivered and not acknowledged (and\n" +
			"the age of the oldest), and the tasks finished per second over the last minute and\n" +
			"the last 5 minutes. (A stream named queue is still inspected with: inspect queue.)\n\n" +
			"Every figure comes from O(1) commands per partition or priority level (XINFO STREAM,\n" +
			"XINFO GROUPS, XPENDING summary, GET, XRANGE COUNT 1) and counters the runtime keeps\n" +
			"(HGETALL, MGET), pipelined; nothing scans entries or keys. --json prints the\n" +
			"documented JSON document (inspect.Overview, inspect.StreamReport or\n" +
			"inspect.QueueReport).\n\n" +
			"--pools shows instead the workers of the app's control plane (leat serve --pools):\n" +
			"each worker's pool, host, revision, health, queues and last setup, and the revision\n" +
			"each deployment's source resolved to.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: flagJSON, Usage: "print JSON instead of tables"},
			poolsInspectFlag(),
			helpFlag(),
		},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Bool(flagPools) {
				return inspectPools(c, setup)
			}
			var name, queue string
			switch {
			case c.NArg() == 2 && c.Args().First() == "queue":
				queue = c.Args().Get(1)
				if err := rdb.CheckName("task queue", queue); err != nil {
					return usageError{err}
				}
			case c.NArg() == 2:
				return usageErrorf("inspect: want STREAM or queue QUEUE, got %q %q (see %s inspect --help)", c.Args().First(), c.Args().Get(1), c.App.Name)
			case c.NArg() > 2:
				return usageErrorf("inspect: want at most STREAM or queue QUEUE, got %d arguments (see %s inspect --help)", c.NArg(), c.App.Name)
			default:
				name = c.Args().First()
				if name != "" {
					if err := rdb.CheckName("stream", name); err != nil {
						return usageError{err}
					}
				}
			}
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			in := inspect.New(a.Client(), a.Config().KeyPrefix, a.Name())
			var doc any
			switch {
			case queue != "":
				r, err := in.Queue(c.Context, queue)
				if errors.Is(err, inspect.ErrUnknownQueue) {
					return usageError{err}
				}
				if err != nil {
					return fmt.Errorf("inspect task queue %q of app %q: %w", queue, a.Name(), err)
				}
				doc = r
				if !c.Bool(flagJSON) {
					return writeQueueReport(c.App.Writer, r)
				}
			case name == "":
				o, err := in.Overview(c.Context)
				if err != nil {
					return fmt.Errorf("inspect app %q: %w", a.Name(), err)
				}
				if len(o.Streams) == 0 && len(o.Queues) == 0 {
					if err := checkAppKnown(c.Context, a); err != nil {
						return err
					}
				}
				doc = o
				if !c.Bool(flagJSON) {
					return writeOverview(c.App.Writer, o)
				}
			default:
				r, err := in.Stream(c.Context, name)
				if err != nil {
					return err
				}
				doc = r
				if !c.Bool(flagJSON) {
					return writeStreamReport(c.App.Writer, r)
				}
			}
			return writeJSON(c, doc)
		},
	}
}

// table writes rows of tab-separated cells with aligned columns.
func table(w io.Writer, header string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// writeOverview prints o as tables.
func writeOverview(w io.Writer, o *inspect.Overview) error {
	fmt.Fprintf(w, "app %s at %s\n", o.App, o.Time.Format(time.RFC3339))
	if o.Leader != nil {
		fmt.Fprintf(w, "leader: worker %s, term %d\n", o.Leader.Worker, o.Leader.Term)
	} else {
		fmt.Fprintln(w, "leader: none")
	}
	fmt.Fprintln(w)
	if len(o.Streams) == 0 {
		fmt.Fprintln(w, "no streams in the registry")
	} else {
		var rows [][]string
		for _, s := range o.Streams {
			rows = append(rows, []string{s.Name, strconv.Itoa(s.Partitions), fmtInt(s.Size), fmtInt(s.Length), orDash(strings.Join(s.Processors, ","))})
		}
		table(w, "STREAM\tPARTITIONS\tSIZE\tLENGTH\tPROCESSORS", rows)
	}
	if len(o.Processors) > 0 {
		fmt.Fprintln(w)
		var rows [][]string
		for _, p := range o.Processors {
			rows = append(rows, []string{p.Stream + "/" + p.Processor, strconv.Itoa(p.Executors),
				fmt.Sprintf("%d/%d", p.Owned, p.Partitions), fmtLag(p.Lag), fmtInt(p.Pending), strconv.Itoa(p.Quarantined), fmtInt(p.Dead)})
		}
		table(w, "PROCESSOR\tEXECUTORS\tOWNED\tLAG\tPENDING\tQUARANTINED\tDEAD", rows)
	}
	if len(o.Queues) > 0 {
		fmt.Fprintln(w)
		header := "QUEUE"
		for _, st := range task.States {
			header += "\t" + strings.ToUpper(string(st))
		}
		var rows [][]string
		for _, q := range o.Queues {
			name := q.Name
			if q.PausedAt != nil {
				name += " (paused)"
			}
			row := []string{name}
			for _, st := range task.States {
				row = append(row, fmtInt(q.Counts[string(st)]))
			}
			row = append(row, fmtAgePtr(q.OldestReadyAgeMS), fmtRate(q.Throughput.LastMinute))
			rows = append(rows, row)
		}
		table(w, header+"\tOLDEST READY\tFINISHED/S (1M)", rows)
	}
	if len(o.Workers) > 0 {
		fmt.Fprintln(w)
		var rows [][]string
		for _, wk := range o.Workers {
			if len(wk.Executors) == 0 && len(wk.Queues) == 0 {
				rows = append(rows, []string{orDash(wk.ID), yesNo(wk.Leader), "-", "-", "-", "-", "-"})
			}
			for _, e := range wk.Executors {
				rows = append(rows, []string{orDash(wk.ID), yesNo(wk.Leader), e.ID, e.Stream + "/" + e.Processor,
					orDash(fmtInts(e.Partitions)), fmtAge(e.HeartbeatAgeMS), yesNo(e.Alive)})
			}
		}
		executors := len(rows) > 0
		if executors {
			table(w, "WORKER\tLEADER\tEXECUTOR\tPROCESSOR\tPARTITIONS\tHEARTBEAT\tALIVE", rows)
		}
		rows = nil
		for _, wk := range o.Workers {
			for _, q := range wk.Queues {
				rows = append(rows, []string{wk.ID, yesNo(wk.Leader), q.Queue, fmtInt(q.Running), fmtAge(q.IdleMS), yesNo(q.Alive)})
			}
		}
		if len(rows) > 0 {
			if executors {
				fmt.Fprintln(w)
			}
			table(w, "TASK WORKER\tLEADER\tQUEUE\tRUNNING\tLAST SEEN\tALIVE", rows)
		}
	}
	writeWarnings(w, o.Warnings)
	return nil
}

// writeStreamReport prints r as tables.
func writeStreamReport(w io.Writer, r *inspect.StreamReport) error {
	key := ""
	if r.KeyField != "" {
		key = ", key " + r.KeyField
	}
	fmt.Fprintf(w, "stream %s of app %s at %s: %d partitions, size %s, codec %s%s, %s entries\n\n",
		r.Stream, r.App, r.Time.Format(time.RFC3339), len(r.Partitions), fmtInt(r.Size), r.Codec, key, fmtInt(r.Length))
	var rows [][]string
	for _, p := range r.Partitions {
		rows = append(rows, []string{strconv.Itoa(p.Partition), fmtInt(p.Length), fmtInt(p.EntriesAdded), orDash(p.FirstID), orDash(p.LastID)})
	}
	table(w, "PARTITION\tLENGTH\tADDED\tFIRST ID\tLAST ID", rows)
	for _, pr := range r.Processors {
		tables := ""
		for i, t := range pr.Tables {
			if i == 0 {
				tables = "; tables "
			} else {
				tables += ", "
			}
			tables += t.Name + " (" + t.Codec + ")"
		}
		fmt.Fprintf(w, "\nprocessor %s: %d live %s, %d/%d partitions owned, lag %s, pending %s, %d quarantined, %s dead %s%s\n",
			pr.Processor, pr.Executors, plural(pr.Executors, "executor"), pr.Owned, len(pr.Partitions),
			fmtLag(pr.Lag), fmtInt(pr.Pending), pr.Quarantined, fmtInt(pr.Dead), plural(int(pr.Dead), "letter"), tables)
		var rows [][]string
		for _, pp := range pr.Partitions {
			worker, exec := "-", "-"
			if pp.Owner != nil {
				worker, exec = orDash(pp.Owner.Worker), pp.Owner.Executor
			}
			oldest := "-"
			if pp.OldestPendingAgeMS != nil {
				oldest = fmtAge(*pp.OldestPendingAgeMS)
			}
			status := "ok"
			switch {
			case pp.Quarantine != nil:
				status = pp.Quarantine.Policy + ": " + pp.Quarantine.Error
			case pp.Owner == nil:
				status = "unowned"
			}
			if pp.RetentionRisk {
				status += "; RETENTION RISK"
			}
			rows = append(rows, []string{strconv.Itoa(pp.Partition), worker, exec, fmtLag(pp.Lag), fmtInt(pp.Pending), oldest,
				strconv.FormatInt(pp.Consumers, 10), orDash(pp.LastDeliveredID), status})
		}
		table(w, "PARTITION\tWORKER\tEXECUTOR\tLAG\tPENDING\tOLDEST PENDING\tCONSUMERS\tLAST DELIVERED\tSTATUS", rows)
	}
	if len(r.Processors) == 0 {
		fmt.Fprintln(w, "\nno processor of this stream in the registry")
	}
	writeWarnings(w, r.Warnings)
	return nil
}

func writeWarnings(w io.Writer, warnings []string) {
	if len(warnings) > 0 {
		fmt.Fprintln(w)
	}
	for _, s := range warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

func fmtLag(p *int64) string {
	if p == nil {
		return "?"
	}
	return fmtInt(*p)
}

func fmtInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// fmtAge prints milliseconds as a rounded duration ("1.2s ago").
func fmtAge(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return d.String() + " ago"
	case d < time.Minute:
		return d.Round(100*time.Millisecond).String() + " ago"
	}
	return d.Round(time.Second).String() + " ago"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeQueueReport prints r as tables.
func writeQueueReport(w io.Writer, r *inspect.QueueReport) error {
	kind := "unkeyed"
	if r.Keyed {
		kind = "keyed"
	}
	order := "weighted"
	if r.Strict {
		order = "strict"
	}
	live := ""
	if r.ConcurrencyLive {
		live = " (set live)"
	}
	fmt.Fprintf(w, "task queue %s of app %s at %s: %s, concurrency %d per worker%s, %d %s priority %s\n\n",
		r.Name, r.App, r.Time.Format(time.RFC3339), kind, r.Concurrency, live, len(r.Levels), order, plural(len(r.Levels), "level"))
	if r.Rate != nil || r.KeyRate != nil {
		var limits []string
		if l := r.Rate; l != nil {
			live := ""
			if r.RateLive {
				live = " (set live)"
			}
			limits = append(limits, fmt.Sprintf("%d tasks per %s%s", l.Tasks, time.Duration(l.WindowMS)*time.Millisecond, live))
		}
		if l := r.KeyRate; l != nil {
			limits = append(limits, fmt.Sprintf("%d tasks of a key per %s", l.Tasks, time.Duration(l.WindowMS)*time.Millisecond))
		}
		fmt.Fprintf(w, "rate limits: at most %s, over all workers\n\n", strings.Join(limits, "; "))
	}
	if r.KeyConcurrency > 1 || r.MaxKeyBacklog > 0 {
		backlog := "no bound"
		if r.MaxKeyBacklog > 0 {
			backlog = fmt.Sprintf("at most %d", r.MaxKeyBacklog)
		}
		fmt.Fprintf(w, "keys: up to %d %s of a key at once; %s tasks in a key's line\n\n",
			r.KeyConcurrency, plural(r.KeyConcurrency, "task"), backlog)
	}
	if r.RateLive && r.Rate == nil {
		fmt.Fprintf(w, "rate limit lifted live (leat tasks rate %s default goes back to the workers' option)\n\n", r.Name)
	}
	if r.PausedAt != nil {
		fmt.Fprintf(w, "paused since %s: its workers start none of its tasks until it is resumed (leat tasks resume %s)\n\n",
			r.PausedAt.Format(time.RFC3339), r.Name)
	}
	var rows [][]string
	for _, st := range task.States {
		rows = append(rows, []string{string(st), fmtInt(r.Counts[string(st)])})
	}
	table(w, "STATE\tTASKS", rows)
	fmt.Fprintln(w)
	rows = nil
	for _, l := range r.Levels {
		rows = append(rows, []string{strconv.Itoa(l.Level), l.Name, strconv.Itoa(l.Weight), fmtAgePtr(l.OldestReadyAgeMS),
			orDash(l.OldestReadyID), fmtInt(l.Delivered), fmtAgePtr(l.OldestDeliveredAgeMS)})
	}
	table(w, "LEVEL\tPRIORITY\tWEIGHT\tOLDEST READY\tREADY ID\tDELIVERED\tOLDEST DELIVERED", rows)
	fmt.Fprintln(w)
	if len(r.Workers) == 0 {
		fmt.Fprintln(w, "no workers")
	} else {
		rows = nil
		for _, wk := range r.Workers {
			rows = append(rows, []string{wk.Worker, fmtInt(wk.Running), fmtAge(wk.IdleMS), yesNo(wk.Alive)})
		}
		table(w, "WORKER\tRUNNING\tLAST SEEN\tALIVE", rows)
	}
	fmt.Fprintln(w)
	if r.Leader != "" {
		fmt.Fprintf(w, "leader: %s (promotes due tasks, fires cron schedules, reclaims dead workers' tasks)\n", r.Leader)
	} else {
		fmt.Fprintln(w, "leader: none (no worker handles the queue: due tasks wait, dead workers' tasks are not reclaimed)")
	}
	fmt.Fprintln(w)
	table(w, "WINDOW\tFINISHED\tSECONDS\tPER SECOND", [][]string{
		{"last minute", fmtInt(r.Throughput.LastMinute.Finished), fmt.Sprintf("%.1f", r.Throughput.LastMinute.Seconds), fmtRate(r.Throughput.LastMinute)},
		{"last 5 minutes", fmtInt(r.Throughput.LastFiveMinute.Finished), fmt.Sprintf("%.1f", r.Throughput.LastFiveMinute.Seconds), fmtRate(r.Throughput.LastFiveMinute)},
	})
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func fmtAgePtr(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return fmtAge(*ms)
}

func fmtRate(r inspect.Rate) string { return strconv.FormatFloat(r.PerSecond, 'f', 2, 64) }

// checkAppKnown refuses an app without a registry (a misspelt --app, or
// the wrong --prefix), naming the apps that have one, rather than showing
// an empty overview.
func checkAppKnown(ctx context.Context, a *app.App) error {
	space := rdb.NewKeySpace(a.Config().KeyPrefix, a.Name())
	if ok, err := rdb.HasRegistry(ctx, a.Client(), space); ok || err != nil {
		return err
	}
	apps, err := rdb.Apps(ctx, a.Client(), space.Prefix)
	if err != nil {
		return err
	}
	known := "no app has one under this prefix"
	if len(apps) > 0 {
		known = "apps with one: " + strings.Join(apps, ", ")
	}
	return usageErrorf("app %q has no registry under prefix %q: no program declared a stream or task queue in it (%s)",
		a.Name(), space.Prefix, known)
}
