// Package wasm runs task handlers as WebAssembly modules, in a sandbox,
// with wazero (pure Go): a module stored in the app's Redis ([Registry])
// is fetched, compiled and run by any worker, on the same task semantics
// as Go and subprocess handlers (retries, timeouts, cancellation,
// progress, partial results, logs, results).
//
//	reg := wasm.NewRegistry(a, "")
//	v, err := reg.Put(ctx, "wordcount", module, wasm.PutOptions{}) // checked: refused when it does not compile or lacks its exports
//	h, err := wasm.New(ctx, wasm.Config{Registry: reg, Name: "wordcount", Sandbox: wasm.Sandbox{MemoryPages: 512}})
//	defer h.Close(ctx)
//	q, err := task.HandleLookup(ctx, a, "words", h.Handle)
//
// # Contracts
//
// A module follows one of two contracts, recorded with it at Put.
//
// [Lines]: a WASI command (it exports _start) speaking the JSON-lines
// protocol of subprocess handlers (see "Subprocess handlers" in package
// task) over its stdin and stdout: a ready line (optional here), then for
// each request line {"task_id", "payload", "attempt", "headers"} any
// number of progress and partial lines and one line with the result, or
// an error with its retry flag, or a snooze. A program written for
// "leat worker --exec" runs unchanged as a lines module. Each task's
// instance reads one request and then the end of its input, so the
// program ends as it would when its process's stdin closes.
//
// [Reactor]: a module that exports alloc(size u32) u32, execute(ptr u32,
// len u32) u64 and its memory as "memory", initialised by _initialize
// when it exports it. The worker calls alloc for the payload's length,
// copies the payload (JSON) there, and calls execute with the pointer and
// length; execute returns the pointer of its answer in the high 32 bits
// and its length in the low 32 bits. The answer is a JSON envelope, the
// final line of the lines protocol without its task_id:
//
//	{"result": VALUE}                      the task succeeded
//	{"error": "message"}                   the attempt failed, retried as the queue says
//	{"error": "message", "retry": false}   the task failed for good
//	{"snooze": SECONDS}                    run again later, the attempt not counted
//
// An answer that is not such an envelope fails the task for good. The
// buffer alloc returned belongs to the module; the answer must stay valid
// until execute is called again or the instance ends.
//
// During execute, a reactor may call the functions progress(ptr u32, len
// u32) and partial(ptr u32, len u32) of the import module "leat", with a
// JSON value in its memory: the task's progress and partial results. A
// module may import nothing else but WASI (wasi_snapshot_preview1).
//
// # Sandbox
//
// A module sees no file, no environment variable and no network unless
// its [Sandbox] grants a directory (mounted at "/") or variables; its
// memory is bounded ([Sandbox.MemoryPages]); its clocks are the host's
// and its random source cryptographic, or fixed with
// [Sandbox.Deterministic]. The task's context is the module's: at the
// task's timeout, when it is cancelled or when the worker stops, the
// running instance is closed, a loop included (wazero's close on context
// done). A trap (unreachable, an out-of-bounds access, a Go panic or
// "out of memory") or an exit before answering fails the attempt with
// the trap's message (and a Go crash's first line), which is retried as
// the queue says; it never takes the worker down. What a module writes to
// its stderr (and a reactor to its stdout) goes to the task's log ("leat
// tasks logs ID"), bounded as a subprocess handler's: the last
// task.LogCap lines of task.LogLineMax bytes.
//
// # Registry and versions
//
// [Registry.Put] stores a module by its SHA-256 with its name, a version
// number (1, 2... per name), its contract and whether it is reusable;
// see internal/rdb/wasm.go for the keys. A worker ([Handler]) fetches the
// current version of its name at its first task, checks it against its
// hash and compiles it, keeping the compiled form in memory and on disk
// (wazero's compilation cache, [Config.CacheDir]), so that another start
// on the machine does not compile it again. It reads the name's current
// version again at a task once [Config.Refresh] passed: a new version is
// compiled and runs the tasks that start from then on, while the tasks
// running on the old one finish with it; the old one is closed after the
// last.
//
// # Instances
//
// By default each task runs in a new instance of the compiled module: no
// state leaks from a task to another, at the cost of an instantiation
// per task (for a Go module, its runtime's start). A module put with
// [PutOptions.Reusable] may instead run task after task in the same
// instance, when the worker asks for it ([Config.Pool]): the handler
// keeps its idle instances, at most one per task that ran at once, and
// drops one that failed. A pooled lines module keeps running between
// tasks, reading request after request, as a handler process does.
// docs/benchmarks.md gives what each costs.
//
// # Building
//
// [Build] (and "leat wasm build DIR -o FILE") compiles a Go main package
// with the standard toolchain: GOOS=wasip1 GOARCH=wasm go build, with
// -buildmode=c-shared for a reactor (whose alloc and execute are
// //go:wasmexport functions). docs/wasm.md covers TinyGo, Rust and
// AssemblyScript.
package wasm
