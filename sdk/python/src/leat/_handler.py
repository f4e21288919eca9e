"""Task handlers run by `leat worker --queue Q --exec CMD`.

The worker starts CMD as a child process and speaks JSON lines with it:
the child prints {"status": "ready"} once loaded, then reads one task per
line on stdin and answers on stdout with progress and partial lines and
one final line (a result, an error or a snooze). run() is that child.
"""

import asyncio
import contextlib
import inspect
import json
import os
import sys
import threading
import traceback

from ._errors import Fail, Retry, Snooze

__all__ = ["load", "task", "run", "run_once", "main", "Context", "Result", "set_concurrency"]


class _Registry:
    def __init__(self):
        self.load = None
        self.task = None
        self.aggregate = False
        self.pass_ctx = True


_reg = _Registry()


class Result:
    """A handler's return value with settings of its reply:
    `return leat.Result(value, refresh_worker=True)` ends the task with
    value as its result and has the worker replace this process once the
    task ended (a handler that leaks memory or holds a GPU): the process's
    stdin is closed, so run() returns and the process exits, and the next
    task runs on a new one."""

    def __init__(self, value, *, refresh_worker=False):
        if not isinstance(refresh_worker, bool):
            raise TypeError("Result: refresh_worker is a bool, not %r" % (refresh_worker,))
        self.value = value
        self.refresh_worker = refresh_worker

    def __repr__(self):
        return "Result(%r, refresh_worker=%r)" % (self.value, self.refresh_worker)


class _Control:
    """The concurrency asked with set_concurrency, and where to send it:
    run()'s protocol once the process said ready, None before (the value
    then goes on the ready line) and outside run()."""

    def __init__(self):
        self.concurrency = None
        self.send = None


_control = _Control()


def set_concurrency(n):
    """Asks the worker to run at most n tasks of this handler at once (an
    int, at least 1), for a handler that knows its capacity (free memory,
    a GPU, a downstream's rate): the worker applies it within about a
    second, bounded by the queue's concurrency (it never runs more than
    the operator allows), and stops the idle processes beyond it. The last
    value asked by any of the worker's processes wins; ask for the queue's
    concurrency (or more) to go back to it. Called from @load, it goes with
    the ready line; outside a worker (run_once) it only checks n."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError("set_concurrency takes an int, not %r" % (n,))
    if n < 1:
        raise ValueError("set_concurrency(%d): want 1 or more" % n)
    _control.concurrency = n
    if _control.send is not None:
        _control.send(_encode({"concurrency": n}))


def load(fn):
    """Marks fn as the setup run once per process, before it says it is
    ready: load models, open connections. Its return value is ctx.state of
    every task. fn may be an `async def`; it then runs on the event loop
    the async handlers share."""
    _reg.load = fn
    return fn


def task(fn=None, *, aggregate=False):
    """Marks the function that handles each task, as @task or
    @task(aggregate=True).

    The function takes (payload, ctx), or only (payload), and may be:

    - a plain function: its return value is the task's result;
    - an `async def`: run on one asyncio event loop kept for the process;
    - a generator or an async generator: each value it yields is sent as a
      partial result, in order (`leat tasks follow`, Client.follow); the
      result is the generator's return value (None for an async one), or,
      with aggregate=True, the list of the values it yielded.

    The payload is the task's JSON decoded (None for null). Raise Fail for
    a final failure, Snooze to run again later, Retry (or any exception)
    for a failure that is retried. A process has one handler: a second
    @task replaces the first."""

    def register(f):
        if not callable(f):
            raise TypeError("@task decorates a function, not %r" % (f,))
        _reg.task = f
        _reg.aggregate = bool(aggregate)
        _reg.pass_ctx = _takes_two(f)
        return f

    return register(fn) if fn is not None else register


def _takes_two(fn):
    """Whether fn can be called with (payload, ctx) rather than (payload)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    n = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n >= 2


