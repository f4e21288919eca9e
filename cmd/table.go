package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/core"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

func tableCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "table",
		Usage:     "print the values of keys in a processor's table",
		ArgsUsage: "PROCESSOR TABLE KEY...",
		Description: "PROCESSOR is STREAM/NAME, or a NAME that only one stream's processor has; TABLE is\n" +
			"one of its tables (stream.DeclareTable), which its workers record with the processor\n" +
			"when they start. Each KEY's value, as the acknowledged events left it, is read from\n" +
			"the partition the key's events go to and printed as JSON; a key without a value\n" +
			"prints null (exit 0). --json prints one object of key to value.",
		Flags:        []cli.Flag{&cli.BoolFlag{Name: flagJSON, Usage: "print one JSON object instead of a table"}, helpFlag()},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() < 3 {
				return usageErrorf("table: want at least 3 arguments, PROCESSOR TABLE KEY..., got %d (see %s table --help)", c.NArg(), c.App.Name)
			}
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			args := c.Args().Slice()
			values, err := readTable(c.Context, a, args[0], args[1], args[2:])
			if err != nil {
				return err
			}
			if c.Bool(flagJSON) {
				out := make(map[string]json.RawMessage, len(values))
				for i, k := range args[2:] {
					out[k] = values[i]
				}
				return writeJSON(c, out)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE")
			for i, k := range args[2:] {
				fmt.Fprintf(tw, "%s\t%s\n", k, values[i])
			}
			return tw.Flush()
		},
	}
}

// readTable reads keys of table name of the processor called proc, each as
// JSON (null when it has none).
func readTable(ctx context.Context, a *app.App, proc, name string, keys []string) ([]json.RawMessage, error) {
	p, err := findProcessor(ctx, a, proc)
	if err != nil {
		return nil, err
	}
	tables, err := tablesOf(ctx, a, p)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(tables, func(d core.TableDef) bool { return d.Name == name })
	if i < 0 {
		known := "it has none"
		if len(tables) > 0 {
			names := make([]string, len(tables))
			for j, d := range tables {
				names[j] = d.Name
			}
			known = "it has " + strings.Join(names, ", ")
		}
		return nil, usageErrorf("processor %s has no table %q (%s; its workers record its tables when they start)", p.fullName(), name, known)
	}
	codec, err := core.LookupCodec(tables[i].Codec)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", name, err)
	}
	ks := appKeys(a)
	pipe := a.Client().Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for j, k := range keys {
		cmds[j] = pipe.HGet(ctx, ks.Table(p.stream, p.name, name, core.PartitionOf([]byte(k), p.partitions)), k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read table %q: %w", name, err)
	}
	out := make([]json.RawMessage, len(keys))
	for j, cmd := range cmds {
		data, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			out[j] = json.RawMessage("null")
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read table %q: %w", name, err)
		}
		if out[j], err = valueJSON(codec, data); err != nil {
			return nil, fmt.Errorf("table %q: key %q: %w", name, keys[j], err)
		}
	}
	return out, nil
}

// tablesOf returns the tables of processor p: those the app's code declares,
// else those its registry entry records.
func tablesOf(ctx context.Context, a *app.App, p foundProcessor) ([]core.TableDef, error) {
	if st, ok := catalogOf(a).Lookup(p.stream); ok {
		if t := st.Tables(p.name); len(t) > 0 {
			return t, nil
		}
	}
	raw, err := a.Client().HGet(ctx, appKeys(a).Processors(), p.fullName()).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the processor registry: %w", err)
	}
	var def app.ProcessorDefinition
	if err := json.Unmarshal(raw, &def); err != nil {
		return nil, fmt.Errorf("processor %s: its registry entry: %w", p.fullName(), err)
	}
	return def.Tables, nil
}

// valueJSON returns a value encoded with codec as JSON: a JSON value as it
// is, another decoded and written again.
func valueJSON(codec core.Codec, data []byte) (json.RawMessage, error) {
	if codec.Name() == core.JSON.Name() {
		return data, nil
	}
	var v any
	if err := codec.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return json.Marshal(jsonable(v))
}

// jsonable turns maps with keys that are not strings (msgpack allows them)
// into maps of their keys' text, so encoding/json can write them.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case map[string]any:
		for k, x := range v {
			v[k] = jsonable(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = jsonable(x)
		}
		return v
	}
	return v
}
