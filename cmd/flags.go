package cmd

import (
	"strings"

	"github.com/leatdev/leat/stream"
	"github.com/urfave/cli/v2"
)

// Names of the flags shared by send and sendmany (--header by enqueue too).
const (
	flagPartitions = "partitions"
	flagKey        = "key"
	flagHeader     = "header"
)

// sendFlags returns the flags of the sending commands.
func sendFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{
			Name:        flagPartitions,
			Usage:       "partition count of a stream the registry does not know yet; must match it otherwise",
			DefaultText: "the app's, 16",
		},
		&cli.StringFlag{
			Name:  flagKey,
			Usage: "record field holding the partition key; required for a stream the registry does not know yet",
		},
		&cli.StringSliceFlag{
			Name:  flagHeader,
			Usage: "header `NAME=VALUE` carried by every record (repeatable)",
		},
		helpFlag(),
	}
}

// sendOptions are the parsed flags of a sending command.
type sendOptions struct {
	routing routing
	headers stream.Headers // nil when none
}

// routing is what the --partitions and --key flags say about a stream; zero
// values mean the flag was not given.
type routing struct {
	partitions int
	keyField   string
}

func sendOptionsFrom(c *cli.Context) (sendOptions, error) {
	var o sendOptions
	if c.IsSet(flagPartitions) {
		n := c.Int(flagPartitions)
		if n < 1 || n > 65536 {
			return o, usageErrorf("--partitions %d out of range 1..65536", n)
		}
		o.routing.partitions = n
	}
	if c.IsSet(flagKey) {
		o.routing.keyField = c.String(flagKey)
		if o.routing.keyField == "" {
			return o, usageErrorf("--key is empty: name the record field holding the partition key")
		}
	}
	var err error
	o.headers, err = headerFlags(c)
	return o, err
}

// headerFlags returns the headers the --header flags give (nil when none).
func headerFlags(c *cli.Context) (stream.Headers, error) {
	var hs stream.Headers
	for _, h := range c.StringSlice(flagHeader) {
		name, value, ok := strings.Cut(h, "=")
		if !ok || name == "" {
			return nil, usageErrorf("--header %q: want NAME=VALUE", h)
		}
		if _, dup := hs[name]; dup {
			return nil, usageErrorf("--header %q: header %q is given twice", h, name)
		}
		if hs == nil {
			hs = stream.Headers{}
		}
		hs[name] = value
	}
	return hs, nil
}
