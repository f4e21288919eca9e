// Package layout holds no code: its test asserts that every package of
// leat's workspace (the library module, and e2e, examples, leattest and
// sdk/python) imports others in one direction only, low to high:
//
//	internal/...  <-  stream  <-  middleware  <-  executor  <-  app  <-  task  <-  api  <-  cmd
//	                  rebalance <-'              inspect  <-  metrics
//
// The allowed arrows are written as a table in layout_test.go, one row per
// package in that order, each naming the packages it may import from its
// non-test files. A package may import only packages of rows above its own,
// so a cycle or an arrow back up cannot even be written down; an import
// missing from its row, or a package missing from the table, fails the test.
//
// Each row has a kind. Library packages (the public ones, the internal ones
// below them, and leattest) never import the CLI library (urfave/cli) or a
// tool. Tools are the test harness (internal/redistest), the benchmark
// (internal/bench) and fault injection (internal/chaos): bench and chaos
// drive a whole app, so they sit above the runtime (app, executor, stream,
// task) in the table, not beside the Redis protocol packages below it. Only
// the command (cmd) and the examples and tests above it may use them.
package layout
