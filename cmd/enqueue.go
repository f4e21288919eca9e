package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/declared"
	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
)

const (
	flagFile       = "file"
	flagID         = "id"
	flagDelay      = "delay"
	flagAt         = "at"
	flagMaxRetries = "max-retries"
	flagTimeout    = "timeout"
	flagRetention  = "retention"
	flagUnique     = "unique"
	flagUniqueKey  = "unique-key"
	flagPriority   = "priority"
	flagTaskKey    = "key"
	flagWebhook    = "webhook"
	flagHookSecret = "webhook-secret"
)

// enqueueChunk is how many tasks one EnqueueMany call carries.
const enqueueChunk = 10_000

func enqueueCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "enqueue",
		Usage:     "enqueue a task with a JSON payload, or one per JSON line of a file, and print the task IDs",
		ArgsUsage: "QUEUE[.LEVEL] [JSON]",
		Description: "The queue must have been declared by a program of the app (task.Handle or\n" +
			"task.Declare) or a file (leat apply), which recorded its definition in Redis.\n" +
			"QUEUE.LEVEL enqueues at that priority level of the queue (as --priority LEVEL):\n" +
			"inference.premium; a bare QUEUE is its level named default, or its first. With --file FILE (or - for\n" +
			"standard input), every non-blank line is one JSON payload: all lines are checked\n" +
			"first, and on the first bad line the command names it, exits with status 2 and\n" +
			"enqueues nothing; memory stays small however long the input is. Payloads the\n" +
			"handlers would not decode exactly (an unknown field, a value of another kind or\n" +
			"out of range) are refused: by the payload type of the program embedding the CLI,\n" +
			"else by the schema the program that declared the queue with a type recorded.\n" +
			"A duplicate (--id or --unique) prints the existing task's ID and says so on stderr.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagFile, Usage: "read JSON lines from `FILE`, - for standard input"},
			&cli.StringFlag{Name: flagID, Usage: "task `ID` of your choice (one task only)"},
			&cli.DurationFlag{Name: flagDelay, Usage: "run after `DURATION`"},
			&cli.TimestampFlag{Name: flagAt, Layout: time.RFC3339, Usage: "run at `TIME` (RFC 3339)"},
			&cli.IntFlag{Name: flagMaxRetries, Usage: "`N` retries before the task is dead", DefaultText: "the queue's"},
			&cli.DurationFlag{Name: flagTimeout, Usage: "`DURATION` an attempt may run", DefaultText: "the queue's"},
			&cli.DurationFlag{Name: flagRetention, Usage: "keep the result `DURATION`", DefaultText: "the queue's"},
			&cli.DurationFlag{Name: flagUnique, Usage: "refuse a task with the same payload (or --unique-key) for `TTL`"},
			&cli.StringFlag{Name: flagUniqueKey, Usage: "unique `KEY` instead of the payload (with --unique)"},
			&cli.StringFlag{Name: flagPriority, Usage: "priority `LEVEL` of the queue"},
			&cli.StringFlag{Name: flagTaskKey, Usage: "task `KEY` (keyed queues)"},
			&cli.StringFlag{Name: flagWebhook, Usage: "POST the task's outcome as JSON to `URL` (http or https) when it ends"},
			&cli.StringFlag{
				Name: flagHookSecret, EnvVars: []string{envName(flagHookSecret)},
				Usage: "sign the webhook deliveries with `SECRET` (whsec_ and base64, Standard Webhooks); " +
					"prefer the environment variable (flags show in ps)",
			},
			&cli.StringSliceFlag{Name: flagHeader, Usage: "task header `NAME=VALUE` (trace context, tenant...), repeatable"},
			helpFlag(),
		},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			file := c.String(flagFile)
			args := c.Args().Slice()
			// "enqueue QUEUE --file FILE" reads as well as "enqueue --file FILE QUEUE".
			if file == "" && len(args) == 3 && args[1] == "--"+flagFile {
				file, args = args[2], args[:1]
			} else if f, ok := strings.CutPrefix(c.Args().Get(1), "--"+flagFile+"="); ok && file == "" && len(args) == 2 {
				file, args = f, args[:1]
			} else {
				var err error
				if file == "" {
					err = wantArgs(c, "QUEUE", "JSON")
				} else {
					err = wantArgs(c, "QUEUE")
				}
				if err != nil {
					return err
				}
			}
			queue := args[0]
			opts, err := enqueueOptions(c, file != "")
			if err != nil {
				return err
			}
			var in *input
			if file != "" {
				if in, err = openInput(file, c.App.Reader); err != nil {
					return err
				}
				defer in.close()
			} else if err := checkPayload([]byte(args[1])); err != nil {
				return usageErrorf("payload: %v: %.60q", err, args[1])
			}
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			q, opts, err := lookupAddress(c, a, queue, opts)
			if err != nil {
				return err
			}
			warnPaused(c, q)
			if in != nil {
				return enqueueFile(c, q, in, opts, declared.QueueCheck(q))
			}
			ids, err := q.EnqueueMany(c.Context, []json.RawMessage{json.RawMessage(args[1])}, opts...)
			return printIDs(c, ids, err)
		},
	}
}

