"""leat: task handlers and an HTTP API client for leat, in Python.

Handlers, run by `leat worker --queue Q --exec 'python3 handler.py'`:

    import leat

    @leat.load
    def setup():
        return {"model": load_model()}     # once per process

    @leat.task
    def handle(payload, ctx):
        ctx.progress({"pct": 50})           # the task's progress
        ctx.partial({"chunk": 1})           # a partial result
        return {"ok": True}                 # the task's result

    if __name__ == "__main__":
        leat.run()

A client of the HTTP API served by `leat serve`:

    client = leat.Client("http://127.0.0.1:8080")
    id = client.enqueue("emails", {"to": "ada@example.com"})
    print(client.wait(id, timeout=60))

Standard library only; Python 3.9 or newer.
"""

from ._client import FINAL_STATES, Client, Update
from ._errors import (
    APIError,
    BadRequest,
    Conflict,
    Fail,
    FlowFailed,
    Forbidden,
    NotFound,
    Retry,
    ServerError,
    Snooze,
    TaskFailed,
    TooLarge,
    Unauthorized,
    WaitTimeout,
)
from ._handler import Context, Result, load, main, run, run_once, set_concurrency, task
from ._version import __version__

__all__ = [
    "APIError",
    "BadRequest",
    "Client",
    "Conflict",
    "Context",
    "FINAL_STATES",
    "Fail",
    "FlowFailed",
    "Forbidden",
    "NotFound",
    "Result",
    "Retry",
    "ServerError",
    "Snooze",
    "TaskFailed",
    "TooLarge",
    "Unauthorized",
    "Update",
    "WaitTimeout",
    "__version__",
    "load",
    "main",
    "run",
    "run_once",
    "set_concurrency",
    "task",
]
