package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/keys"
	"github.com/leatdev/leat/internal/scripts"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// Names of the reset flags (--start is shared with the worker's).
const flagYes = "yes"

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
			"Run it while the processor's workers are stopped: it refuses while any of them is\n" +
			"alive (a crashed worker counts until its heartbeat expires, after the lock expiry).\n" +
			"Unless --yes is given it asks for confirmation on stdin.",
		Flags: []cli.Flag{
			&cli.StringFlag{
				Name:  flagStart,
				Usage: "new `POSITION`: earliest (before the oldest entry, 0), latest (after the last entry, $) or an entry ID",
				Value: "earliest",
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
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			r, err := newResetter(c.Context, a, c.Args().First())
			if err != nil {
				return err
			}
			if err := r.checkStopped(c.Context); err != nil {
				return err
			}
			if !c.Bool(flagYes) {
				question := fmt.Sprintf("reset processor %s on the %d %s of stream %s to %s, dropping its in-flight deliveries?",
					r.fullName(), r.partitions, plural(r.partitions, "partition"), r.stream, c.String(flagStart))
				if err := confirm(c, question); err != nil {
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
}

// newResetter finds the processor called name among those the app's
// registry in Redis records and those the app's code registers, and its
// stream's partition count.
func newResetter(ctx context.Context, a *app.App, name string) (*resetter, error) {
	recorded, err := a.Client().HKeys(ctx, appKeys(a).Processors()).Result()
	if err != nil {
		return nil, fmt.Errorf("read the processor registry: %w", err)
	}
	known := slices.Clone(recorded)
	for _, p := range a.Processors() {
		if !slices.Contains(known, p.FullName()) {
			known = append(known, p.FullName())
		}
	}
	slices.Sort(known)
	if len(known) == 0 {
		return nil, usageErrorf("unknown processor %q: app %q has none (its workers record their processors when they start)", name, a.Name())
	}
	full, err := keys.MatchProcessor(name, known)
	if err != nil {
		return nil, usageError{err}
	}
	r := &resetter{a: a}
	r.stream, r.group, _ = strings.Cut(full, "/")
	if st, ok := catalogOf(a).Lookup(r.stream); ok {
		r.partitions = st.Partitions()
		return r, nil
	}
	def, err := core.LoadDefinition(ctx, a.Client(), appKeys(a).Registry(), r.stream)
	if errors.Is(err, core.ErrUnknownStream) {
		return nil, usageErrorf("processor %s: its stream %q is not in the registry of app %q", full, r.stream, a.Name())
	}
	if err != nil {
		return nil, fmt.Errorf("load stream %q from the registry: %w", r.stream, err)
	}
	r.partitions = def.Partitions
	return r, nil
}

func (r *resetter) fullName() string { return r.stream + "/" + r.group }

// checkStopped fails when an executor of the processor is alive: its
// heartbeat deadline, in the members sorted set, has not passed.
func (r *resetter) checkStopped(ctx context.Context) error {
	now, err := r.a.Client().Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("read the server time: %w", err)
	}
	n, err := r.a.Client().ZCount(ctx, appKeys(r.a).Members(r.stream, r.group), strconv.FormatInt(now.UnixMilli(), 10), "+inf").Result()
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

// reset moves the group to start on every partition, acknowledges its
// pending entries, and prints one line per partition and a summary.
func (r *resetter) reset(c *cli.Context, start string) error {
	ctx, w := c.Context, c.App.Writer
	var dropped int64
	for from := 0; from < r.partitions; from += resetBatch {
		to := min(from+resetBatch, r.partitions)
		keys := r.partitionKeys(from, to)
		if err := r.setID(ctx, keys, start); err != nil {
			return err
		}
		counts, err := r.dropPending(ctx, keys)
		if err != nil {
			return err
		}
		positions, err := r.positions(ctx, keys)
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
	_, err := fmt.Fprintf(w, "reset processor %s on %d %s to %s: %d pending %s dropped\n",
		r.fullName(), r.partitions, plural(r.partitions, "partition"), c.String(flagStart), dropped, entries)
	return err
}

// setID moves the group to start on keys (creating it, and the stream,
// where missing) in one pipeline, with its entries-read counter set to the
// entries before start, so the workers' trim check never takes the entries
// skipped for entries lost (see internal/scripts/set_group.lua).
func (r *resetter) setID(ctx context.Context, keys []string, start string) error {
	client := r.a.Client()
	run := func() ([]*redis.Cmd, error) {
		pipe := client.Pipeline()
		cmds := make([]*redis.Cmd, len(keys))
		for i, k := range keys {
			cmds[i] = scripts.SetGroup(ctx, pipe, k, r.group, start, true)
		}
		_, err := pipe.Exec(ctx) // errors are read per command
		return cmds, err
	}
	if err := scripts.Load(ctx, client); err != nil {
		return fmt.Errorf("load scripts: %w", err)
	}
	cmds, err := run()
	if scripts.IsNoScript(err) { // the server restarted meanwhile
		if err := scripts.Load(ctx, client); err != nil {
			return fmt.Errorf("load scripts: %w", err)
		}
		cmds, _ = run()
	}
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return fmt.Errorf("XGROUP SETID %s %s %s: %w", keys[i], r.group, start, err)
		}
	}
	return nil
}

// dropPending acknowledges every pending entry of the group on keys, a page
// of XPENDING per partition and round trip, and returns the counts.
func (r *resetter) dropPending(ctx context.Context, keys []string) ([]int64, error) {
	client := r.a.Client()
	counts := make([]int64, len(keys))
	active := make([]int, len(keys)) // indexes of keys that may have more
	for i := range active {
		active[i] = i
	}
	for len(active) > 0 {
		pipe := client.Pipeline()
		pending := make([]*redis.XPendingExtCmd, len(active))
		for j, i := range active {
			pending[j] = pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: keys[i], Group: r.group, Start: "-", End: "+", Count: resetBatch})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("XPENDING: %w", err)
		}
		ack := client.Pipeline()
		var next []int
		for j, i := range active {
			ps := pending[j].Val()
			if len(ps) == 0 {
				continue
			}
			ids := make([]string, len(ps))
			for k, p := range ps {
				ids[k] = p.ID
			}
			ack.XAck(ctx, keys[i], r.group, ids...)
			counts[i] += int64(len(ids))
			if len(ps) == resetBatch {
				next = append(next, i)
			}
		}
		if ack.Len() > 0 {
			if _, err := ack.Exec(ctx); err != nil {
				return nil, fmt.Errorf("XACK: %w", err)
			}
		}
		active = next
	}
	return counts, nil
}

// positions returns the group's last delivered ID on each of keys.
func (r *resetter) positions(ctx context.Context, keys []string) ([]string, error) {
	pipe := r.a.Client().Pipeline()
	cmds := make([]*redis.XInfoGroupsCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XInfoGroups(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("XINFO GROUPS: %w", err)
	}
	out := make([]string, len(keys))
	for i, cmd := range cmds {
		out[i] = "?"
		for _, g := range cmd.Val() {
			if g.Name == r.group {
				out[i] = g.LastDeliveredID
			}
		}
	}
	return out, nil
}
