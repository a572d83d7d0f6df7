"""An old import path, kept for one release (issue 49 moved the module).

Its names are now in :mod:`pyprog.logs.readers.common`. Import them from there: this
path warns, and goes in pyprog 0.3 (:mod:`pyprog.utils.moved`).
"""

from pyprog.utils.moved import moved

__getattr__, __dir__ = moved(
    __name__, "pyprog.logs.readers.common", renamed={"check_action_dist": "check_sums_to_one"}
)
