package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/urfave/cli/v2"
)

// Names of the reset flags (--start is shared with the worker's).
const (
	flagYes    = "yes"
	flagTables = "tables"
)

// resetBatch is how many partitions one pipelined round trip of reset
// covers, and how many pending entries one XPENDING page lists.
const resetBatch = 1000

var entryIDRE = regexp.MustCompile(`^[0-9]+(-[0-9]+)?$`)

func resetCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "reset",
		Usage:     "move a processor's position on every partition of its stream, dropping in-flight deliveries",
		ArgsUsage: "PROCESSOR",
		Description: "PROCESSOR is STREAM/NAME, or a NAME that only one stream's processor has. On each\n" +
			"partition the processor's consumer group is moved with XGROUP SETID (and created\n" +
			"if missing), and the entries delivered but not yet acknowledged are acknowledged, so\n" +
			"that they are not delivered again. After --start earliest the processor starts over\n" +
			"with the oldest entry each partition keeps; after latest it skips every entry sent so\n" +
			"far; after an entry ID it goes on with the entries that follow it.\n\n" +
			"A processor that keeps tables needs --tables: clear deletes every value of its\n" +
			"tables on every partition (what a replay from earliest expects: the events are\n" +
			"counted again from nothing), keep leaves them as they are (what skipping ahead\n" +
			"usually wants). The tables are those its workers recorded in the registry and\n" +
			"those the app's code declares. The records of middleware.Dedup are kept: a replayed\n" +
			"event whose idempotency key was recorded within its TTL is skipped.\n\n" +
			"Run it while the processor's workers are stopped: it refuses while any of them is\n" +
			"alive (a crashed worker counts until its heartbeat expires, after the lock expiry).\n" +
			"Unless --yes is given it asks for confirmation on stdin.",
		Flags: []cli.Flag{
			&cli.StringFlag{
				Name:  flagStart,
				Usage: "new `POSITION`: earliest (before the oldest entry, 0), latest (after the last entry, $) or an entry ID",
				Value: "earliest",
			},
			&cli.StringFlag{
				Name:  flagTables,
				Usage: "`WHAT` to do with the processor's tables: clear (delete their values) or keep; required when it keeps tables",
			},
			&cli.BoolFlag{
				Name:  flagYes,
				Usage: "do not ask for confirmation",
			},
			helpFlag(),
		},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, "PROCESSOR"); err != nil {
				return err
			}
			start, err := parseResetStart(c.String(flagStart))
			if err != nil {
				return err
			}
			tables := c.String(flagTables)
			if tables != "" && tables != "clear" && tables != "keep" {
				return usageErrorf("--%s %q: want clear or keep", flagTables, tables)
			}
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			r, err := newResetter(c.Context, a, c.Args().First())
			if err != nil {
				return err
			}
			if len(r.tables) > 0 && tables == "" {
				return usageErrorf("processor %s keeps %s %s: pass --%s clear to delete their values with the reset "+
					"(a replay from earliest counts its events again from nothing), or --%s keep to leave them as they are",
					r.fullName(), plural(len(r.tables), "table"), strings.Join(r.tables, ", "), flagTables, flagTables)
			}
			r.clear = tables == "clear" && len(r.tables) > 0
			if err := r.checkStopped(c.Context); err != nil {
				return err
			}
			if !c.Bool(flagYes) {
				question := fmt.Sprintf("reset processor %s on the %d %s of stream %s to %s, dropping its in-flight deliveries",
					r.fullName(), r.partitions, plural(r.partitions, "partition"), r.stream, c.String(flagStart))
				if r.clear {
					question += fmt.Sprintf(" and deleting the values of its %s %s", plural(len(r.tables), "table"), strings.Join(r.tables, ", "))
				}
				if err := confirm(c, question+"?"); err != nil {
					return err
				}
			}
			return r.reset(c, start)
		},
	}
}

// parseResetStart returns the XGROUP SETID position of a --start value.
func parseResetStart(s string) (string, error) {
	switch {
	case s == "earliest" || s == "0":
		return "0", nil
	case s == "latest" || s == "$":
		return "$", nil
	case entryIDRE.MatchString(s):
		return s, nil
	}
	return "", usageErrorf("--%s %q: want earliest, latest, or an entry ID such as 1700000000000-0", flagStart, s)
}

// confirm asks question on stdout and reads the answer from stdin; anything
// but y or yes is a usage error.
func confirm(c *cli.Context, question string) error {
	fmt.Fprintf(c.App.Writer, "%s [y/N] ", question)
	answer, err := bufio.NewReader(c.App.Reader).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(c.App.Writer)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return usageErrorf("not confirmed: nothing changed (pass --yes to skip the question)")
}

// resetter resets one processor.
type resetter struct {
	a          *app.App
	stream     string
	group      string
	partitions int
	tables     []string // the processor's, sorted
	clear      bool     // delete the tables' values
}

// newResetter finds the processor called name (findProcessor) and its
// tables: those the registry records and those the app's code declares.
func newResetter(ctx context.Context, a *app.App, name string) (*resetter, error) {
	p, err := findProcessor(ctx, a, name)
	if err != nil {
		return nil, err
	}
	r := &resetter{a: a, stream: p.stream, group: p.name, partitions: p.partitions}
	r.tables, err = rdb.RecordedTables(ctx, a.Client(), appKeys(a), p.fullName())
	if err != nil {
		return nil, fmt.Errorf("read the processor registry: %w", err)
	}
	if st, ok := catalogOf(a).Lookup(p.stream); ok {
		for _, t := range st.Tables(p.name) {
			r.tables = append(r.tables, t.Name)
		}
	}
	slices.Sort(r.tables)
	r.tables = slices.Compact(r.tables)
	return r, nil
}

