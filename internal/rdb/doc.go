// Package rdb is where leat talks to Redis: the key schema, every command
// the runtime, the task queue and the CLI send, as typed functions, and
// every Lua script (.lua files beside the Go files, embedded, each with a
// header naming its KEYS, ARGV and return value, and a typed wrapper). The
// runtime packages hold the logic; the protocol (which key, which command,
// which arguments, how a reply is read) lives here, so it can be read,
// tested and changed in one place. Making and closing clients and
// connections stays with their owners (executor/connections.go, app,
// cmd/connect.go); they pass them in.
//
// # Files
//
//   - keys.go, keys_task.go, keys_background.go, keys_middleware.go,
//     keys_match.go: the key schema ([KeySpace]), name checks, the keys of
//     the task queues, background tasks and middleware.
//   - scripts.go and its .lua files: the runtime's scripts (stream
//     registration, guarded sends, fenced fetches, heartbeats, membership,
//     partition locks, assignments, consumer groups, counters).
//   - fetch.go, rawreply.go, replybuffer.go: the fetcher's hot path (fenced
//     reads in a transaction, blocking XREAD over idle partitions, CLIENT
//     UNBLOCK) and replies read as raw RESP; where the executor builds a
//     pipeline as it goes, a helper queues the commands on the pipeline it
//     is given, so every read keeps its round trips.
//   - appended.go (appended.lua): recent rates for the HTTP API, the
//     entries a stream's partitions took per bucket (counted from their
//     IDs) and the finished-task counters of queues per bucket.
//   - schema.go, keys_schema.go: the schemas of typed streams and task
//     queues in the registry (written on registration, read by the CLI and
//     the HTTP API).
//   - send.go, stream_registry.go: sending entries (XADD, alone or
//     pipelined; Pipelined for the guarded sends' and lock refreshes'
//     pipelines) and reading the stream registry.
//   - group.go, partitions.go, reset.go: a processor's group state
//     (membership, assignment, control stream, dead letters), acks and
//     trim counters per partition, moving a group (reset).
//   - table.go, table_script.go (table_commit.lua after table_writes.lua,
//     which output_commit.lua shares): tables and their
//     commits with the acknowledgements.
//   - joins.go, keys_joins.go: joins' batched reads of tables, and the
//     tables' change logs (appended by table_commit.lua) that global
//     tables load and follow.
//   - background.go, background_script.go (background_record.lua): the
//     records of leader-only background tasks.
//   - middleware.go (mw_rate.lua): middleware state (rate limits, dedup).
//   - inspect.go, queue.go: the inspector's reads of streams and task
//     queues, pipelined.
//   - server.go: server checks (PING, Cluster node).
//   - leattest.go: the reads of the public tester, package leattest.
//   - denied.go: errors of a Redis user that lacks a command, turned into
//     errors that say what to grant, naming the script.
//   - task.go, task_*.go and task_*.lua: the task queue (enqueue, fetch,
//     finish, promote, reclaim, janitor, cancel, requeue, delete, cron,
//     list, logs, settings, webhooks, workers' beats), every command of
//     package task; its scripts take the queue's keys (task_common.lua
//     says which keys they build from a prefix, and why).
package rdb