class Context:
    """What a handler gets besides its payload.

    task_id, attempt (1 for the first run), headers (a dict of strings,
    {} when the task has none), parents (for a node of a flow: its parents
    by node name, each a dict with "state", and "result" or "error"; {}
    otherwise) and state (the @load function's value)."""

    def __init__(self, task_id, attempt, headers, state, send, parents=None):
        self.task_id = task_id
        self.attempt = attempt
        self.headers = headers
        self.parents = parents if parents is not None else {}
        self.state = state
        self._send = send
        self._done = False
        self._refresh = False

    def progress(self, value):
        """Reports the task's progress: any JSON value, kept as the
        progress of its status (the last one wins) and sent to followers."""
        self._report("progress", value)

    def partial(self, value):
        """Sends a partial result: any JSON value, appended in order to the
        task's updates (Client.follow, `leat tasks follow`)."""
        self._report("partial", value)

    def refresh_worker(self):
        """Has the worker replace this process once this task ended,
        whatever its outcome (a result, Fail, Retry, Snooze or another
        exception): for a handler that knows its process is spent (a CUDA
        error, a leak). Result(value, refresh_worker=True) does it for a
        result."""
        self._refresh = True

    def log(self, *args, sep=" "):
        """Writes a line to the task's log (stderr, which the worker keeps
        as the task's log lines), as print() would format args."""
        print(*args, sep=sep, file=sys.stderr, flush=True)

    def _report(self, kind, value):
        line = _encode({"task_id": self.task_id, kind: value})  # raises on a value that is not JSON
        if self._done:
            print("leat: %s of task %s after it ended: dropped" % (kind, self.task_id), file=sys.stderr, flush=True)
            return
        self._send(line)


def _encode(msg):
    """msg as one line of strict JSON (no NaN), or TypeError/ValueError."""
    return json.dumps(msg, separators=(",", ":"), allow_nan=False)


class _Runner:
    """Runs tasks with the registered handler: one event loop, for async
    handlers, for the life of the process."""

    def __init__(self):
        if _reg.task is None:
            raise RuntimeError("leat: no handler: decorate a function with @leat.task")
        self.fn = _reg.task
        self.aggregate = _reg.aggregate
        self.pass_ctx = _reg.pass_ctx
        self.loop = None
        self.state = None

    def _loop(self):
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
        return self.loop

    def setup(self):
        if _reg.load is not None:
            self.state = self._settle(_reg.load())

    def _settle(self, v):
        if inspect.isawaitable(v):
            return self._loop().run_until_complete(v)
        return v

    def close(self):
        if self.loop is not None:
            self.loop.close()
            self.loop = None

    def call(self, ctx, payload):
        """The handler's result for one task; raises what the handler raises."""
        out = self.fn(payload, ctx) if self.pass_ctx else self.fn(payload)
        if inspect.isgenerator(out):
            return self._drain(ctx, out)
        if inspect.isasyncgen(out):
            return self._loop().run_until_complete(self._adrain(ctx, out))
        return self._settle(out)

    def _drain(self, ctx, gen):
        got = []
        while True:
            try:
                v = next(gen)
            except StopIteration as stop:
                return got if self.aggregate else stop.value
            ctx.partial(v)
            if self.aggregate:
                got.append(v)

    async def _adrain(self, ctx, agen):
        got = []
        async for v in agen:
            ctx.partial(v)
            if self.aggregate:
                got.append(v)
        return got if self.aggregate else None

    def handle(self, req, send):
        """Runs the task of request req and returns its final line."""
        ctx = Context(req["task_id"], _attempt(req.get("attempt")), _headers(req.get("headers")), self.state, send,
                      _parents(req.get("parents")))
        tid = ctx.task_id

        def reply(msg):
            if ctx._refresh:
                msg["refresh_worker"] = True
            return _encode(msg)

        try:
            result = self.call(ctx, req.get("payload"))
            if isinstance(result, Result):
                ctx._refresh = ctx._refresh or result.refresh_worker
                result = result.value
            try:
                return reply({"task_id": tid, "result": result})
            except (TypeError, ValueError) as e:
                return reply({"task_id": tid, "error": "the result is not JSON: %s" % e, "retry": False})
        except Fail as e:
            return reply({"task_id": tid, "error": str(e) or "failed", "retry": False})
        except Snooze as e:
            return reply({"task_id": tid, "snooze": e.seconds})
        except Retry as e:
            return reply({"task_id": tid, "error": str(e) or "retry", "retry": True})
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            return reply({"task_id": tid, "error": "%s: %s" % (type(e).__name__, e), "retry": True})
        finally:
            ctx._done = True


