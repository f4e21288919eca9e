"""A client of leat's HTTP API (`leat serve`), over urllib."""

import datetime
import http.client
import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

from ._errors import APIError, FlowFailed, TaskFailed, WaitTimeout, _api_error
from ._version import __version__

__all__ = ["Client", "Update", "FINAL_STATES"]

#: The states in which a task has ended.
FINAL_STATES = frozenset(("succeeded", "failed", "dead", "cancelled"))
FINAL_FLOW_STATES = frozenset(("succeeded", "failed", "cancelled"))

# The API's bounds on a send: records and bytes a request.
_MAX_RECORDS = 10000
_DEFAULT_MAX_BODY = 1 << 20

_OPTIONS = (
    "id",
    "delay",
    "at",
    "max_retries",
    "timeout",
    "retention",
    "unique",
    "unique_key",
    "priority",
    "key",
    "webhook",
    "headers",
)
_DURATIONS = ("delay", "timeout", "retention", "unique")


class Update:
    """One event of a task followed (Client.follow).

    kind is "progress", "partial" or "done"; data the value the handler
    reported (None for "done"); attempt the attempt that reported it; info
    the task's final status (a dict) for "done", else None."""

    __slots__ = ("kind", "data", "attempt", "info")

    def __init__(self, kind, data=None, attempt=None, info=None):
        self.kind = kind
        self.data = data
        self.attempt = attempt
        self.info = info

    def __repr__(self):
        return "Update(kind=%r, data=%r, attempt=%r)" % (self.kind, self.data, self.attempt)

    def __eq__(self, other):
        if not isinstance(other, Update):
            return NotImplemented
        return (self.kind, self.data, self.attempt, self.info) == (other.kind, other.data, other.attempt, other.info)


def duration(v):
    """A duration as the API takes it: a Go duration string ("90s",
    "1h30m", "500ms") passes as is; a number of seconds or a
    datetime.timedelta is converted."""
    if isinstance(v, str):
        return v
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("a duration is seconds, a timedelta or a string such as \"90s\", not %r" % (v,))
    if v < 0:
        raise ValueError("duration %r is negative" % (v,))
    if v == int(v):
        return "%ds" % int(v)
    return "%dus" % round(v * 1e6)


def timestamp(v):
    """A time as the API takes it (RFC 3339): a datetime (one without a
    time zone is taken as local time), a Unix time in seconds, or a string
    passed as is."""
    if isinstance(v, str):
        return v
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.astimezone()
        return v.isoformat()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("a time is a datetime, a Unix time or an RFC 3339 string, not %r" % (v,))
    return datetime.datetime.fromtimestamp(v, datetime.timezone.utc).isoformat()


def _body(payload, options):
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise TypeError("unknown enqueue option(s): %s (known: %s)" % (", ".join(sorted(unknown)), ", ".join(_OPTIONS)))
    body = {"payload": payload}
    for name in _OPTIONS:
        v = options.get(name)
        if v is None:
            continue
        if name in _DURATIONS:
            v = duration(v)
        elif name == "at":
            v = timestamp(v)
        elif name == "headers":
            v = _string_headers(v)
        body[name] = v
    return body


def _string_headers(v):
    """Returns headers v as a dict of strings: a name or value that is not a
    str is refused, never converted, as the API refuses it."""
    if not isinstance(v, dict):
        raise TypeError("headers must be a dict of strings, not %s" % type(v).__name__)
    for k, x in v.items():
        if not isinstance(k, str) or not isinstance(x, str):
            raise TypeError("header %r: %r: names and values must be strings" % (k, x))
    return dict(v)


# The timeout of a request that names none: the Client's.
_DEFAULT = object()


def _q(s):
    return urllib.parse.quote(s, safe="")


