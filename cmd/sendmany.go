package cmd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/leatdev/leat/stream"
	"github.com/urfave/cli/v2"
)

// sendChunk is how many entries one SendEntries call carries, so that the
// progress bar advances during a long send; SendEntries pipelines each chunk
// in batches of the app's SendBatch.
const sendChunk = 10_000

func sendManyCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "sendmany",
		Usage:     "send records given as JSON lines, from a file or - for stdin",
		ArgsUsage: "STREAM FILE|-",
		Description: "Every line holds one JSON object; blank lines are skipped. All lines are\n" +
			"checked and encoded before anything is sent: on the first bad line the command\n" +
			"names it, exits with status 2 and sends nothing. Records of one key keep the\n" +
			"order of the lines.",
		Flags:        sendFlags(),
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, "STREAM", "FILE|-"); err != nil {
				return err
			}
			opts, err := sendOptionsFrom(c)
			if err != nil {
				return err
			}
			name, path := c.Args().Get(0), c.Args().Get(1)
			in := c.App.Reader
			if path != "-" {
				f, err := os.Open(path)
				if err != nil {
					return usageError{err}
				}
				defer f.Close()
				in = f
			}
			return withStream(c, setup, name, opts.routing, func(core *stream.Core) error {
				start := time.Now() // the summary times reading, encoding and sending
				entries, err := readEntries(in, core, opts.headers)
				if err != nil {
					return err
				}
				if err := sendAll(c, core, entries); err != nil {
					return err
				}
				elapsed := time.Since(start)
				_, err = fmt.Fprintf(c.App.Writer, "sent %d %s to %s in %.2fs (%.0f events/s)\n",
					len(entries), plural(len(entries), "event"), core.Name(), elapsed.Seconds(),
					float64(len(entries))/max(elapsed.Seconds(), 1e-9))
				return err
			})
		},
	}
}

// readEntries encodes every non-blank line of r, a JSON object each, as an
// entry of core carrying headers h. It fails on the first bad line with a
// usage error naming the line (numbered from 1, blank lines included).
func readEntries(r io.Reader, core *stream.Core, h stream.Headers) ([]stream.Entry, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var entries []stream.Entry
	for n := 1; ; n++ {
		line, readErr := br.ReadBytes('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return nil, fmt.Errorf("read line %d: %w", n, readErr)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			e, err := core.EncodeJSON(line, h)
			if err != nil {
				return nil, lineError{line: n, err: err}
			}
			entries = append(entries, e)
		}
		if readErr != nil {
			return entries, nil
		}
	}
}

// sendAll sends entries in chunks of sendChunk, advancing a progress bar on
// stderr when it is a terminal. On failure it says how many were sent.
func sendAll(c *cli.Context, core *stream.Core, entries []stream.Entry) error {
	bar := newProgress(c.App.ErrWriter, len(entries), "sending to "+core.Name())
	defer bar.clear()
	sent := 0
	for start := 0; start < len(entries); start += sendChunk {
		ids, err := core.SendEntries(c.Context, entries[start:min(start+sendChunk, len(entries))])
		n := 0
		for _, id := range ids {
			if id != "" {
				n++
			}
		}
		sent += n
		bar.add(n)
		if err != nil {
			return fmt.Errorf("sent %d of %d events, then: %w", sent, len(entries), err)
		}
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