// enqueueOptions turns the flags into enqueue options.
func enqueueOptions(c *cli.Context, many bool) ([]task.EnqueueOption, error) {
	var opts []task.EnqueueOption
	if id := c.String(flagID); id != "" {
		if many {
			return nil, usageErrorf("--id names one task: not with --file")
		}
		opts = append(opts, task.ID(id))
	}
	// A flag given is passed on as given, 0 and negative values included:
	// the task package says what it refuses, never the default instead.
	if c.IsSet(flagDelay) {
		opts = append(opts, task.Delay(c.Duration(flagDelay)))
	}
	if at := c.Timestamp(flagAt); at != nil {
		opts = append(opts, task.At(*at))
	}
	if c.IsSet(flagMaxRetries) {
		opts = append(opts, task.WithMaxRetries(c.Int(flagMaxRetries)))
	}
	if c.IsSet(flagTimeout) {
		opts = append(opts, task.WithTimeout(c.Duration(flagTimeout)))
	}
	if c.IsSet(flagRetention) {
		opts = append(opts, task.WithRetention(c.Duration(flagRetention)))
	}
	switch u, k := c.Duration(flagUnique), c.String(flagUniqueKey); {
	case c.IsSet(flagUniqueKey) && !c.IsSet(flagUnique):
		return nil, usageErrorf("--unique-key needs --unique TTL")
	case c.IsSet(flagUniqueKey):
		opts = append(opts, task.UniqueKey(k, u))
	case c.IsSet(flagUnique):
		opts = append(opts, task.Unique(u))
	}
	if p := c.String(flagPriority); p != "" {
		opts = append(opts, task.Priority(p))
	}
	if c.IsSet(flagTaskKey) {
		opts = append(opts, task.Key(c.String(flagTaskKey)))
	}
	hs, err := headerFlags(c)
	if err != nil {
		return nil, err
	}
	if hs != nil {
		opts = append(opts, task.Headers(hs))
	}
	if c.IsSet(flagWebhook) {
		opts = append(opts, task.Webhook(c.String(flagWebhook)))
	}
	if c.IsSet(flagHookSecret) {
		opts = append(opts, task.WithWebhookSecret(c.String(flagHookSecret)))
	}
	return opts, nil
}

// warnPaused says on stderr that q is paused, if it is: its tasks wait
// until it is resumed.
func warnPaused(c *cli.Context, q *rawQueue) {
	if paused, at, err := q.Paused(c.Context); err == nil && paused {
		fmt.Fprintf(c.App.ErrWriter, "%s: queue %s is paused since %s: its tasks wait until it is resumed (leat tasks resume %s)\n",
			c.App.Name, q.Name(), at.UTC().Format(time.RFC3339), q.Name())
	}
}

