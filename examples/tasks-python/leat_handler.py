"""The helper module this example used to hold, now the leat package
(sdk/python, `pip install ./sdk/python`): import leat instead. This module
only re-exports leat's handler API for scripts that import leat_handler."""

import os
import sys

try:
    import leat
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python", "src"))
    import leat

from leat import Context, Fail, Retry, Snooze, load, main, run, run_once, task

__all__ = ["Context", "Fail", "Retry", "Snooze", "load", "main", "run", "run_once", "task"]
