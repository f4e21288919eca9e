"""Tests of the client against a real `leat serve`, with real workers
running sdk_handlers.py: sdk_test.go starts them and names the API in
LEAT_API_URL, and a directory for marks in LEAT_TEST_DIR.

Queues (app "sdk"): plain (sdk_handlers plain; 2 retries, 4 at a time), gen
(a generator), async (an async def) and agen (an async generator,
aggregated); stream events, keyed by field "user".
"""

import datetime
import os
import unittest
import uuid

import leat

URL = os.environ.get("LEAT_API_URL")


@unittest.skipUnless(URL, "LEAT_API_URL names no leat serve (sdk_test.go sets it)")
class ClientTest(unittest.TestCase):
    def setUp(self):
        self.client = leat.Client(URL, timeout=30)

    def mark(self):
        return os.path.join(os.environ["LEAT_TEST_DIR"], uuid.uuid4().hex)

    def test_enqueue_100_and_wait_for_all(self):
        ids = self.client.enqueue_many("plain", [{"op": "echo", "i": i} for i in range(100)])
        self.assertEqual(len(set(ids)), 100)
        for i, task_id in enumerate(ids):
            got = self.client.wait(task_id, timeout=120)
            self.assertEqual(got["payload"], {"op": "echo", "i": i})
            self.assertEqual(got["task_id"], task_id)
        info = self.client.get(ids[0])
        self.assertEqual((info["state"], info["queue"], info["attempts"]), ("succeeded", "plain", 1))

    def test_enqueue_options(self):
        task_id = "opts-" + uuid.uuid4().hex
        got = self.client.enqueue(
            "plain",
            {"op": "echo"},
            id=task_id,
            delay=datetime.timedelta(milliseconds=300),
            max_retries=0,
            timeout=90,
            retention="2h",
            headers={"tenant": "t1", "n": "7"},
        )
        self.assertEqual(got, task_id)
        info = self.client.get(task_id, queue="plain")
        self.assertEqual(info["state"], "scheduled")
        self.assertEqual(info["max_retries"], 0)
        self.assertEqual(info["timeout"], "1m30s")  # durations are answered as Go writes them
        self.assertEqual(info["retention"], "2h0m0s")
        with self.assertRaises(TypeError):
            self.client.enqueue("plain", {"op": "echo"}, headers={"n": 7})  # refused, not sent as "7"
        result = self.client.wait(task_id, timeout=60)
        self.assertEqual(result["headers"], {"tenant": "t1", "n": "7"})
        with self.assertRaises(leat.Conflict) as cm:
            self.client.enqueue("plain", {"op": "echo"}, id=task_id)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.id), (409, "duplicate", task_id))

        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=0.3)
        later = self.client.enqueue("plain", {"op": "echo"}, at=at)
        self.assertEqual(self.client.get(later)["state"], "scheduled")
        self.assertEqual(self.client.wait(later, timeout=60)["payload"], {"op": "echo"})

        # A unique task's lock lasts while it waits (and at most its TTL).
        key = uuid.uuid4().hex
        first = self.client.enqueue("plain", {"op": "echo", "k": 1}, unique=60, unique_key=key, delay=60)
        with self.assertRaises(leat.Conflict) as cm:
            self.client.enqueue("plain", {"op": "echo", "k": 2}, unique=60, unique_key=key)
        self.assertEqual(cm.exception.id, first)
        self.assertEqual(self.client.cancel(first), "scheduled")
        with self.assertRaises(TypeError):
            self.client.enqueue("plain", None, nope=1)

    def test_follow_generator_in_order(self):
        task_id = self.client.enqueue("gen", {"n": 20, "pause": 0.01})
        updates = list(self.client.follow(task_id, timeout=60))
        partials = [u.data for u in updates if u.kind == "partial"]
        progress = [u.data for u in updates if u.kind == "progress"]
        self.assertEqual(partials, [{"i": i} for i in range(20)])
        self.assertEqual(progress, [{"done": i, "of": 20} for i in range(20)])
        self.assertEqual([u.kind for u in updates[:2]], ["progress", "partial"])
        done = updates[-1]
        self.assertEqual(done.kind, "done")
        self.assertEqual(done.info["state"], "succeeded")
        self.assertEqual(done.info["result"], {"count": 20})
        self.assertTrue(all(u.attempt == 1 for u in updates[:-1]))
        # Following an ended task replays its updates.
        self.assertEqual([u.data for u in self.client.follow(task_id, queue="gen") if u.kind == "partial"], partials)

    def test_follow_sees_partial_results_while_the_task_runs(self):
        gate = self.mark()
        task_id = self.client.enqueue("gen", {"n": 3, "gate": gate})
        seen = []
        for u in self.client.follow(task_id, timeout=60):
            seen.append((u.kind, u.data))
            if u.kind == "partial" and u.data == {"i": 0}:
                self.assertEqual(self.client.get(task_id)["state"], "active")
                open(gate, "w").close()
        self.assertEqual([d for k, d in seen if k == "partial"], [{"i": 0}, {"i": 1}, {"i": 2}])
        self.assertEqual(seen[-1][0], "done")
        self.assertEqual(self.client.get(task_id)["result"], {"count": 3})

    def test_async_handlers(self):
        self.assertEqual(self.client.wait(self.client.enqueue("async", {"xs": [1, 2, 3]}), timeout=60), {"squares": [1, 4, 9], "attempt": 1})
        task_id = self.client.enqueue("agen", {"xs": [2, 3, 4]})
        updates = list(self.client.follow(task_id, timeout=60))
        self.assertEqual([u.data for u in updates if u.kind == "partial"], [4, 9, 16])
        self.assertEqual(updates[-1].info["result"], [4, 9, 16])
        self.assertEqual(self.client.wait(task_id), [4, 9, 16])

    def test_refresh_worker_replaces_the_process(self):
        # The worker records the result once the process exited: it is
        # gone when the result can be read. One that did not ask lives on.
        for _ in range(3):
            pid = self.client.wait(self.client.enqueue("plain", {"op": "pid", "refresh": True}), timeout=60)["pid"]
            with self.assertRaises(ProcessLookupError):
                os.kill(pid, 0)
        pid = self.client.wait(self.client.enqueue("plain", {"op": "pid"}), timeout=60)["pid"]
        os.kill(pid, 0)

    def test_outcomes_through_get(self):
        c = self.client
        failed = c.enqueue("plain", {"op": "fail"})
        with self.assertRaises(leat.TaskFailed) as cm:
            c.wait(failed, timeout=60)
        self.assertEqual((cm.exception.state, cm.exception.id), ("failed", failed))
        self.assertTrue(cm.exception.error.endswith("no such customer"), cm.exception.error)
        info = c.get(failed)
        self.assertEqual((info["state"], info["attempts"], info["error"]), ("failed", 1, cm.exception.error))

        retried = c.enqueue("plain", {"op": "retry", "until": 2})
        self.assertEqual(c.wait(retried, timeout=60), {"attempt": 2})
        self.assertEqual(c.get(retried)["attempts"], 2)

        dead = c.enqueue("plain", {"op": "retry", "until": 99})
        with self.assertRaises(leat.TaskFailed) as cm:
            c.wait(dead, timeout=60)
        info = c.get(dead)
        self.assertEqual((cm.exception.state, info["state"], info["attempts"]), ("dead", "dead", 3))
        self.assertTrue(info["error"].endswith("not yet: attempt 3"), info["error"])

        crashed = c.enqueue("plain", {"op": "crash", "value": 1}, max_retries=0)
        with self.assertRaises(leat.TaskFailed):
            c.wait(crashed, timeout=60)
        self.assertTrue(c.get(crashed)["error"].endswith("ValueError: bad input 1"))

        snoozed = c.enqueue("plain", {"op": "snooze", "mark": self.mark()}, max_retries=0)
        # The second run still sees attempt 1: a snooze does not count.
        self.assertEqual(c.wait(snoozed, timeout=60), {"attempt": 1})
        self.assertEqual(c.get(snoozed)["state"], "succeeded")

        # What the handler printed and logged is in the task's log, which
        # sdk_test.go reads once the suite passed.
        printed = c.enqueue("plain", {"op": "print"})
        self.assertEqual(c.wait(printed, timeout=60), "printed")
        with open(os.path.join(os.environ["LEAT_TEST_DIR"], "printed-task"), "w") as f:
            f.write(printed)

    def test_errors_carry_codes(self):
        c = self.client
        with self.assertRaises(leat.NotFound) as cm:
            c.enqueue("no-such-queue", {})
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "unknown_queue"))
        self.assertIsInstance(cm.exception, leat.APIError)
        with self.assertRaises(leat.NotFound) as cm:
            c.get("no-such-task")
        self.assertEqual(cm.exception.code, "unknown_task")
        with self.assertRaises(leat.NotFound) as cm:
            c.send("no-such-stream", {"user": "u"})
        self.assertEqual(cm.exception.code, "unknown_stream")
        with self.assertRaises(leat.BadRequest) as cm:
            c.enqueue("plain", {}, unique_key="k")
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "bad_task"))
        with self.assertRaises(leat.BadRequest) as cm:
            c.run_sync("plain", {}, timeout="forever")
        self.assertEqual(cm.exception.code, "bad_timeout")
        done = c.enqueue("plain", {"op": "echo"})
        c.wait(done, timeout=60)
        with self.assertRaises(leat.Conflict) as cm:
            c.cancel(done)
        self.assertEqual(cm.exception.code, "wrong_state")
        self.assertEqual(c.delete(done), "succeeded")
        with self.assertRaises(leat.NotFound):
            c.get(done)
        with self.assertRaises(OSError):
            leat.Client("http://127.0.0.1:1", timeout=5).get("x")

    def test_run_sync_cancel_and_wait_timeout(self):
        c = self.client
        self.assertEqual(c.run_sync("plain", {"op": "echo", "n": 1}, timeout=60)["payload"], {"op": "echo", "n": 1})
        with self.assertRaises(leat.TaskFailed) as cm:
            c.run_sync("plain", {"op": "fail"}, timeout=60)
        self.assertEqual((cm.exception.state, cm.exception.info["queue"]), ("failed", "plain"))
        with self.assertRaises(leat.WaitTimeout) as cm:
            c.run_sync("plain", {"op": "sleep", "seconds": 30}, timeout=0.5)
        slow = cm.exception.id
        self.assertTrue(slow)
        with self.assertRaises(leat.WaitTimeout):
            c.wait(slow, timeout=0.3)
        self.assertIn(c.cancel(slow), ("pending", "active"))
        with self.assertRaises(leat.TaskFailed) as cm:
            c.wait(slow, timeout=60)
        self.assertEqual(cm.exception.state, "cancelled")

    def test_flows(self):
        c = self.client
        with self.assertRaises(leat.BadRequest) as cm:
            c.submit_flow({"a": {"queue": "plain", "parents": ["missing"]}})
        self.assertEqual(cm.exception.code, "bad_flow")
        flow_id = c.submit_flow({
            "a": {"queue": "plain", "payload": {"op": "echo", "n": "a"}},
            "b": {"queue": "plain", "payload": {"op": "echo", "n": "b"}, "parents": ["a"]},
            "c": {"queue": "plain", "payload": {"op": "echo", "n": "c"}, "parents": ["a"]},
            "d": {"queue": "plain", "payload": {"op": "parents"}, "parents": ["b", "c"]},
        })
        info = c.wait_flow(flow_id, timeout=120)
        self.assertEqual(info["state"], "succeeded")
        d = info["results"]["d"]
        self.assertEqual((d["b"]["payload"]["n"], d["c"]["payload"]["n"]), ("b", "c"))
        self.assertIn(flow_id, [f["id"] for f in c.list_flows(state="succeeded")])
        with self.assertRaises(leat.Conflict):
            c.cancel_flow(flow_id)
        slow = c.submit_flow({"s": {"queue": "plain", "payload": {"op": "sleep", "seconds": 30}}, "t": {"queue": "plain", "parents": ["s"]}})
        with self.assertRaises(leat.WaitTimeout):
            c.wait_flow(slow, timeout=0.5)
        self.assertEqual(c.cancel_flow(slow)["state"], "cancelled")

    def test_run_flow(self):
        c = self.client
        info = c.run_flow({
            "a": {"queue": "plain", "payload": {"op": "echo", "n": "a"}},
            "b": {"queue": "plain", "payload": {"op": "echo", "n": "b"}, "parents": ["a"]},
            "c": {"queue": "plain", "payload": {"op": "echo", "n": "c"}, "parents": ["a"]},
            "d": {"queue": "plain", "payload": {"op": "parents"}, "parents": ["b", "c"]},
        }, timeout=120)
        self.assertEqual(info["state"], "succeeded")
        self.assertEqual([n["state"] for n in info["nodes"]], ["succeeded"] * 4)
        d = info["results"]["d"]
        self.assertEqual((d["b"]["payload"]["n"], d["c"]["payload"]["n"]), ("b", "c"))
        with self.assertRaises(leat.FlowFailed) as cm:
            c.run_flow({"x": {"queue": "plain", "payload": {"op": "fail"}}, "y": {"queue": "plain", "parents": ["x"]}}, timeout=120)
        self.assertEqual((cm.exception.state, cm.exception.failed_by), ("failed", "x"))
        self.assertEqual({n["name"]: n["state"] for n in cm.exception.info["nodes"]}, {"x": "failed", "y": "cancelled"})
        with self.assertRaises(leat.WaitTimeout) as cm:
            c.run_flow({"s": {"queue": "plain", "payload": {"op": "sleep", "seconds": 30}}}, timeout=0.5)
        slow = cm.exception.id
        self.assertEqual(cm.exception.info["state"], "running")
        self.assertEqual(c.get_flow(slow)["state"], "running")
        self.assertEqual(c.cancel_flow(slow)["state"], "cancelled")
        with self.assertRaises(leat.Conflict) as cm:
            c.run_flow({"a": {"queue": "plain"}}, flow_id=info["id"])
        self.assertEqual((cm.exception.code, cm.exception.id), ("duplicate", info["id"]))
        with self.assertRaises(leat.BadRequest) as cm:
            c.run_flow({"a": {"queue": "plain"}}, timeout=3600)
        self.assertEqual(cm.exception.code, "bad_timeout")

    def test_send_to_stream(self):
        c = self.client
        before = c.stream("events")["length"]
        one = c.send("events", {"user": "ada", "n": 0})
        self.assertRegex(one, r"^\d+-\d+$")
        small = leat.Client(URL, max_body=4096)  # many requests
        records = [{"user": "u%d" % (i % 7), "n": i} for i in range(2500)]
        ids = small.send_many("events", records)
        self.assertEqual(len(ids), 2500)
        self.assertEqual(c.stream("events")["length"], before + 2501)
        with self.assertRaises(leat.BadRequest) as cm:
            c.send("events", {"n": 1})  # no key field
        self.assertEqual(cm.exception.code, "bad_record")


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(URL, "LEAT_API_URL names no leat serve (sdk_test.go sets it)")
class WatchQueueTest(unittest.TestCase):
    """Queue "plain" has its events on (sdk_test.go)."""

    def setUp(self):
        self.client = leat.Client(URL, timeout=30)

    def events_of(self, task_id, since, n):
        got = []
        for ev in self.client.watch_queue("plain", since=since, timeout=30):
            if ev["task"] == task_id:
                got.append(ev)
                if len(got) == n:
                    return got
        return got

    def test_watch_queue_history_and_resume(self):
        task_id = self.client.enqueue("plain", {"op": "echo"})
        self.client.wait(task_id, timeout=60)
        got = self.events_of(task_id, "0", 3)
        self.assertEqual(
            [(e.get("prev", ""), e["state"]) for e in got],
            [("", "pending"), ("pending", "active"), ("active", "succeeded")],
        )
        self.assertEqual(got[1]["attempt"], 1)
        self.assertNotIn("payload", got[2])
        self.assertNotIn("result", got[2])
        # Resuming after the first event: the next two, none missed.
        again = self.events_of(task_id, got[0]["id"], 2)
        self.assertEqual([e["id"] for e in again], [got[1]["id"], got[2]["id"]])

    def test_watch_queue_bad_position(self):
        with self.assertRaises(leat.APIError) as cm:
            next(self.client.watch_queue("plain", since="soon"))
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "bad_position"))
