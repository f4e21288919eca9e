// Package subprocess runs the tasks of a queue in supervised child
// processes written in any language: the handler behind
// "leat worker --queue Q --exec CMD", and [Handler.Handle] for a Go
// program's task.Handle.
//
//	h, err := subprocess.New(subprocess.Config{Command: []string{"python3", "handler.py"}})
//	q, err := task.Handle(a, "resize", h.Handle, task.FetchWhen(h.Wait), task.ConcurrencyFunc(h.Concurrency))
//
// The protocol is JSON lines on the child's stdin and stdout (sdk/python is
// a Python package that speaks it):
//
//	child:  {"status":"ready"}                                once started (after loading models...)
//	worker: {"task_id":"ID","payload":P,"attempt":N,"headers":H}  one task (headers absent when none;
//	        "parents":{NAME:{"state":S,"result":R}} for a flow's node: task.Task.Parents)
//	child:  {"task_id":"ID","progress":V}                     any number, optional
//	child:  {"task_id":"ID","partial":V}                      any number, optional
//	child:  {"task_id":"ID","result":R}                       success, or
//	child:  {"task_id":"ID","error":"message","retry":false}  failure (retry absent or true: retried)
//	child:  {"task_id":"ID","snooze":S}                       run again after S seconds, the attempt not counted (task.Snooze)
//	child:  {"concurrency":N}                                 any time after ready (or on the ready line): run N tasks at once
//
// A final line (result, error or snooze) with "refresh_worker":true has
// the child replaced once its task ended.
// A field given as null is absent, in every line. A child must flush its
// stdout after each line (children run with PYTHONUNBUFFERED=1 unless the
// worker sets it, so that Python's print does).
//
// A child runs one task at a time: the worker writes the next request after
// the final line of the previous one. With a concurrency of N a worker runs
// up to N children, started as tasks come and reused while they live. One
// task per child keeps handlers simple (no threads in the child), makes
// every stderr line attributable (they are logged with the ID of the task
// running) and lets a hung or crashed task take down only its own child.
//
// A child is replaced after a task whose final line says
// "refresh_worker":true, or once it answered
// Config.MaxTasksPerProcess tasks (a handler that leaks memory or
// holds a GPU): the task's outcome counts; the child's stdin is closed
// and it has 5 seconds to exit before it is killed, while the task's slot
// waits (its outcome is recorded once the child is gone, so the slot never
// has two children), and the slot's next task runs on a new child. No task
// goes to a child being replaced. A refresh_worker that is not a boolean
// is logged and the child kept; the line's outcome counts.
//
// A {"concurrency":N} line (N an integer, at least 1; other values are
// logged and ignored) asks the worker to run N tasks of the queue at once.
// [Handler.Concurrency] applies it as the queue's task.ConcurrencyFunc (evaluated
// about every second): N bounded by the queue's concurrency (Concurrency,
// or the one set live), which the operator's maximum bounds in turn, so a
// handler can lower its concurrency and raise it back, never above what
// the operator allows; idle children beyond it are stopped. The last line
// of any of the Handler's children wins.
//
// The worker supervises its children: a child that does not say ready
// within the start timeout, exits, or runs a task past its timeout (or
// cancelled) is killed with its process group, and the next start waits an
// exponential backoff (reset by a task answered), the Handler reporting
// itself unhealthy ([Handler.Stats]) and not ready ([Handler.Ready], for
// /readyz) until a child is ready again; [Handler.Warm] starts a child ahead
// of the first task. A start failure ([StartError]) carries the
// child's last 20 stderr lines. Declare the queue with
// task.FetchWhen([Handler.Wait]): the worker then takes no task while no child is
// ready, and a task that finds none all the same is handed back, its
// attempt not counted ([ErrNotReady]). A task
// whose child exited fails retryably (ErrExited). Children get the
// worker's environment variables of [EnvAllowed] only (never its
// LEAT_ ones, which hold its secrets), plus Config.Env; when a child
// ends, its process group is killed, and on Linux so are its descendants
// that left the group, found by the LEAT_EXEC_PROCESS marker each child's
// environment carries. Lines that are not
// JSON, and lines naming a task the child is not running, are logged and
// ignored. A line over the size limit (16 MiB by default) fails its task
// for good (ErrLineTooLong); the child is kept. Anything written to
// stderr is logged and kept in the task's log (written in batches, every
// 100ms at most); stdout belongs to the protocol.
package subprocess
