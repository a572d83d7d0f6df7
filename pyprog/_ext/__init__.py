"""Compute kernels: ``_kernels`` (Cython) and ``fallback`` (NumPy), same signatures.

:mod:`.backend` chooses one at import (``pyprog.backend()``) and holds it as ``kernels``.

May import nothing of pyprog: it is the bottom layer.
"""
