"""An example leat task handler: counts the words of a text.

    leat worker --queue words --exec 'python3 handler.py'
    python3 handler.py --once '{"text": "to be or not to be"}'
"""

import sys
import time

from leat_handler import Fail, load, main, task


@load
def setup():
    # Runs once per process, before it says it is ready: load models here.
    return {"started": time.time()}


@task
def count_words(payload, ctx):
    if not isinstance(payload, dict) or "text" not in payload:
        raise Fail("payload needs a text")
    words = payload["text"].split()
    counts = {}
    for i, w in enumerate(words):
        counts[w] = counts.get(w, 0) + 1
        if payload.get("report"):
            ctx.progress({"done": i + 1, "of": len(words)})
            ctx.partial({"word": w})
    if payload.get("sleep"):
        time.sleep(payload["sleep"])
    print("counted %d words" % len(words), file=sys.stderr)
    return {"words": len(words), "counts": counts}


if __name__ == "__main__":
    main()
