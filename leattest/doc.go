// Package leattest is leat's testing kit: it runs an app's real runtime
// (workers, partition locks, acknowledgements, retries, failure policies,
// leadership, background tasks, task queues) against an in-process Redis
// server, so a processor, a task handler or a background task can be
// unit-tested without redis-server.
//
// # A test
//
//	func TestTotals(t *testing.T) {
//		k := leattest.New(t)
//		a := k.App(setup) // the app's own Setup, on the kit's server
//		orders := leattest.Stream[Order](k, a, "orders")
//		leattest.Send(k, orders, Order{ID: 1, Customer: "c-1", Amount: 12.5})
//		w := k.Start(a)
//		w.WaitIdle() // every processor consumed and acknowledged everything
//		// check the processor's effects; k.Failures, leattest.DeadLetters,
//		// leattest.Records read what it retried, dead-lettered or sent on
//		w.Stop()
//	}
//
// # Task handlers
//
// A task queue the app handles (task.Handle) runs as in production: enqueue
// with the queue's own methods, then WaitIdle waits until none of its tasks
// is pending, running or retrying, and Info, Result and Counts read what
// happened. A queue's cron schedules (Queue.Cron) follow the kit's clock,
// as background schedules do; task delays and retry backoff follow real
// time: give queues under test a short task.Backoff.
//
// # What is real and what is not
//
// The runtime is the production one: an event is acknowledged when the loop
// body that received it returns, failures are retried in place and then go
// to the failure policy, dead letters are written, leader-only tasks run on
// the leader. Underneath is miniredis, an in-process server that speaks the
// Redis protocol and runs Lua scripts; it is fine for semantics, not for
// performance, and keys do not expire by themselves (the kit's runs do not
// need them to). Integration tests of leat itself run against a real
// redis-server.
//
// # Time and faults
//
// Background task schedules (Every, Cron) and task queues' cron schedules
// run on the kit's clock, which
// moves only when the test says so ([Kit.Advance]); leases and locks keep
// real time. [Kit.LoseLock] takes a partition's lock away in the middle of
// processing, as an expiry would, to test what a processor does then.
//
// # Trying leat
//
// [TryRedis] gives examples and first programs a Redis without setting one
// up: LEAT_REDIS_URL, else a redis-server on 127.0.0.1:6379, else the kit's
// in-memory server, saying which it picked (examples/quickstart uses it).
package leattest