def _attempt(v):
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 1


def _headers(v):
    return dict(v) if isinstance(v, dict) else {}


def _parents(v):
    if not isinstance(v, dict):
        return {}
    return {k: dict(p) for k, p in v.items() if isinstance(p, dict)}


def _requests(lines):
    """The task requests among lines (bytes): one JSON object a line with a
    string task_id; blank lines are skipped and anything else is reported
    on stderr and skipped."""
    for raw in lines:
        raw = raw.strip()
        if not raw:
            continue
        try:
            req = json.loads(raw)
        except ValueError:
            print("leat: ignoring a request line that is not JSON: %.200r" % raw, file=sys.stderr, flush=True)
            continue
        if not isinstance(req, dict) or not isinstance(req.get("task_id"), str):
            print("leat: ignoring a request without a task_id: %.200r" % raw, file=sys.stderr, flush=True)
            continue
        yield req


def run():
    """Serves tasks on stdin and stdout until stdin closes: the process
    `leat worker --queue Q --exec CMD` starts.

    Stdin and stdout belong to the protocol. run() keeps private copies of
    them, points file descriptor 1 and sys.stdout at stderr, so that
    print(), and anything else the process writes to stdout (a library, a
    child process), lands in the task's log rather than corrupting the
    protocol, and file descriptor 0 and sys.stdin at /dev/null, so that
    nothing reads the requests but run(). Then it runs the @load
    function, says ready and answers each task.
    An exception of @load ends the process with status 1 (the worker
    starts another one, with backoff)."""
    runner = _Runner()
    sys.stdout.flush()
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")
    lock = threading.Lock()

    def send(line):
        with lock:
            proto.write(line + "\n")
            proto.flush()

    try:
        try:
            runner.setup()
        except Exception:
            traceback.print_exc(file=sys.stderr)
            sys.exit(1)
        ready = {"status": "ready"}
        if _control.concurrency is not None:
            ready["concurrency"] = _control.concurrency
        send(_encode(ready))
        _control.send = send
        for req in _requests(requests):
            send(runner.handle(req, send))
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        pass  # the worker went away
    finally:
        _control.send = None
        runner.close()


def run_once(payload=None, *, task_id="local", attempt=1, headers=None, parents=None, on_update=None):
    """Runs one task in this process, without a worker, and returns its
    result: for tests, and `python3 handler.py --once JSON` (main()).

    The @load function runs first. on_update(kind, value) receives each
    progress ("progress") and partial result ("partial"). A failure raises
    Fail (final), Retry (retried: the handler raised Retry or another
    exception, chained as __cause__) or Snooze, as the worker would take it.
    print() goes to stderr while the handler runs, as under a worker."""
    runner = _Runner()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            runner.setup()

            def send(line):
                msg = json.loads(line)
                for kind in ("progress", "partial"):
                    if kind in msg and on_update is not None:
                        on_update(kind, msg[kind])

            ctx = Context(task_id, attempt, _headers(headers), runner.state, send, _parents(parents))
            try:
                result = runner.call(ctx, payload)
                if isinstance(result, Result):
                    result = result.value
            except (Fail, Snooze, Retry):
                raise
            except Exception as e:
                raise Retry("%s: %s" % (type(e).__name__, e)) from e
            finally:
                ctx._done = True
        try:
            _encode(result)
        except (TypeError, ValueError) as e:
            raise Fail("the result is not JSON: %s" % e) from e
        return result
    finally:
        runner.close()


def main(argv=None):
    """The entry point of a handler script: run(), or, with
    `--once JSON`, run_once on that payload, printing progress and partial
    results on stderr and the result as JSON on stdout (exit status 1 when
    the task fails)."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        run()
        return
    if len(argv) != 2 or argv[0] != "--once":
        sys.exit("usage: %s [--once PAYLOAD_JSON]" % os.path.basename(sys.argv[0]))
    try:
        payload = json.loads(argv[1])
    except ValueError as e:
        sys.exit("--once: the payload is not JSON: %s" % e)

    def show(kind, value):
        print("%s: %s" % (kind, json.dumps(value)), file=sys.stderr, flush=True)

    try:
        result = run_once(payload, on_update=show)
    except (Fail, Retry, Snooze) as e:
        print("%s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
    print(json.dumps(result), flush=True)
