# A handler process for the tests of task.Exec, speaking the protocol by
# hand. The payload's "op" picks a behaviour.
import json
import os
import sys
import time

starts = os.environ.get("STARTS_FILE")
if starts:
    with open(starts, "a") as f:
        f.write("x")
    with open(starts) as f:
        n = len(f.read())
    if n < int(os.environ.get("READY_AT", "1")):
        time.sleep(3600)  # never ready
    if n > int(os.environ.get("EXIT_AFTER", n)):
        print("failing start %d" % n, file=sys.stderr)
        sys.exit(1)  # every start after the first EXIT_AFTER fails


def out(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


out({"status": "ready"})
for line in sys.stdin:
    req = json.loads(line)
    tid, p, attempt = req["task_id"], req["payload"], req["attempt"]
    op = p.get("op")
    print("running " + op, file=sys.stderr, flush=True)
    if op == "die" and attempt == 1:
        os._exit(3)
    if op == "grandchild" and attempt == 1:
        import subprocess
        g = subprocess.Popen(["sleep", "3600"])
        out({"task_id": tid, "progress": {"pid": os.getpid(), "grandchild": g.pid}})
        time.sleep(3600)
    if op == "hang" and attempt == 1:
        time.sleep(3600)
    if op == "garbage":
        sys.stdout.write("this is not json\n")
        out({"task_id": "nobody", "result": 1})
        sys.stdout.flush()
    if op == "huge":
        sys.stdout.write('{"task_id":"%s","result":"%s"}\n' % (tid, "x" * p["n"]))
        sys.stdout.flush()
        continue
    if op == "after":
        out({"task_id": tid, "result": {"op": op}})
        time.sleep(0.2)
        print("after the result", file=sys.stderr, flush=True)
        continue
    if op == "lossy":  # a progress report and a result of a lone surrogate
        out({"task_id": tid, "progress": "\ud800"})
        out({"task_id": tid, "result": "a\udc00"})
        continue
    if op == "headers":  # the request's headers, absent when none
        out({"task_id": tid, "result": {"has": "headers" in req, "headers": req.get("headers")}})
        continue
    if op == "snooze" and not os.path.exists(p["path"]):  # once: the file says it snoozed
        open(p["path"], "w").close()
        out({"task_id": tid, "snooze": p["n"] / 1000})
        continue
    if op == "badsnooze" and attempt == 1:
        out({"task_id": tid, "snooze": -1})
        continue
    if op == "nulls":  # every field of the protocol given as null: absent
        out({"task_id": tid, "result": {"op": op}, "progress": None, "partial": None, "error": None, "snooze": None, "retry": None})
        continue
    if op == "spam":  # n stderr lines as fast as it can
        sys.stderr.write("".join("line %d\n" % i for i in range(p["n"])))
        sys.stderr.flush()
    if op == "fail":
        out({"task_id": tid, "error": "no way", "retry": False})
        continue
    if op == "updates":
        for i in range(p["n"]):
            out({"task_id": tid, "progress": {"i": i}})
            out({"task_id": tid, "partial": i})
    if "conc" in p:  # a concurrency line first, as given (hostile values too)
        out({"concurrency": p["conc"]})
    if op == "inflight":  # how many tasks of the worker run at once, seen through a directory
        mark = os.path.join(p["dir"], "%d" % os.getpid())
        open(mark, "w").close()
        n = len(os.listdir(p["dir"]))
        time.sleep(p["n"] / 1000)
        os.remove(mark)
        out({"task_id": tid, "result": {"op": op, "attempt": attempt, "pid": os.getpid(), "inflight": n}})
        continue
    res = {"task_id": tid, "result": {"op": op, "attempt": attempt, "pid": os.getpid()}}
    if "refresh" in p:  # as given (hostile values too)
        res["refresh_worker"] = p["refresh"]
    out(res)
