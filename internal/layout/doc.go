// Package layout holds no code: its test asserts that every package of
// leat's workspace (the library module, and e2e, examples, leattest and
// sdk/python) imports others in one direction only, low to high:
//
//	leaves     internal/resp, internal/topology, ... (import nothing of leat)
//	protocol   internal/rdb, internal/lease, internal/core
//	runtime    stream, rebalance, executor, middleware, inspect, app, task
//	edge       metrics, api
//	tools      internal/tools/bench, internal/tools/chaos (they drive a whole app)
//	tester     leattest
//	command    cmd, cmd/leat
//	workspace  examples/..., e2e, sdk/python
//
// The allowed arrows are written as a table in layout_test.go, one row per
// package in that order, each naming the packages its non-test files may
// import. A row may name only rows above it, so a cycle or an arrow back up
// cannot even be written down; an import missing from its row, or a package
// missing from the table, fails the test.
//
// Each row has a kind. Library packages (the public ones, the internal ones
// below them, and leattest) never import the CLI library (urfave/cli) or a
// tool. Tools are the test harness (internal/tools/redistest), the benchmark
// (internal/tools/bench) and fault injection (internal/tools/chaos). The harness is a
// leaf, but bench and chaos import app, executor, stream and task, so they
// sit above the runtime in the table, not beside the Redis protocol
// packages below it; only the command and the workspace's other modules
// import them.
//
// Redis is in one place: internal/rdb runs every Redis command and makes
// every script. redis_test.go type-checks every other package of the
// library module and leattest and fails on a call of a go-redis client's,
// connection's, pipeline's, subscription's or script's method that sends a
// command, or on redis.NewScript; passing clients through, making them,
// reading replies and checking errors stay allowed. The tools
// (internal/tools/redistest, internal/tools/bench, internal/tools/chaos) are exempt.
// taskredis_test.go holds package task to the same rule by its syntax.
package layout
