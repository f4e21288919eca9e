"""leat_handler: write leat task handlers in Python (standard library only).

    from leat_handler import load, task, run

    @load
    def setup():
        return {"model": load_model()}      # once per process

    @task
    def handle(payload, ctx):
        ctx.progress({"pct": 50})            # stored in the task's status
        ctx.partial({"chunk": 1})            # appended to the task's updates
        return {"ok": True}                  # the task's result

    if __name__ == "__main__":
        run()

Run it with `leat worker --queue Q --exec 'python3 handler.py'`. run() speaks
leat's JSON-lines protocol on stdin/stdout: it prints {"status": "ready"}
once @load returned, then answers each request line. Raise Retry(...) (or any
exception) for a retryable failure, Fail(...) for a final one, and
Snooze(seconds) to run the task again later without counting the attempt
(ctx.headers has the task's headers). Use stderr
(print(..., file=sys.stderr), logging) for logs: stdout belongs to the
protocol, so print() is redirected to stderr while a task runs.

run_once(payload) runs one task in-process and returns its result, for tests;
`python3 handler.py --once '{"n": 1}'` does that from a shell.
"""

import json
import sys
import traceback

__all__ = ["load", "task", "run", "run_once", "Retry", "Fail", "Snooze", "Context"]

_load = None
_task = None


class Retry(Exception):
    """A failure after which the task is tried again (with backoff)."""


class Fail(Exception):
    """A final failure: the task is not retried."""


class Snooze(Exception):
    """Run the task again after `seconds`, the attempt not counted."""

    def __init__(self, seconds):
        super().__init__("snoozed for %s s" % seconds)
        self.seconds = seconds


def load(fn):
    """Marks the function run once at start; its return value is ctx.state."""
    global _load
    _load = fn
    return fn


def task(fn):
    """Marks the function handling each task: fn(payload, ctx) -> result."""
    global _task
    _task = fn
    return fn


class Context:
    """What a task handler gets besides its payload."""

    def __init__(self, task_id, attempt, state, out, headers=None):
        self.task_id = task_id
        self.attempt = attempt
        self.headers = headers or {}
        self.state = state
        self._out = out

    def progress(self, value):
        """Reports progress (any JSON value)."""
        self._out({"task_id": self.task_id, "progress": value})

    def partial(self, value):
        """Appends a partial result (any JSON value)."""
        self._out({"task_id": self.task_id, "partial": value})


def _writer(stream):
    def out(msg):
        stream.write(json.dumps(msg, separators=(",", ":")) + "\n")
        stream.flush()

    return out


def _handle(req, state, out):
    ctx = Context(req.get("task_id"), req.get("attempt", 1), state, out, req.get("headers"))
    try:
        result = _task(req.get("payload"), ctx)
        return {"task_id": ctx.task_id, "result": result}
    except Fail as e:
        return {"task_id": ctx.task_id, "error": str(e) or "failed", "retry": False}
    except Snooze as e:
        return {"task_id": ctx.task_id, "snooze": e.seconds}
    except Exception as e:  # Retry and anything unexpected
        if not isinstance(e, Retry):
            traceback.print_exc(file=sys.stderr)
        return {"task_id": ctx.task_id, "error": "%s: %s" % (type(e).__name__, e), "retry": True}


def run():
    """Serves tasks on stdin/stdout until stdin closes."""
    if _task is None:
        raise SystemExit("leat_handler: no @task function")
    proto = sys.stdout
    sys.stdout = sys.stderr  # stray print() calls must not break the protocol
    out = _writer(proto)
    state = _load() if _load else None
    out({"status": "ready"})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError:
            print("leat_handler: ignoring a request that is not JSON", file=sys.stderr)
            continue
        out(_handle(req, state, out))


def run_once(payload, task_id="local", attempt=1, on_update=None, headers=None):
    """Runs one task in-process and returns its result; raises on failure.

    on_update(msg) receives the progress and partial messages."""
    if _task is None:
        raise RuntimeError("leat_handler: no @task function")
    state = _load() if _load else None
    req = {"task_id": task_id, "payload": payload, "attempt": attempt, "headers": headers}
    res = _handle(req, state, on_update or (lambda m: None))
    if "error" in res:
        raise (Retry if res.get("retry") else Fail)(res["error"])
    if "snooze" in res:
        raise Snooze(res["snooze"])
    return res["result"]


def main():
    """run(), or run_once on the JSON of --once ARG."""
    if len(sys.argv) >= 3 and sys.argv[1] == "--once":
        result = run_once(json.loads(sys.argv[2]), on_update=lambda m: print(json.dumps(m), file=sys.stderr))
        print(json.dumps(result))
    else:
        run()
