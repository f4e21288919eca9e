package cmd

import (
	"fmt"

	"github.com/leatdev/leat/internal/core"
	"github.com/urfave/cli/v2"
)

func sendCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "send one record, given as a JSON object, and print its entry ID",
		ArgsUsage: "STREAM JSON",
		Description: "The record is routed by its key field to one partition of STREAM. A stream the\n" +
			"registry does not know yet needs --key (and optionally --partitions); the send\n" +
			"registers it. A record the stream's processors would not decode (an unknown\n" +
			"field, a value of another kind or out of range) is refused, by the stream's Go\n" +
			"type in a program that declares it, else by the schema that program recorded.",
		Flags:        sendFlags(),
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, "STREAM", "JSON"); err != nil {
				return err
			}
			opts, err := sendOptionsFrom(c)
			if err != nil {
				return err
			}
			name, record := c.Args().Get(0), c.Args().Get(1)
			return withStream(c, setup, name, opts.routing, func(st *core.Core) error {
				e, err := st.EncodeJSON([]byte(record), opts.headers)
				if err != nil {
					return usageErrorf("record: %w", err)
				}
				ids, err := st.SendEntries(c.Context, []core.Entry{e})
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(c.App.Writer, ids[0])
				return err
			})
		},
	}
}
