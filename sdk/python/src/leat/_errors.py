"""Exceptions of the leat SDK."""

__all__ = [
    "Retry",
    "Fail",
    "Snooze",
    "APIError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "TooLarge",
    "ServerError",
    "TaskFailed",
    "WaitTimeout",
]


# Raised by task handlers.


class Retry(Exception):
    """Raised by a handler: the attempt failed and the task is tried again,
    after the queue's backoff, while it has retries left (then it is dead).

    Any other exception a handler raises is retried the same way; Retry says
    so on purpose and keeps its traceback out of the task's log."""


class Fail(Exception):
    """Raised by a handler: the task fails for good (state "failed"), with
    no more retries."""


class Snooze(Exception):
    """Raised by a handler: run the task again after `seconds` (a number,
    0 to a year), the attempt not counted against its retries."""

    def __init__(self, seconds):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise TypeError("Snooze takes a number of seconds, not %r" % (seconds,))
        if not 0 <= seconds <= 366 * 24 * 3600:
            raise ValueError("Snooze(%r): want 0 to 366 days in seconds" % (seconds,))
        super().__init__("snoozed for %s s" % seconds)
        self.seconds = seconds


# Raised by the HTTP client.


class APIError(Exception):
    """An error answer of the HTTP API.

    status is the HTTP status, code the API's error code ("unknown_queue",
    "bad_task", "duplicate"...), message its text and body the whole JSON
    answer (a dict; {} when the answer was not JSON)."""

    def __init__(self, status, code, message, body=None):
        super().__init__("%s (HTTP %d, %s)" % (message, status, code))
        self.status = status
        self.code = code
        self.message = message
        self.body = body if body is not None else {}


class BadRequest(APIError):
    """400: a request the API refuses (bad JSON, an invalid option...)."""


class Unauthorized(APIError):
    """401: a missing or wrong token."""


class Forbidden(APIError):
    """403: refused (a read-only API, a foreign Host or origin)."""


class NotFound(APIError):
    """404: no such queue ("unknown_queue"), task ("unknown_task"), stream
    ("unknown_stream") or endpoint."""


class Conflict(APIError):
    """409: a duplicate task ("duplicate": id is the existing task's ID), or
    a task in the wrong state for the operation ("wrong_state")."""

    @property
    def id(self):
        """The existing task's ID of a duplicate; None otherwise."""
        return self.body.get("id")


class TooLarge(APIError):
    """413: a body over the server's limit, or too many records."""


class ServerError(APIError):
    """5xx: the server or Redis failed (the server logs the details)."""


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict, 413: TooLarge}


def _api_error(status, body):
    """The exception of an error answer; body is its decoded JSON or None."""
    if not isinstance(body, dict):
        body = {}
    code = body.get("code") or "http_%d" % status
    message = body.get("error") or "HTTP status %d" % status
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    return cls(status, code, message, body)


class TaskFailed(Exception):
    """A task that ended without succeeding: state is "failed", "dead" or
    "cancelled", error its last error, info its whole status (a dict)."""

    def __init__(self, info):
        self.info = info
        self.id = info.get("id")
        self.state = info.get("state")
        self.error = info.get("error", "")
        msg = "task %s is %s" % (self.id, self.state)
        if self.error:
            msg += ": " + self.error
        super().__init__(msg)


class FlowFailed(Exception):
    """A flow that ended without succeeding: state is "failed" or
    "cancelled", failed_by the node that failed it (or ""), info its whole
    status (a dict: get_flow's)."""

    def __init__(self, info):
        self.info = info
        self.id = info.get("id")
        self.state = info.get("state")
        self.failed_by = info.get("failed_by", "")
        msg = "flow %s is %s" % (self.id, self.state)
        if self.failed_by:
            msg += " (node %s)" % self.failed_by
        super().__init__(msg)


class WaitTimeout(TimeoutError):
    """A wait that ended before its task or flow: id is the task's (or the
    flow's), which goes on; info its last status read (a dict, or None)."""

    def __init__(self, task_id, message, info=None):
        super().__init__(message)
        self.id = task_id
        self.info = info
