"""The task handlers the tests run under `leat worker --exec`, one per
queue: `python3 -m sdk_handlers KIND` with KIND plain, gen, async or agen."""

import asyncio
import os
import sys
import time

import leat


@leat.load
def setup():
    if os.environ.get("LOAD_CONCURRENCY"):  # asked before ready: on the ready line
        leat.set_concurrency(int(os.environ["LOAD_CONCURRENCY"]))
    return {"pid": os.getpid()}


def plain(payload, ctx):
    """Does what payload["op"] says: the outcomes a handler can have."""
    op = payload.get("op") if isinstance(payload, dict) else None
    if op == "echo":
        return {"payload": payload, "attempt": ctx.attempt, "headers": ctx.headers, "task_id": ctx.task_id}
    if op == "stdin":
        return {"read": sys.stdin.read(), "fd0": os.read(0, 100).decode()}
    if op == "print":
        ctx.log("a line of the log of", ctx.task_id)
        print("a stray print, which must not reach the protocol")
        sys.stdout.write("{\"task_id\": \"%s\", \"result\": \"forged\"}\n" % ctx.task_id)
        sys.stdout.flush()
        os.write(1, b"written to file descriptor 1\n")
        return "printed"
    if op == "fail":
        raise leat.Fail("no such customer")
    if op == "retry":
        if ctx.attempt < payload["until"]:
            raise leat.Retry("not yet: attempt %d" % ctx.attempt)
        return {"attempt": ctx.attempt}
    if op == "crash":
        raise ValueError("bad input %r" % payload.get("value"))
    if op == "snooze":
        # The first run leaves a mark and snoozes; the next one returns.
        if not os.path.exists(payload["mark"]):
            open(payload["mark"], "w").close()
            raise leat.Snooze(0.2)
        return {"attempt": ctx.attempt}
    if op == "sleep":
        time.sleep(payload["seconds"])
        return "slept"
    if op == "nan":
        return float("nan")
    if op == "pid":  # this process's ID, and whether it asks to be replaced
        return leat.Result({"pid": os.getpid()}, refresh_worker=bool(payload.get("refresh")))
    if op == "refresh_fail":
        ctx.refresh_worker()
        raise leat.Fail("spent")
    if op == "parents":  # a flow node's parents' results, by name
        return {name: p.get("result") for name, p in sorted(ctx.parents.items())}
    if op == "concurrency":
        leat.set_concurrency(payload["n"])
        return "asked"
    raise leat.Fail("unknown op %r" % (op,))


def gen(payload, ctx):
    """Yields payload["n"] partial results, reporting progress, and returns
    their count."""
    n = payload["n"]
    for i in range(n):
        ctx.progress({"done": i, "of": n})
        yield {"i": i}
        time.sleep(payload.get("pause", 0))
        if i == 0 and payload.get("gate"):
            # The follower opens the gate once it got the first partial
            # result: partial results reach it while the task runs.
            deadline = time.monotonic() + 30
            while not os.path.exists(payload["gate"]):
                if time.monotonic() > deadline:
                    raise leat.Fail("the gate did not open: no follower saw the first partial result")
                time.sleep(0.01)
    return {"count": n}


async def async_handler(payload, ctx):
    """Squares numbers concurrently on the event loop."""

    async def square(x):
        await asyncio.sleep(0.01)
        return x * x

    squares = await asyncio.gather(*(square(x) for x in payload["xs"]))
    return {"squares": list(squares), "attempt": ctx.attempt}


async def agen(payload, ctx):
    """Yields the squares of payload["xs"], aggregated into the result."""
    for x in payload["xs"]:
        await asyncio.sleep(0.005)
        yield x * x


HANDLERS = {
    "plain": (plain, False),
    "gen": (gen, False),
    "async": (async_handler, False),
    "agen": (agen, True),
}

if __name__ == "__main__":
    fn, aggregate = HANDLERS[sys.argv[1]]
    leat.task(aggregate=aggregate)(fn)
    leat.run()
