package cmd

import (
	"fmt"
	"strings"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/netguard"
	"github.com/urfave/cli/v2"
)

// Names of the global flags that bound task queues (app.Config
// MaxTaskConcurrency and WebhookAllow).
const (
	flagMaxConcurrency = "max-concurrency"
	flagWebhookAllow   = "webhook-allow"
)

// taskLimitFlags returns the global flags that bound task queues.
func taskLimitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{
			Name: flagMaxConcurrency,
			Usage: "most tasks of one queue a worker runs at once (`N`): a concurrency set live above it is " +
				"refused, and a worker reading one caps it",
			EnvVars:     []string{envName(flagMaxConcurrency)},
			DefaultText: fmt.Sprint(app.DefaultMaxTaskConcurrency),
		},
		&cli.StringSliceFlag{
			Name: flagWebhookAllow,
			Usage: "let task webhooks reach this internal `TARGET` (an IP address, CIDR prefix or host name; " +
				"repeatable; the environment variable takes a comma-separated list): loopback, private, " +
				"link-local and other internal addresses are refused otherwise",
			EnvVars: []string{envName(flagWebhookAllow)},
		},
	}
}

// taskLimits sets the fields of cfg that the task-limit flags map to.
func taskLimits(c *cli.Context, cfg *app.Config) error {
	if c.IsSet(flagMaxConcurrency) {
		n := c.Int(flagMaxConcurrency)
		if n < 1 {
			return usageErrorf("--%s %d must be at least 1", flagMaxConcurrency, n)
		}
		cfg.MaxTaskConcurrency = n
	}
	var allow []string
	for _, v := range c.StringSlice(flagWebhookAllow) {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				allow = append(allow, e)
			}
		}
	}
	if _, err := netguard.New(allow); err != nil {
		return usageErrorf("--%s: %w", flagWebhookAllow, err)
	}
	cfg.WebhookAllow = allow
	return nil
}

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
	headers core.Headers // nil when none
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
func headerFlags(c *cli.Context) (core.Headers, error) {
	var hs core.Headers
	for _, h := range c.StringSlice(flagHeader) {
		name, value, ok := strings.Cut(h, "=")
		if !ok || name == "" {
			return nil, usageErrorf("--header %q: want NAME=VALUE", h)
		}
		if _, dup := hs[name]; dup {
			return nil, usageErrorf("--header %q: header %q is given twice", h, name)
		}
		if hs == nil {
			hs = core.Headers{}
		}
		hs[name] = value
	}
	return hs, nil
}
