"""Tests of the handler side that need no server: run_once in this process,
and run() in a child process spoken to over the JSON-lines protocol."""

import asyncio
import json
import os
import subprocess
import sys
import unittest

import leat
from leat import _handler

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")


class RunOnceTest(unittest.TestCase):
    def setUp(self):
        self.addCleanup(setattr, _handler, "_reg", _handler._reg)
        _handler._reg = _handler._Registry()

    def test_plain_with_load_state_headers_and_updates(self):
        @leat.load
        def setup():
            return {"model": "m1"}

        @leat.task
        def handle(payload, ctx):
            ctx.progress({"pct": 50})
            ctx.partial("chunk")
            return {"n": payload["n"] + 1, "state": ctx.state, "tenant": ctx.headers.get("tenant"), "attempt": ctx.attempt}

        seen = []
        got = leat.run_once({"n": 1}, headers={"tenant": "t1"}, attempt=3, on_update=lambda k, v: seen.append((k, v)))
        self.assertEqual(got, {"n": 2, "state": {"model": "m1"}, "tenant": "t1", "attempt": 3})
        self.assertEqual(seen, [("progress", {"pct": 50}), ("partial", "chunk")])

    def test_flow_parents(self):
        @leat.task
        def handle(payload, ctx):
            return {name: p.get("result") for name, p in ctx.parents.items()}

        got = leat.run_once("d", parents={"b": {"state": "succeeded", "result": 1}, "c": {"state": "succeeded", "result": 2}})
        self.assertEqual(got, {"b": 1, "c": 2})
        self.assertEqual(leat.run_once("d"), {})

    def test_payload_only_handler(self):
        leat.task(lambda payload: payload * 2)
        self.assertEqual(leat.run_once(21), 42)

    def test_generators(self):
        def g(payload, ctx):
            for i in range(payload):
                yield i
            return "done"

        seen = []
        leat.task(g)
        self.assertEqual(leat.run_once(3, on_update=lambda k, v: seen.append(v)), "done")
        self.assertEqual(seen, [0, 1, 2])
        leat.task(aggregate=True)(g)
        self.assertEqual(leat.run_once(3), [0, 1, 2])

    def test_async_handlers_share_one_loop_with_load(self):
        @leat.load
        async def setup():
            return {"loop": asyncio.get_running_loop()}

        @leat.task
        async def handle(payload, ctx):
            await asyncio.sleep(0)
            return asyncio.get_running_loop() is ctx.state["loop"]

        self.assertIs(leat.run_once(None), True)

        async def agen(payload, ctx):
            for x in payload:
                await asyncio.sleep(0)
                yield x + 1

        leat.task(aggregate=True)(agen)
        self.assertEqual(leat.run_once([1, 2]), [2, 3])
        leat.task(agen)
        self.assertIsNone(leat.run_once([1, 2]))

    def test_outcomes(self):
        def raiser(exc):
            def handle(payload, ctx):
                raise exc

            return handle

        leat.task(raiser(leat.Fail("bad")))
        with self.assertRaisesRegex(leat.Fail, "bad"):
            leat.run_once(None)
        leat.task(raiser(leat.Snooze(1.5)))
        with self.assertRaises(leat.Snooze) as cm:
            leat.run_once(None)
        self.assertEqual(cm.exception.seconds, 1.5)
        leat.task(raiser(KeyError("k")))
        with self.assertRaisesRegex(leat.Retry, "KeyError") as cm:
            leat.run_once(None)
        self.assertIsInstance(cm.exception.__cause__, KeyError)
        leat.task(lambda p: {"x": float("inf")})
        with self.assertRaisesRegex(leat.Fail, "not JSON"):
            leat.run_once(None)

    def test_snooze_bounds(self):
        with self.assertRaises(ValueError):
            leat.Snooze(-1)
        with self.assertRaises(TypeError):
            leat.Snooze("10")

    def test_result_and_set_concurrency(self):
        leat.task(lambda p: leat.Result({"v": p}, refresh_worker=True))
        self.assertEqual(leat.run_once(3), {"v": 3})
        with self.assertRaisesRegex(TypeError, "refresh_worker is a bool"):
            leat.Result(1, refresh_worker="yes")
        self.assertEqual(repr(leat.Result(1, refresh_worker=True)), "Result(1, refresh_worker=True)")
        leat.task(lambda p: leat.Result(float("nan")))
        with self.assertRaisesRegex(leat.Fail, "not JSON"):
            leat.run_once(None)
        leat.set_concurrency(2)  # outside a worker: checked only
        for bad, exc in [(0, ValueError), (-1, ValueError), (2.0, TypeError), ("2", TypeError), (True, TypeError), (None, TypeError)]:
            with self.assertRaises(exc, msg=repr(bad)):
                leat.set_concurrency(bad)

    def test_no_handler(self):
        with self.assertRaisesRegex(RuntimeError, "no handler"):
            leat.run_once(None)


