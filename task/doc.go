// Package task is leat's task queue: a stream with task semantics, run by
// the same workers as the app's processors.
//
//	emails, err := task.Handle(a, "emails", func(ctx context.Context, t *task.Task[Email]) (Receipt, error) {
//		return send(ctx, t.Payload)
//	}, task.Concurrency(20), task.MaxRetries(5))
//	id, err := emails.Enqueue(ctx, Email{To: "ada@example.com"}, task.Delay(time.Minute))
//	receipt, err := emails.Result(ctx, id) // waits
//	err = a.Run(ctx)                       // a worker: runs the app's processors and task queues
//
// # Queues and handlers
//
// [Handle] declares a queue on an App with a typed handler; every worker of
// the app ([app.App.Run]) then competes for its tasks: one consumer group,
// no partition ownership, up to the queue's concurrency at a time per
// worker. [Declare] declares a queue without running it, for programs that
// only enqueue; [Lookup] opens a queue recorded in Redis, with JSON
// payloads, for tools without the app's code (the CLI).
//
// Payloads and results are JSON, so producers and handlers in other
// languages (and the CLI) can share a queue. JSON that one language would
// decode differently from another is refused where it enters: a raw payload
// (json.RawMessage, the CLI's, the HTTP API's) holding bytes that are not
// UTF-8, an escaped lone surrogate or an object's name twice is not
// enqueued (ErrInvalid), and such a result fails its task for good. In a
// program that declared the queue with a payload type, the queue [Lookup]
// opens (for the embedded CLI and HTTP API) refuses too a payload that
// type's handlers would not decode exactly: an unknown field, a value of
// another kind or out of range. A handler's contract is
// language-neutral: it receives the task's ID, payload, attempt, key and
// headers, and returns a result or an error, with SkipRetry and RetryAfter
// to steer retries and [Snooze] to run again later without counting the
// attempt; ctx ends at the task's timeout, when it is cancelled
// ([ErrCancelled]) or when the worker's grace period ends.
//
// # Headers and middleware
//
// [Headers] gives a task string pairs carried beside its payload to every
// attempt (Task.Headers, [Info]): trace context, a tenant. [Use] wraps each
// attempt of a queue's tasks in middleware (package middleware's
// TaskMiddleware: logging, tracing, payload transformations), inside the
// app's Config.TaskMiddleware; decoding the payload and calling the handler
// is innermost, and the chain's error is the attempt's:
//
//	q, err := task.Handle(a, "emails", send, task.Use(middleware.TaskLogging(nil), middleware.TaskTracing(middleware.TracingOptions{})))
//	id, err := q.Enqueue(ctx, p, task.Headers(middleware.InjectTrace(ctx, nil)))
//
// # Life of a task
//
// A task is pending (ready), scheduled (delayed until its run-at time),
// active (running), retrying (failed, waiting for its next attempt),
// succeeded, failed (ended by SkipRetry), dead (out of retries) or
// cancelled. Enqueue, EnqueueMany, Cron, Cancel and Requeue move it, and
// Delete removes an ended one at once; Info and Wait read it; Counts reads
// the number of tasks in each state of a queue, kept by every move so that
// reading them costs one O(1) command; Summary reads a queue's counts and
// pause in one round trip, and Summaries those of every queue in two;
// List reads the latest dead, the latest finished or the soonest due tasks,
// at a cost that grows with the number asked for, never with the queue.
// The scripts that end tasks also count them per 10-second bucket, for the
// throughput that package inspect reports ("leat inspect queue").
//
// A worker takes tasks with a script that marks them active in the step
// that reads them; with none ready it waits in a blocking read of the
// queue's streams, and the entries that read returns are taken by the same
// script. On a single server (standalone or Sentinel) the idle queues of an
// App wait in one blocking read of all their streams, up to 5s at a time,
// on one connection, which a queue turning idle or stopping interrupts
// (CLIENT UNBLOCK); they also share one subscription to their channels
// (cancellations, resumes), the leaders among them wait on their wake
// lists in one BLPOP, and their periodic work (beats, live settings,
// promotions, janitors, webhook polls) goes through a pool of four
// connections of leat's own. An idle App so holds a fixed number of
// connections, whatever its queues. On Redis Cluster, or for a Redis user
// that may not run CLIENT UNBLOCK, each queue waits in reads of its own,
// 500ms at a time, so that a stopping worker returns soon. After a read
// that found nothing no script runs: the next read goes out at once.
//
// # Pausing
//
// [Queue.Pause] stops every worker from starting the queue's tasks until
// [Queue.Resume]; running tasks go on to their end, and enqueueing and the
// promotion of due tasks go on, so tasks wait. The fetch script checks the
// pause in the step that takes tasks, so no worker misses it; a worker of
// a paused queue tries again every second and is woken at once by Resume.
// [Queue.Paused] says since when it is paused.
//
// # Metrics
//
// A worker reports each run whose outcome it recorded to the hooks in
// app.Config.Hooks that implement [HookTaskRun]: the queue, the outcome
// (OutcomeSucceeded, OutcomeRetried, OutcomeSnoozed, OutcomeFailed,
// OutcomeDead, OutcomeCancelled), the attempt and the handler's time. metrics.Exporter
// is one.
//
// # Scheduling
//
// Delayed and retrying tasks wait in a sorted set by due time. The queue's
// leader (one of the workers that handle the queue, holding the queue's
// lease: app.Schedule.Lease; not the app's leader, whose program may not
// handle the queue) moves due tasks to the ready streams atomically (a Lua
// script),
// sleeping until the next due time; an enqueue or retry that becomes the
// earliest due wakes it at once, so tasks start within milliseconds of
// their due time. Cron schedules ([Queue.Cron]) run on the leader too: each
// tick is a task with the ID cron:NAME:TICK (an ID no enqueue can give:
// [ReservedIDPrefix]), and the last tick enqueued is
// recorded with the leader term (the queue's lease's, numbered by the
// app's term counter), so a failover neither skips nor doubles a tick.
//
// # Retries, timeouts and dead tasks
//
// A failed attempt is retried after an exponential backoff with jitter
// (see [Backoff]) until [MaxRetries] retries were made; then the task is
// dead: kept, within [KeepDead]'s bounds on count and age, for inspection
// and [Queue.Requeue]. An attempt over its timeout has its context
// cancelled with [ErrTimeout] and fails.
//
// # Visibility and crashes
//
// A worker touches the entries of its running tasks every third of the
// queue's [Visibility]; the queue's leader reclaims entries idle for longer (their
// worker died or froze) with XAUTOCLAIM and makes their tasks ready again.
// A worker that stops gracefully lets its tasks finish within its grace
// period and hands the rest back at once. Delivery is at least once: a
// task whose worker died mid-run runs again.
//
// # Keyed queues
//
// In a [Keyed] queue every task has a key. A key's tasks wait in a list, and
// the key, not the task, sits in the ready stream as a token, at most once:
// the worker that takes the token runs the key's first task, and when it
// ends the token goes back to the end of the stream if the key has more.
// So the tasks of a key run one at a time and in order across all workers,
// different keys run in parallel, and keys take turns: a flood of one key
// does not starve the others. [KeyRate] limits how many tasks of a key
// start per window, counted in Redis for all workers: a key over its limit
// is parked in the scheduled set until its window ends.
//
// [KeyConcurrency] lets up to n tasks of a key run at once: the key has up
// to n tokens, the first n tasks of its list are the ones that may run, so
// its tasks start in order but may end out of order, and keys still take
// turns. [MaxKeyBacklog] bounds a key's list: an enqueue past it is
// refused with [ErrKeyBacklogFull] and stores nothing. A worker that dies
// running a key's tasks leaves their tokens pending; the reclaim after the
// visibility timeout makes the tasks ready again and gives their tokens
// back. See docs/keyed-queues.md.
//
// # Rate limits
//
// [Rate] limits how many tasks of a queue start per window over all its
// workers (a rate-limited API behind the handlers, say): the fetch script
// takes at most what is left of the window's budget, and with none left the
// workers sleep to the window's end. [Queue.SetRate] changes the limit live
// for every running worker, in place of their programs' option (a
// downstream that slows down, say), and wakes those sleeping out a window
// (a worker that missed the message fetches again within a second);
// [Queue.ClearRate] goes back to the option.
//
// # Priorities
//
// [Priorities] gives a queue levels served in strict order; [Weighted]
// levels share the workers in proportion to their weights (a smooth
// weighted round robin over each worker's fetches). Each level is a ready
// stream of its own.
//
// # Progress and partial results
//
// A handler reports progress with [Task.Progress] (kept as the Progress of
// the task's [Info]) and partial results with [Task.Partial]; both are
// appended, in order, to a stream per task capped at about [UpdatesCap]
// entries that lives for the task's timeout plus its retention.
// [Queue.Follow] yields them in order, those recorded first, then live,
// and ends with the task's final status ("leat tasks follow ID").
//
// # Webhooks
//
// A task enqueued with [Webhook] has its outcome (a [WebhookEvent]) POSTed
// as JSON when it ends. The Lua script that ends the task adds it to the
// queue's pending deliveries in Redis in the same step; every worker of the
// queue takes due deliveries with a lease and POSTs them from a few sender
// goroutines of its own, so handlers never wait on a webhook and a worker
// that dies leaves its deliveries to the others. Failed POSTs are retried
// with a doubling backoff with jitter, at least the endpoint's Retry-After,
// a bounded number of times ([WebhookRetry]); answers that will not change
// (400, 404, 410, ...) and redirects fail the delivery at once. The
// delivery's state is in the task's [Info].
//
// Workers dial no internal address (loopback, private, link-local, ...),
// checked on the address dialed after name resolution, unless
// app.Config.WebhookAllow names it. Deliveries carry the Standard Webhooks
// headers, signed with the task's secret ([WithWebhookSecret], kept in
// Redis with the task) or the queue's ([WebhookSecret]).
//
// # Logs
//
// [Task.Log] appends a line to the task's log, as do the stderr lines of a
// subprocess handler; [Queue.Logs] reads them ("leat tasks logs ID"). A
// log holds at most [LogCap] lines of [LogLineMax] bytes and lives for the
// task's timeout plus its retention.
//
// # Subprocess handlers
//
// Package task/subprocess runs a queue's tasks in supervised child
// processes written in any language ("leat worker --queue Q --exec CMD";
// sdk/python is a Python package for them), over JSON lines on the
// children's stdin and stdout; package task/wasm runs them in WebAssembly
// modules. A handler that cannot run a task where it is returns an error
// matching ErrHandBack: the task goes back to the queue, its attempt not
// counted.
//
// # Flows
//
// A flow ([NewFlow], [AddNode], [Node.After], [Flow.Chain], [Flow.Chord],
// [Flow.Submit]) is a directed acyclic graph of tasks across any queues,
// submitted in one call and recorded whole or not at all. Each node is a
// task of its queue, created [Waiting] at submit time and made pending
// once all its parents have ended as their failure policies allow
// ([FailFlow], [IgnoreFailure], [ContinueOnFailure]); its handler reads
// their results in [Task.Parents], and may add children to its node at
// run time ([AddChild]). The flow's record lives in its own hash slot:
// when a node's task ends, the completer that recorded its outcome
// records it in the flow too and releases the children that became ready,
// each step one idempotent script in one slot; a leader-side sweep
// finishes what a kill or a lost reply left between the steps.
// [GetFlow], [WaitFlow], [CancelFlow] and [ListFlows] read and act on
// flows. docs/flows.md has the whole design.
//
// # Memory
//
// Every key a task creates has a bounded life: a task's hash lives until
// its retention ends (succeeded, failed, cancelled) or its dead age (dead;
// the dead set also keeps at most its bound of tasks); a unique lock ends
// with its TTL or its task; a task's updates and log streams expire with
// its timeout plus retention; a pending webhook delivery leaves once
// delivered or out of attempts; acknowledged ready entries are trimmed from
// their stream once no entry before them is pending (deleted at once while
// a task has run for over 5s); per-key lists disappear when empty. docs/tasks.md ("Task keys") lists every key with its
// TTL.
package task
