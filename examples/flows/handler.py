"""The handler of the diamond flow's nodes (diamond.yaml): one script for
every queue of leat.yaml, doing what its payload's "op" says with what its
parents returned (ctx.parents).

    python3 handler.py --once '{"op": "split", "text": "a b"}'
"""

import os
import sys

try:
    import leat
except ImportError:
    # Not installed with pip: take the SDK of this repository (sdk/python).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python", "src"))
    import leat


def result(ctx, name):
    """The result of parent name, failing the task for good without it."""
    p = ctx.parents.get(name)
    if p is None or p.get("state") != "succeeded":
        raise leat.Fail("no result from %s" % name)
    return p["result"]


@leat.task
def node(payload, ctx):
    op = payload.get("op") if isinstance(payload, dict) else None
    if op == "split":
        return {"words": str(payload.get("text", "")).split()}
    if op == "count":
        return {"count": len(result(ctx, "a")["words"])}
    if op == "longest":
        return {"longest": max(result(ctx, "a")["words"], key=len, default="")}
    if op == "report":
        return {"b": result(ctx, "b"), "c": result(ctx, "c")}
    raise leat.Fail("unknown op %r" % op)


if __name__ == "__main__":
    leat.main()