class ProtocolTest(unittest.TestCase):
    """run() in a child process, as leat worker --exec runs it."""

    def exchange(self, kind, lines, **env_vars):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, HERE]), PYTHONDONTWRITEBYTECODE="1", **env_vars)
        p = subprocess.run(
            [sys.executable, "-m", "sdk_handlers", kind],
            input="".join(line + "\n" for line in lines).encode(),
            capture_output=True,
            env=env,
            cwd=HERE,
            timeout=60,
        )
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        out = [json.loads(line) for line in p.stdout.decode().splitlines()]
        return out, p.stderr.decode()

    def test_requests_and_replies(self):
        out, err = self.exchange(
            "plain",
            [
                json.dumps({"task_id": "a", "payload": {"op": "echo"}, "attempt": None, "headers": None}),
                "",
                "not json",
                json.dumps(["not", "an", "object"]),
                json.dumps({"payload": {"op": "echo"}}),
                json.dumps({"task_id": "b", "payload": {"op": "echo"}, "attempt": 2, "headers": {"h": "v"}}),
                json.dumps({"task_id": "c", "payload": {"op": "fail"}, "attempt": 1}),
                json.dumps({"task_id": "d", "payload": {"op": "retry", "until": 5}, "attempt": 1}),
                json.dumps({"task_id": "e", "payload": {"op": "crash", "value": 7}, "attempt": 1}),
                json.dumps({"task_id": "f", "payload": {"op": "snooze", "mark": os.devnull}, "attempt": 1}),
                json.dumps({"task_id": "g", "payload": {"op": "print"}, "attempt": 1}),
                json.dumps({"task_id": "h", "payload": {"op": "nan"}, "attempt": 1}),
                json.dumps({"task_id": "i", "payload": {"op": "stdin"}, "attempt": 1}),
                json.dumps({"task_id": "j", "payload": {"op": "echo"}, "attempt": 1}),
            ],
        )
        self.assertEqual(
            out,
            [
                {"status": "ready"},
                {"task_id": "a", "result": {"payload": {"op": "echo"}, "attempt": 1, "headers": {}, "task_id": "a"}},
                {"task_id": "b", "result": {"payload": {"op": "echo"}, "attempt": 2, "headers": {"h": "v"}, "task_id": "b"}},
                {"task_id": "c", "error": "no such customer", "retry": False},
                {"task_id": "d", "error": "not yet: attempt 1", "retry": True},
                {"task_id": "e", "error": "ValueError: bad input 7", "retry": True},
                {"task_id": "f", "result": {"attempt": 1}},
                {"task_id": "g", "result": "printed"},
                {"task_id": "h", "error": "the result is not JSON: Out of range float values are not JSON compliant", "retry": False},
                {"task_id": "i", "result": {"read": "", "fd0": ""}},
                {"task_id": "j", "result": {"payload": {"op": "echo"}, "attempt": 1, "headers": {}, "task_id": "j"}},
            ],
        )
        self.assertIn("ignoring a request line that is not JSON", err)
        self.assertIn("ignoring a request without a task_id", err)
        self.assertIn("Traceback", err)  # of the unexpected ValueError
        self.assertIn("a stray print, which must not reach the protocol", err)
        self.assertIn('"result": "forged"', err)
        self.assertIn("written to file descriptor 1", err)
        self.assertIn("a line of the log of g", err)

    def test_refresh_worker_and_concurrency_lines(self):
        out, err = self.exchange(
            "plain",
            [
                json.dumps({"task_id": "a", "payload": {"op": "pid", "refresh": True}}),
                json.dumps({"task_id": "b", "payload": {"op": "pid"}}),
                json.dumps({"task_id": "c", "payload": {"op": "refresh_fail"}}),
                json.dumps({"task_id": "d", "payload": {"op": "concurrency", "n": 2}}),
                json.dumps({"task_id": "e", "payload": {"op": "concurrency", "n": 0}}),
            ],
            LOAD_CONCURRENCY="3",
        )
        pid = out[1]["result"]["pid"]
        self.assertEqual(
            out,
            [
                {"status": "ready", "concurrency": 3},
                {"task_id": "a", "result": {"pid": pid}, "refresh_worker": True},
                {"task_id": "b", "result": {"pid": pid}},
                {"task_id": "c", "error": "spent", "retry": False, "refresh_worker": True},
                {"concurrency": 2},
                {"task_id": "d", "result": "asked"},
                {"task_id": "e", "error": "ValueError: set_concurrency(0): want 1 or more", "retry": True},
            ],
        )
        self.assertIn("Traceback", err)

    def test_generator_lines_in_order(self):
        out, _ = self.exchange("gen", [json.dumps({"task_id": "a", "payload": {"n": 2}})])
        self.assertEqual(
            out,
            [
                {"status": "ready"},
                {"task_id": "a", "progress": {"done": 0, "of": 2}},
                {"task_id": "a", "partial": {"i": 0}},
                {"task_id": "a", "progress": {"done": 1, "of": 2}},
                {"task_id": "a", "partial": {"i": 1}},
                {"task_id": "a", "result": {"count": 2}},
            ],
        )

    def test_async_generator_aggregated(self):
        out, _ = self.exchange("agen", [json.dumps({"task_id": "a", "payload": {"xs": [2, 3]}})])
        self.assertEqual(
            out,
            [
                {"status": "ready"},
                {"task_id": "a", "partial": 4},
                {"task_id": "a", "partial": 9},
                {"task_id": "a", "result": [4, 9]},
            ],
        )


if __name__ == "__main__":
    unittest.main()
