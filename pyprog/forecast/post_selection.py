"""An old import path, kept for one release (issue 49 renamed the module).

Its names are now in :mod:`pyprog.forecast.selected_intervals`. Import them from there: this
path warns, and goes in pyprog 0.3 (:mod:`pyprog.utils.moved`).
"""

from pyprog.utils.moved import moved

__getattr__, __dir__ = moved(__name__, "pyprog.forecast.selected_intervals")
