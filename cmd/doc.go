// Package cmd is the leat command-line tool: the standalone leat binary
// (cmd/leat) and a CLI that an app embeds in its own binary.
//
// # Commands
//
//	leat [global flags] send [--partitions N] [--key FIELD] [--header NAME=VALUE ...] STREAM JSON
//	leat [global flags] sendmany [--partitions N] [--key FIELD] [--header NAME=VALUE ...] STREAM FILE|-
//
// send sends one record given as a JSON object and prints its entry ID.
// sendmany reads one JSON object per line from FILE, or stdin for "-"; it
// checks and encodes every line before it sends anything, so a bad line
// (reported as "line N: reason") sends nothing. It then sends the records in
// pipelined batches, with a progress bar when stderr is a terminal, and
// prints a summary. Flags go before the arguments.
//
// # Global flags
//
// Each maps to a field of app.Config and has an environment variable:
//
//	--redis      LEAT_REDIS_URL  Config.RedisURL (default redis://127.0.0.1:6379)
//	--app        LEAT_APP        Config.Name (required)
//	--prefix     LEAT_PREFIX     Config.KeyPrefix (default "leat")
//	--log-level  LEAT_LOG_LEVEL  Config.Logger, text logs on stderr (default warn)
//
// # Streams
//
// A stream is found first among the streams the app's code declares (when
// the CLI is embedded), then in the app's registry in Redis, where apps record
// the definitions of their streams. A stream known to neither is defined by
// --key (the record field holding the partition key) and --partitions
// (default 16), and the first send registers it. --partitions and --key never
// change the routing of a known stream: a stream's partition count and key
// decide which partition a key's records go to, and changing them would break
// per-key order.
//
// # Errors and exit status
//
// A failure is reported as one line on stderr, starting with "leat: ", and an
// exit status: 0 on success, 1 on runtime failures (Redis unreachable,
// refusing the credentials or failing), 2 on usage errors and bad input (flags,
// arguments, records, unknown streams, routing conflicts). Messages never show
// the password of the Redis URL.
//
// # Embedding
//
// An app's own binary calls Main with a Setup that declares its streams on
// the App built from the flags. Records given as JSON are then decoded into
// the app's Go types and routed by its key functions, exactly as the app's
// own sends are:
//
//	func main() {
//		cmd.Main(func(cfg app.Config) (*app.App, error) {
//			a, err := app.New(cfg)
//			if err != nil {
//				return nil, err
//			}
//			if _, err := stream.Declare[Order](a, "orders", stream.KeyFunc(Order.CustomerID)); err != nil {
//				a.Close()
//				return nil, err
//			}
//			return a, nil
//		})
//	}
//
// Run does the same without exiting, with explicit arguments, input and
// outputs, for tests.
package cmd
