"""pyprog: Prognosticator (Chandak et al., ICML 2020) with a Cython core.

Estimate each past episode's performance of a policy by importance sampling,
forecast its future performance by (weighted) least squares over time, and follow
the gradient of that forecast.
"""

from pyprog._backend import backend
from pyprog._version import __version__

__all__ = ["__version__", "backend"]