// foundProcessor is a processor findProcessor found.
type foundProcessor struct {
	stream, name string
	partitions   int // its stream's
}

func (p foundProcessor) fullName() string { return p.stream + "/" + p.name }

// findProcessor finds the processor called name ("stream/processor", or a
// name only one stream's processor has) among those the app's registry in
// Redis records and those the app's code registers, and its stream's
// partition count.
func findProcessor(ctx context.Context, a *app.App, name string) (foundProcessor, error) {
	var none foundProcessor
	recorded, err := rdb.Processors(ctx, a.Client(), appKeys(a))
	if err != nil {
		return none, fmt.Errorf("read the processor registry: %w", err)
	}
	known := slices.Clone(recorded)
	for _, p := range a.Processors() {
		if !slices.Contains(known, p.FullName()) {
			known = append(known, p.FullName())
		}
	}
	slices.Sort(known)
	if len(known) == 0 {
		return none, usageErrorf("unknown processor %q: app %q has none (its workers record their processors when they start)", name, a.Name())
	}
	full, err := rdb.MatchProcessor(name, known)
	if err != nil {
		return none, usageError{err}
	}
	var p foundProcessor
	p.stream, p.name, _ = strings.Cut(full, "/")
	if st, ok := catalogOf(a).Lookup(p.stream); ok {
		p.partitions = st.Partitions()
		return p, nil
	}
	def, err := core.LoadDefinition(ctx, a.Client(), appKeys(a).Registry(), p.stream)
	if errors.Is(err, core.ErrUnknownStream) {
		return none, usageErrorf("processor %s: its stream %q is not in the registry of app %q", full, p.stream, a.Name())
	}
	if err != nil {
		return none, fmt.Errorf("load stream %q from the registry: %w", p.stream, err)
	}
	p.partitions = def.Partitions
	return p, nil
}

func (r *resetter) fullName() string { return r.stream + "/" + r.group }

// checkStopped fails when an executor of the processor is alive: its
// heartbeat deadline, in the members sorted set, has not passed.
func (r *resetter) checkStopped(ctx context.Context) error {
	n, err := rdb.NewGroup(r.a.Client(), appKeys(r.a), r.stream, r.group).Alive(ctx)
	if err != nil {
		return fmt.Errorf("read the members of processor %s: %w", r.fullName(), err)
	}
	if n > 0 {
		return fmt.Errorf("processor %s is running in %d %s: stop its workers first "+
			"(the heartbeat of a crashed one expires after the lock expiry)", r.fullName(), n, plural(int(n), "executor"))
	}
	return nil
}

// partitionKeys returns the keys of partitions [from, to).
func (r *resetter) partitionKeys(from, to int) []string {
	out := make([]string, 0, to-from)
	for p := from; p < to; p++ {
		out = append(out, appKeys(r.a).Partition(r.stream, p))
	}
	return out
}

// tableKeys returns the keys of the processor's tables on partitions
// [from, to).
func (r *resetter) tableKeys(from, to int) []string {
	out := make([]string, 0, 2*(to-from)*len(r.tables))
	for p := from; p < to; p++ {
		for _, t := range r.tables {
			out = append(out, appKeys(r.a).Table(r.stream, r.group, t, p))
			// and its change log, if any: a global table that follows it
			// sees the log start again and loads the partition anew
			out = append(out, appKeys(r.a).TableChanges(r.stream, r.group, t, p))
		}
	}
	return out
}

// reset moves the group to start on every partition, acknowledges its
// pending entries, deletes its tables' values if asked, and prints one line
// per partition and a summary.
func (r *resetter) reset(c *cli.Context, start string) error {
	ctx, w := c.Context, c.App.Writer
	var dropped int64
	for from := 0; from < r.partitions; from += resetBatch {
		to := min(from+resetBatch, r.partitions)
		keys := r.partitionKeys(from, to)
		if r.clear {
			// First: a reset cut short after this leaves the tables empty
			// and the group where it was, which a reset run again finishes.
			if _, err := rdb.DeleteKeys(ctx, r.a.Client(), r.tableKeys(from, to)); err != nil {
				return err
			}
		}
		if err := rdb.MoveGroup(ctx, r.a.Client(), keys, r.group, start); err != nil {
			return err
		}
		counts, err := rdb.DropPending(ctx, r.a.Client(), keys, r.group, resetBatch)
		if err != nil {
			return err
		}
		positions, err := rdb.Positions(ctx, r.a.Client(), keys, r.group)
		if err != nil {
			return err
		}
		for i := range keys {
			fmt.Fprintf(w, "partition %d: reset to %s, %d pending dropped\n", from+i, positions[i], counts[i])
			dropped += counts[i]
		}
	}
	entries := "entries"
	if dropped == 1 {
		entries = "entry"
	}
	tables := ""
	switch {
	case r.clear:
		tables = fmt.Sprintf("; %s %s cleared", plural(len(r.tables), "table"), strings.Join(r.tables, ", "))
	case len(r.tables) > 0:
		tables = fmt.Sprintf("; %s %s kept", plural(len(r.tables), "table"), strings.Join(r.tables, ", "))
	}
	_, err := fmt.Fprintf(w, "reset processor %s on %d %s to %s: %d pending %s dropped%s\n",
		r.fullName(), r.partitions, plural(r.partitions, "partition"), c.String(flagStart), dropped, entries, tables)
	return err
}