// printIDs prints the IDs of an enqueue; a duplicate is reported on stderr
// and is no failure.
func printIDs(c *cli.Context, ids []string, err error) error {
	w := bufio.NewWriter(c.App.Writer)
	for _, id := range ids {
		fmt.Fprintln(w, id)
	}
	if ferr := w.Flush(); ferr != nil {
		return ferr
	}
	switch {
	case errors.Is(err, task.ErrDuplicate):
		fmt.Fprintf(c.App.ErrWriter, "%s: %v\n", c.App.Name, err)
		return nil
	case errors.Is(err, task.ErrInvalid):
		return usageError{err}
	}
	return err
}

// enqueueFile checks every line of in (with typed, when not nil, too), then
// enqueues them a chunk at a time.
func enqueueFile(c *cli.Context, q *rawQueue, in *input, opts []task.EnqueueOption, typed declared.PayloadCheck) error {
	count, kept, err := checkPayloads(c, in, typed)
	if err != nil {
		return err
	}
	bar := newProgress(c.App.ErrWriter, int64(count), "enqueueing to "+q.Name(), "tasks")
	defer bar.clear()
	send := func(chunk []json.RawMessage) error {
		if len(chunk) == 0 {
			return nil
		}
		ids, err := q.EnqueueMany(c.Context, chunk, opts...)
		bar.add(len(chunk))
		return printIDs(c, ids, err)
	}
	if kept != nil {
		for start := 0; start < len(kept); start += enqueueChunk {
			if err := send(kept[start:min(start+enqueueChunk, len(kept))]); err != nil {
				return err
			}
		}
		return nil
	}
	r, err := in.rewind()
	if err != nil {
		return err
	}
	lr := newLineReader(r)
	var chunk []json.RawMessage
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if checkPayload(line) != nil {
			return fmt.Errorf("line %d changed after it was checked", lr.n)
		}
		chunk = append(chunk, json.RawMessage(bytes.Clone(bytes.TrimSpace(line))))
		if len(chunk) == enqueueChunk {
			if err := send(chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
		}
	}
	return send(chunk)
}

// checkPayloads checks that every non-blank line of in is one JSON value
// (that typed, when not nil, accepts) and counts them, like sendmany's
// checking pass: it returns the payloads too while they take less than
// keepLimit bytes, and copies a stream to a temporary file as it reads it.
func checkPayloads(c *cli.Context, in *input, typed declared.PayloadCheck) (int, []json.RawMessage, error) {
	r, spool, err := in.reader("enqueue")
	if err != nil {
		return 0, nil, err
	}
	lr := newLineReader(r)
	var (
		count     int
		kept      []json.RawMessage
		keptBytes int
		keep      = true
	)
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, nil, err
		}
		if lr.n%1024 == 0 && c.Context.Err() != nil {
			return 0, nil, c.Context.Err()
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		err = checkPayload(line)
		if err == nil && typed != nil {
			err = typed(line)
		}
		if err != nil {
			return 0, nil, lineError{line: lr.n, err: err}
		}
		count++
		if keep {
			keptBytes += len(line) + 64
			if keptBytes > keepLimit {
				keep, kept = false, nil
			} else {
				kept = append(kept, json.RawMessage(bytes.Clone(line)))
			}
		}
	}
	if spool != nil {
		if err := spool.Flush(); err != nil {
			return 0, nil, fmt.Errorf("copy %s to a temporary file: %w", in.name, err)
		}
	}
	if keep && kept == nil {
		kept = []json.RawMessage{}
	}
	return count, kept, nil
}

// checkPayload refuses a task payload that is not JSON, or that a worker
// would decode with replacements (see core.CheckJSONText), saying which.
func checkPayload(b []byte) error {
	if !json.Valid(b) {
		return errors.New("not valid JSON")
	}
	return core.CheckJSONText(b)
}
