"""An example leat task handler: counts the words of a text.

    pip install ./sdk/python            # the leat package, once
    leat worker --queue words --exec 'python3 handler.py'
    python3 handler.py --once '{"text": "to be or not to be"}'
"""

import os
import sys
import time

try:
    import leat
except ImportError:
    # Not installed with pip: take the SDK of this repository (sdk/python).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python", "src"))
    import leat


@leat.load
def setup():
    # Runs once per process, before it says it is ready: load models here.
    return {"started": time.time()}


@leat.task
def count_words(payload, ctx):
    if not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
        raise leat.Fail("payload needs a text")
    words = payload["text"].split()
    counts = {}
    for i, w in enumerate(words):
        counts[w] = counts.get(w, 0) + 1
        if payload.get("report"):
            ctx.progress({"done": i + 1, "of": len(words)})
            ctx.partial({"word": w})
    if payload.get("sleep"):
        time.sleep(payload["sleep"])
    ctx.log("counted %d words" % len(words))  # a line of the task's log
    return {"words": len(words), "counts": counts}


if __name__ == "__main__":
    leat.main()  # run(), or run_once with --once JSON
