// Package cmd is the leat command-line tool: the standalone leat binary
// (cmd/leat) and a CLI that an app embeds in its own binary.
//
// # Commands
//
//	leat [global flags] send [--partitions N] [--key FIELD] [--header NAME=VALUE ...] STREAM JSON
//	leat [global flags] sendmany [--partitions N] [--key FIELD] [--header NAME=VALUE ...] STREAM FILE|-
//	leat [global flags] worker [--processors NAME,...] [processing flags]
//	leat [global flags] reset [--start earliest|latest|ID] [--tables clear|keep] [--yes] PROCESSOR
//	leat [global flags] table [--json] [--limit N] PROCESSOR TABLE [KEY...]
//	leat [global flags] apply -f FILE [--dry-run]
//	leat [global flags] config export
//	leat [global flags] bench [--only LIST] [--events N] [--rounds N] [--partitions N] [--payload BYTES] [--rate N] [--latency D] [--idle D] [--wide N] [--aof] [--json]
//	leat completion bash|zsh|fish
//
// send sends one record given as a JSON object and prints its entry ID.
// sendmany reads one JSON object per line from FILE, or stdin for "-"; it
// checks and encodes every line in a first pass before it sends anything, so
// a bad line (reported as "line N: reason") sends nothing. It then sends the
// records in pipelined batches, reading the input again a chunk at a time
// when it is large (stdin that is not a file is copied to a temporary file
// during the first pass), so memory stays bounded. Progress bars show both
// passes when stderr is a terminal; the summary gives the sending rate.
// A command's flags go before or after its arguments (after "--" everything
// is an argument); global flags go before the command.
//
// JSON records name fields as the stream's codec does (for msgpack: the
// msgpack tag, else the json tag, else the Go name), in the standalone binary
// and in an app's own alike, so both route and store a line the same way.
//
// worker runs the app's processors (all, or those of --processors, each
// NAME or STREAM/NAME) and background tasks until the context of Run is
// cancelled (Main cancels it on SIGINT or SIGTERM); it then shuts down
// gracefully and exits with status 0. A processor failure that the failure
// policy turns into a halt stops it the same way, with status 1. It needs
// the app's code: the standalone binary refuses it with status 2.
//
// reset moves a processor's consumer group on every partition of its stream
// to the oldest entry (--start earliest, the default), past the last one
// (latest) or to an entry ID, and acknowledges the entries still pending in
// the group, so that in-flight deliveries are not made again. A processor
// that keeps tables needs --tables: clear deletes their values on every
// partition (a replay from earliest then counts its events once), keep
// leaves them. It prints one line per partition and a summary. It is meant
// to run while the processor's workers are stopped, and refuses while one
// of them is alive. It asks for confirmation on stdin unless --yes is
// given.
//
// table prints the values of keys in a processor's table
// (stream.DeclareTable), as the acknowledged events left them, as JSON:
// each read from its key's partition, decoded with the codec the
// processor's workers recorded in the registry, so the standalone binary
// reads them too. A key without a value prints null. Without keys it lists
// the table's keys and values, partition by partition, up to --limit (100).
//
// apply checks a configuration file (leat.yaml, package config) whole,
// prints what it changes in the app's registry (added, changed old -> new,
// unchanged) and writes its stream and task queue definitions at once;
// --dry-run writes nothing. Changes that would break what Redis holds (a
// stream's partition count, key field or codec, a queue's keyed flag or
// levels) are refused with the reason. config export prints the file of
// what the registry holds. worker --config FILE runs the handlers the file
// gives its task queues. A command given no --app takes the app a
// leat.yaml of the current directory names.
//
// bench runs leat and raw go-redis loops side by side on the same Redis
// (sending, processing, both at once, latency, tasks, rebalance pauses,
// memory and the idle cost of a worker), in interleaved rounds, and prints
// the median of each figure and the ratios leat/raw. With --aof it runs
// against a redis-server it starts with appendonly yes. It needs no --app
// and deletes every key it wrote. docs/benchmarks.md explains the figures.
//
// completion prints the shell's completion script; the script asks the
// binary for the words that may come next (App.EnableBashCompletion). The
// hidden docs command prints docs/cli-reference.md, which go generate
// rewrites from these definitions. "leat --version" prints the version
// (see Version).
//
// # Global flags
//
// Each maps to a field of app.Config and has an environment variable:
//
//	--redis      LEAT_REDIS_URL  Config.RedisURL (default redis://127.0.0.1:6379);
//	                             prefer the variable for a URL with a password; a URL
//	                             with ?addr=HOST:PORT parameters names a Redis Cluster,
//	                             one with ?master_name=NAME a master behind Redis
//	                             Sentinel (the URL names a sentinel, ?addr= more)
//	--cluster    LEAT_REDIS_CLUSTER=1 Config.Cluster: --redis names a Redis Cluster node
//	--tls-ca     LEAT_TLS_CA     Config.TLS.CAFile, for rediss:// (default: system roots)
//	--tls-cert   LEAT_TLS_CERT   Config.TLS.CertFile, client certificate (mutual TLS)
//	--tls-key    LEAT_TLS_KEY    Config.TLS.KeyFile, its private key
//	--tls-server-name LEAT_TLS_SERVER_NAME Config.TLS.ServerName (default: the URL's host)
//	--app        LEAT_APP        Config.Name (required)
//	--prefix     LEAT_PREFIX     Config.KeyPrefix (default "leat")
//	--log-level  LEAT_LOG_LEVEL  Config.Logger, text logs on stderr (default warn)
//	--max-concurrency LEAT_MAX_CONCURRENCY Config.MaxTaskConcurrency (default 1000)
//	--webhook-allow LEAT_WEBHOOK_ALLOW Config.WebhookAllow: internal webhook targets allowed
//
// # Worker flags
//
// The worker's flags map to app.Config: each processing flag to a field of
// Config.Processing (the defaults of every processor; see executor.Options),
// the others to Config fields. A flag not given leaves its field zero, so
// the value a Setup puts there applies, else the default; options given to
// app.Process for one processor win over both.
//
//	--processors    LEAT_PROCESSORS    processors to run (default all)
//	--lock-expiry   LEAT_LOCK_EXPIRY   Processing.LockExpiry (default 10s)
//	--prefetch      LEAT_PREFETCH      Processing.Prefetch (default by partitions: 512 for 16)
//	--read-block    LEAT_READ_BLOCK    Processing.ReadBlock (default 2s)
//	--grace         LEAT_GRACE         Processing.Grace (default 10s)
//	--join-delay    LEAT_JOIN_DELAY    Processing.JoinDelay (default 0)
//	--start         LEAT_START         Processing.Start: earliest or latest (default earliest)
//	--on-error      LEAT_ON_ERROR      Processing.OnError: halt, quarantine, ignore or dead-letter (default halt)
//	--retries       LEAT_RETRIES       Processing.Retry.Attempts (default 0)
//	--transient-retry LEAT_TRANSIENT_RETRY Processing.Transient.For, or off (default 30s)
//	--worker-id     LEAT_WORKER_ID     WorkerID (default host name, process ID and a random suffix)
//	--leader-lease  LEAT_LEADER_LEASE  LeaderLease (default 10s)
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
// the user-info of the Redis URL, however malformed it is.
//
// # Embedding
//
// An app's own binary calls Main with a Setup that declares its streams,
// and registers its processors and background tasks, on the App built from
// the flags (see Setup for the configuration it receives). Its worker
// command then runs those processors, and records given as JSON are read
// strictly into the app's Go types (unknown fields and values that do not
// fit are refused) and routed by its key functions, exactly as the app's own
// sends are:
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

//go:generate sh -c "go run ./leat docs > ../docs/cli-reference.md"
