// Package config reads leat.yaml, the file that declares an app's streams
// and task queues without Go: their settings, the cron schedules of each
// queue and what handles its tasks (a command run as supervised child
// processes). The leat CLI applies it to the app's registry in Redis
// ("leat apply -f leat.yaml"), prints it back from the registry ("leat
// config export") and runs its handlers ("leat worker --config
// leat.yaml"); a Go program can load the same file and give its queues Go
// handlers (Handle).
//
// # The file
//
//	version: 1
//	app: shop
//	streams:
//	  orders:
//	    partitions: 16
//	    key: customer
//	    retention: 50000
//	    codec: msgpack+zstd
//	    when_full: refuse
//	queues:
//	  inference:
//	    concurrency: 4
//	    timeout: 2m
//	    retries: 3
//	    levels: [premium, standard, default]
//	    handler:
//	      exec:
//	        command: python3 handler.py
//	        env: [HF_HOME, MODEL=small]
//
// docs/configuration-file.md is the reference of every field.
//
// # Checking
//
// Load and Parse check the whole file and return every mistake at once
// (Errors), each with its line and field path:
//
//	leat.yaml:12: queues.words.retries: must be an integer 0..10000, got "3x"
//
// Nothing is coerced: a count is an integer (not "8", not 8.5), a flag
// true or false, a duration a string such as "30s" or "1h30m" (not 30),
// and unknown fields are refused, so a misspelt setting is never silently
// the default. The values are checked against the bounds the task and
// stream packages enforce.
//
// # Applying
//
// NewPlan compares the file with the registry: each stream and queue is
// added, changed (which settings, old and new) or unchanged. Changes that
// would break what is in Redis already are refused with the reason: a
// stream's partition count, key field or codec, a queue's keyed flag, a
// priority level removed, renamed or moved. Plan.Apply writes every
// definition in one script, or none, and none when the registry changed
// since the plan read it.
//
// # Priority levels as sub-queues
//
// A queue's levels are addressed as "queue.level" by the CLI and the HTTP
// API (task.LookupLevel): "inference.premium"; a bare "inference" is its
// level named default, or its first.
package config
