// Package app holds the App: a named set of streams, processors and
// background tasks that share one Redis connection and one key space, and
// the worker that runs them.
//
//	a, err := app.New(app.Config{Name: "shop", RedisURL: "redis://127.0.0.1:6379"})
//	if err != nil { ... }
//	defer a.Close()
//	orders, err := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
//	err = app.Process(a, orders, "totals", totals)
//	err = a.Run(ctx) // a worker, until ctx is cancelled
//
// # Configuration
//
// [Config] documents every setting and its default; the zero value of a field
// means its default, and [New] validates the whole configuration, returning
// one error that names every problem. An App accepts a caller-owned
// redis.UniversalClient (standalone, Sentinel or Cluster) and never closes a
// client it did not create; from Config.RedisURL it makes a single-server
// client, a Sentinel client when the URL names a master (?master_name=NAME,
// [ParseSentinelURL]), or a cluster client when Config.Cluster is set or the
// URL names more nodes (?addr=HOST:PORT), and [App.Ping] refuses a Redis Cluster node
// reached through a single-server client ([ErrClusterNode]). New adds one
// hook to a *redis.ClusterClient (once, however many Apps share it): when a
// command or pipeline fails because of a failover (connection refused or
// reset, CLUSTERDOWN, MOVED, ASK, TRYAGAIN, READONLY, MASTERDOWN), it
// reloads the client's slot map, at most every 100ms, instead of waiting for
// go-redis's periodic reload. go-redis does not synchronise adding a hook
// with commands in flight: create the App before other goroutines use a
// cluster client you pass. Config.Processing holds the defaults of every
// processor's options; [Process] takes per-processor [ProcessorOption]
// values (LockExpiry, Grace, OnError, Retries, ...), which set exactly the
// value given, zero included. Settings that cannot work are refused by New
// and Process, not when the worker runs.
//
// # Processors and workers
//
// [Process] registers a function over the events of one partition of a
// stream. [App.Run] (or [App.RunProcessors] for a subset) is a worker: it
// writes the stream and processor definitions to the registry in Redis, runs
// one executor per processor (package executor: partition locks, fetching,
// rebalancing, failure policies), takes part in leader election and runs
// the background tasks. Run any number of workers, in one process or many:
// the partitions of each processor are spread across them, and move when
// workers join, leave or die. Run returns nil after a graceful stop when its
// context is cancelled, or the error of a processor whose failure policy
// halts the worker. The library never traps signals: the CLI's worker
// command (package cmd) does.
//
// # Leadership and background tasks
//
// One worker of an app holds the leader lease (see leader.go for the lease
// arithmetic); [App.IsLeader] tells. [App.Background] registers a task run
// once at start, at an interval or on a cron schedule (five fields, six
// with seconds, descriptors, CRON_TZ= or TZ= time zones), on every worker
// or only on the leader. Runs of one task never overlap unless
// [Schedule].Overlap says so: a run that outlasts its interval delays the
// next one, which stands for every tick due meanwhile, and the overrun is
// logged. [ScheduledTime] gives a run's tick.
//
// A leader-only task's context ends when the worker stops trusting its
// lease, and the task moves to the new leader. The leader records each
// completed run in Redis (key P:bg:{APP}:NAME), with a script that writes
// only while its own acquisition holds the lease: the tick it ran, or for a
// task run once that it completed. A new leader resumes after the last tick
// run, on the same grid; ticks that fell due during the failover gap run
// at once, as one run at the latest of them. A task run once runs again on
// a new leader only if no leader completed it. A run cut short by the end
// of its leader's trust (a crash, a freeze, a lost connection, a graceful
// stop) is not recorded and runs again on the next leader: the one case in
// which a tick runs twice. The record lives while the app has a leader
// (TTL 3 × LeaderLease, extended by each leader) and expires once every
// worker has been stopped that long. docs/guarantees.md states the guarantees.
package app