class Client:
    """A client of leat's HTTP API, as `leat serve` serves it.

        client = leat.Client("http://127.0.0.1:8080", token=os.environ.get("LEAT_SERVE_TOKEN"))
        id = client.enqueue("emails", {"to": "ada@example.com"}, max_retries=3)
        receipt = client.wait(id, timeout=60)

    url is the API's base URL; token, when the server requires one, is sent
    as "Authorization: Bearer TOKEN"; timeout (seconds, None for no
    bound) bounds each request, besides the waits that say otherwise;
    max_body is the server's limit on a request's body (leat serve
    --max-body), which send_many keeps its requests under. Error answers raise
    APIError (NotFound, Conflict...) with the API's code and HTTP status;
    a server that cannot be reached raises urllib's URLError (an OSError).
    A Client holds no connection between calls and may be shared by
    threads."""

    def __init__(self, url="http://127.0.0.1:8080", token=None, timeout=30.0, max_body=_DEFAULT_MAX_BODY):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_body = max_body

    def __repr__(self):
        return "Client(%r)" % self.url

    # Transport.

    def _open(self, method, path, body=None, query=None, timeout=_DEFAULT, accept="application/json"):
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None
        headers = {"Accept": accept, "User-Agent": "leat-python/" + __version__}
        if body is not None:
            text = body if isinstance(body, _Raw) else json.dumps(body, separators=(",", ":"), allow_nan=False)
            data = text.encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout if timeout is _DEFAULT else timeout)
        except urllib.error.HTTPError as e:
            with e:
                raw = e.read()
            try:
                decoded = json.loads(raw)
            except ValueError:
                decoded = None
            raise _api_error(e.code, decoded) from None

    def _call(self, method, path, body=None, query=None, timeout=_DEFAULT):
        with self._open(method, path, body, query, timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw.strip() else None

    def _task_path(self, task_id, queue, suffix=""):
        if queue is None:
            return "/v1/tasks/%s%s" % (_q(task_id), suffix)
        return "/v1/queues/%s/tasks/%s%s" % (_q(queue), _q(task_id), suffix)

    # Tasks.

    def enqueue(self, queue, payload=None, **options):
        """Enqueues a task on queue with payload (any JSON value) and
        returns its ID.

        Options, as the API's enqueue takes them (None leaves one out):
        id (a task ID of your own), delay and at (run later: a duration, or
        a datetime / Unix time / RFC 3339 string), max_retries, timeout (per
        attempt), retention (of the ended task), unique (a TTL: refuse a
        duplicate payload for that long) and unique_key (with unique: the
        uniqueness key instead of the payload), priority (a level of the
        queue), key (keyed queues), webhook (a URL POSTed the outcome) and
        headers (a dict of strings). Durations are seconds, timedeltas or Go
        duration strings ("90s").

        A duplicate (id or unique) raises Conflict, whose id is the
        existing task's; an unknown queue raises NotFound ("unknown_queue")."""
        return self._call("POST", "/v1/queues/%s/tasks" % _q(queue), _body(payload, options))["id"]

    def enqueue_many(self, queue, payloads, **options):
        """Enqueues a task for each payload, with the same options, and
        returns their IDs in order (one request each). The id option, which
        names one task, is refused."""
        if "id" in options:
            raise TypeError("enqueue_many takes no id option: call enqueue for each task")
        return [self.enqueue(queue, p, **options) for p in payloads]

    def get(self, task_id, queue=None):
        """The status of a task: a dict with id, queue, state, attempts,
        result, progress, error, worker, enqueued_at... (see the API's
        Info). Without queue the API finds the queue holding the task.
        Raises NotFound ("unknown_task") for an unknown task."""
        return self._call("GET", self._task_path(task_id, queue))

    def wait(self, task_id, timeout=None, queue=None, poll=0.5):
        """Waits for a task to end and returns its result (its JSON
        decoded); raises TaskFailed when it failed, died or was cancelled,
        and WaitTimeout when timeout seconds (None: no bound) pass first.

        It polls the task's status, at 20 ms at first, less often as the
        wait goes on, up to every poll seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.02
        while True:
            info = self.get(task_id, queue)
            if info.get("state") in FINAL_STATES:
                return _outcome(info)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WaitTimeout(task_id, "task %s did not end within %ss: it is %s" % (task_id, timeout, info.get("state")), info)
                pause = min(pause, left)
            time.sleep(pause)
            pause = min(pause * 2, poll)

    def follow(self, task_id, queue=None, timeout=None):
        """Iterates over a task's updates as they come, over the API's
        server-sent events: an Update for each progress and partial result,
        in the order the handler reported them (those recorded already
        first), then one "done" Update whose info is the task's final
        status, and the iteration ends.

        timeout bounds, in seconds, the wait for each event (None: no
        bound; socket.timeout is raised when it passes). A failure of the
        server while following raises APIError ("follow_failed")."""
        resp = self._open("GET", self._task_path(task_id, queue, "/events"), timeout=timeout, accept="text/event-stream")
        with resp:
            for event, data in _sse(resp):
                if event == "error":
                    body = json.loads(data) if data else {}
                    raise APIError(200, body.get("code", "follow_failed"), body.get("error", "following failed"), body)
                if event not in ("progress", "partial", "done"):
                    continue
                u = json.loads(data)
                yield Update(u.get("kind", event), u.get("data"), u.get("attempt"), u.get("info"))
                if event == "done":
                    return

    def watch_queue(self, queue, since="$", timeout=None, reconnect=True):
        """Iterates over every state change of a queue's tasks, over the
        API's server-sent events (GET /v1/queues/{queue}/events): a dict
        per event, {"id", "time", "task", "state", "prev", "attempt",
        "error"} ("prev" and "error" only when there is one), in the order
        they happened. The queue's events must be on (leat tasks events
        QUEUE on); never a payload or a result.

        since is where to start: "$" (new events only), "0" (the whole
        history the queue keeps) or an event's "id" (the events after it).
        The iteration goes on until the caller stops; when the connection
        breaks it resumes after the last event yielded (reconnect=False
        raises instead). timeout bounds, in seconds, the wait for each line
        (None: no bound; the server sends a comment every 15 seconds). A
        failure of the server while following raises APIError
        ("follow_failed")."""
        last = str(since)
        failures = 0
        while True:
            try:
                resp = self._open(
                    "GET",
                    "/v1/queues/%s/events" % _q(queue),
                    query={"since": last},
                    timeout=timeout,
                    accept="text/event-stream",
                )
            except socket.timeout:
                raise
            except OSError:
                failures += 1
                if not reconnect or failures > 5:
                    raise
                time.sleep(min(0.2 * 2**failures, 5.0))
                continue
            try:
                with resp:
                    for event, data, event_id in _sse(resp, ids=True):
                        if event == "error":
                            body = json.loads(data) if data else {}
                            raise APIError(200, body.get("code", "follow_failed"), body.get("error", "following failed"), body)
                        if event != "task":
                            continue
                        ev = json.loads(data)
                        last = event_id or ev.get("id", last)
                        failures = 0
                        yield ev
            except socket.timeout:
                raise
            except (OSError, http.client.HTTPException):
                if not reconnect:
                    raise
            failures += 1
            if not reconnect or failures > 5:
                return
            time.sleep(min(0.2 * 2**failures, 5.0))

    def run_sync(self, queue, payload=None, timeout=30, **options):
        """Enqueues a task and waits for it on the server (the API's
        runsync): returns its result; raises TaskFailed when it failed, died
        or was cancelled, and WaitTimeout (its id names the task, which goes
        on) when timeout seconds pass first. timeout is at most the
        server's longest wait (5 minutes by default: 400 beyond). Options
        are enqueue's."""
        path = "/v1/queues/%s/runsync" % _q(queue)
        try:
            wait = _seconds(timeout)
        except ValueError:
            wait = 0  # the server answers 400 bad_timeout at once
        try:
            out = self._call("POST", path, _body(payload, options), {"timeout": duration(timeout)}, timeout=None if self.timeout is None else self.timeout + wait)
        except APIError as e:
            if e.status == 504 and e.code == "timeout":
                raise WaitTimeout(e.body.get("id"), e.message, e.body.get("task")) from None
            if e.status == 422 and isinstance(e.body.get("task"), dict):
                raise TaskFailed(e.body["task"]) from None
            raise
        return out.get("result")

    def cancel(self, task_id, queue=None):
        """Cancels a task: a waiting one at once, a running one has its
        handler stopped. Returns the state it was in; raises Conflict
        ("wrong_state") when it has ended already."""
        return self._call("POST", self._task_path(task_id, queue, "/cancel"))["state_before"]

    def requeue(self, task_id, queue=None):
        """Makes a dead or failed task ready again; raises Conflict
        ("wrong_state") for a task in another state."""
        self._call("POST", self._task_path(task_id, queue, "/requeue"))

    def delete(self, task_id, queue=None):
        """Deletes an ended task and returns the state it was in; raises
        Conflict ("wrong_state") for one that has not ended."""
        return self._call("DELETE", self._task_path(task_id, queue))["state_before"]

    # Flows.

    def submit_flow(self, nodes, flow_id=None, retention=None):
        """Submits a flow, a graph of tasks across queues, whole or not at
        all, and returns its ID. nodes maps node names to {"queue",
        "payload", "parents" (names), "on_failure" ("fail", "ignore" or
        "continue"), "options" ({"max_retries", "timeout", "priority", "key",
        "headers", ...})}. A bad flow raises BadRequest ("bad_flow") naming
        every mistake, and nothing is written. flow_id makes the submission
        idempotent; retention (seconds, a timedelta or "24h") keeps the
        flow's record that long once it ended."""
        body = {"nodes": nodes}
        if flow_id is not None:
            body["id"] = flow_id
        if retention is not None:
            body["retention"] = duration(retention)
        return self._call("POST", "/v1/flows", body)["id"]

    def run_flow(self, nodes, flow_id=None, retention=None, timeout=30):
        """Submits a flow (as submit_flow) and waits for it on the server
        (the API's POST /v1/flows/runsync): returns its status once it
        succeeded (get_flow's, with "results", its sinks' results by node
        name). Raises FlowFailed when it failed or was cancelled, and
        WaitTimeout (its id names the flow, which goes on) when timeout
        seconds pass first. timeout is at most the server's longest wait (5
        minutes by default: 400 beyond)."""
        body = {"nodes": nodes}
        if flow_id is not None:
            body["id"] = flow_id
        if retention is not None:
            body["retention"] = duration(retention)
        try:
            wait = _seconds(timeout)
        except ValueError:
            wait = 0  # the server answers 400 bad_timeout at once
        try:
            out = self._call("POST", "/v1/flows/runsync", body, {"timeout": duration(timeout)},
                             timeout=None if self.timeout is None else self.timeout + wait)
        except APIError as e:
            if e.status == 504 and e.code == "timeout":
                raise WaitTimeout(e.body.get("id"), e.message, e.body.get("flow")) from None
            if e.status == 422 and isinstance(e.body.get("flow"), dict):
                raise FlowFailed(e.body["flow"]) from None
            raise
        return out["flow"]

    def get_flow(self, flow_id):
        """Returns a flow's status: its state, each node's ("nodes": name,
        queue, task_id, state, parents, result, error) and the results of
        its sinks ("results", by node name)."""
        return self._call("GET", "/v1/flows/%s" % _q(flow_id))

    def wait_flow(self, flow_id, timeout=None):
        """Waits for a flow to end and returns its status (get_flow's);
        raises WaitTimeout when timeout seconds (None: no bound) pass first.
        The server holds each request up to 25 seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = 25.0
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0.001))
            info = self._call("GET", "/v1/flows/%s" % _q(flow_id), query={"wait": duration(round(wait, 3))}, timeout=wait + 35)
            if info.get("state") in FINAL_FLOW_STATES:
                return info
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(flow_id, "flow %s did not end within %ss: it is %s" % (flow_id, timeout, info.get("state")), info)

    def cancel_flow(self, flow_id):
        """Cancels a running flow and returns its status; raises Conflict
        ("wrong_state") when it has ended."""
        return self._call("POST", "/v1/flows/%s/cancel" % _q(flow_id))

    def list_flows(self, state=None, limit=None):
        """Returns the app's flows, newest first: state one state
        ("running", "succeeded", "failed", "cancelled"), limit at most this
        many (default 100)."""
        query = {}
        if state is not None:
            query["state"] = state
        if limit is not None:
            query["limit"] = str(limit)
        return self._call("GET", "/v1/flows", query=query)["flows"]

    # Streams.

    def send(self, stream, record):
        """Sends one record (any JSON value, routed by the stream's key
        field) to a stream and returns its entry ID."""
        return self._send(stream, [record])[0]

    def send_many(self, stream, records):
        """Sends records to a stream and returns their entry IDs in order;
        records go in requests of at most 10,000 records and max_body bytes
        (a record that alone is over max_body raises TooLarge)."""
        ids = []
        batch, size = [], 2
        for rec in records:
            enc = json.dumps(rec, separators=(",", ":"), allow_nan=False)
            n = len(enc.encode("utf-8")) + 1
            if batch and (len(batch) >= _MAX_RECORDS or size + n > self.max_body):
                ids.extend(self._send_raw(stream, batch))
                batch, size = [], 2
            batch.append(enc)
            size += n
        if batch:
            ids.extend(self._send_raw(stream, batch))
        return ids

    def _send(self, stream, records):
        return self._send_raw(stream, [json.dumps(r, separators=(",", ":"), allow_nan=False) for r in records])

    def _send_raw(self, stream, encoded):
        path = "/v1/streams/%s/events" % _q(stream)
        # The records are sent as an array, even one, so that a record that
        # is itself an array stays one record.
        return self._call("POST", path, _Raw("[" + ",".join(encoded) + "]"))["ids"]

    def stream(self, stream):
        """What the API reports of a stream (leat inspect stream): its
        length, partitions, processors and their lag, warnings."""
        return self._call("GET", "/v1/streams/%s" % _q(stream))

    # The server.

    def info(self):
        """What GET /v1/info says of the server: the app, leat's version."""
        return self._call("GET", "/v1/info")


class _Raw(str):
    """JSON text already encoded, sent as is."""


def _seconds(v):
    if isinstance(v, datetime.timedelta):
        return v.total_seconds()
    if isinstance(v, str):
        return _parse_go_duration(v)
    return float(v)


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _parse_go_duration(s):
    """Seconds of a Go duration string ("1m30s"); ValueError otherwise."""
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)", s)
    if not parts or "".join(n + u for n, u in parts) != s.lstrip("+"):
        raise ValueError("%r is not a duration such as \"90s\" or \"1m30s\"" % s)
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _outcome(info):
    if info.get("state") == "succeeded":
        return info.get("result")
    raise TaskFailed(info)


def _sse(resp, ids=False):
    """The (event, data) pairs of a text/event-stream response; with ids,
    (event, data, id) triples."""
    event, data, event_id = None, [], None
    for raw in resp:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data or event:
                if ids:
                    yield event or "message", "\n".join(data), event_id
                else:
                    yield event or "message", "\n".join(data)
            event, data, event_id = None, [], None
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            event = value
        elif field == "id":
            event_id = value
        elif field == "data":
            data.append(value)
