"""Input checks shared by the NumPy twins (``fallback.py``, ``fallback_bootstrap.py``): the
same conditions, and the same messages, as the compiled kernels' ``_input`` and
``_same_shape``."""

import numpy as np

__all__ = ["input_array", "same_shape", "typed_array"]


def input_array(a, name, ndim, fortran=False, real=None):
    """``a`` itself if it is a float64 (float32 if ``real`` is) ndarray of ``ndim`` dimensions
    in the kernels' layout (C-contiguous, or Fortran for ``fortran``), aligned, native order."""
    layout, dtype = "Fortran" if fortran else "C", np.dtype("f4" if real == "f4" else "f8")
    ok = (
        isinstance(a, np.ndarray)
        and a.dtype == dtype
        and a.dtype.isnative
        and a.ndim == ndim
        and a.flags.aligned
        and (a.flags.f_contiguous if fortran else a.flags.c_contiguous)
    )
    if not ok:
        raise ValueError(f"{name} must be a {ndim}-D {layout}-contiguous {dtype} ndarray")
    return a


def same_shape(a, name, shape):
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {a.shape}")


def typed_array(a, name, ndim, dtype, what):
    """``a`` itself if it is a C-contiguous ndarray of ``ndim`` dimensions and ``dtype``."""
    ok = isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == ndim
    if not (ok and a.flags.c_contiguous):
        raise ValueError(f"{name} must be a {ndim}-D C-contiguous {what} ndarray")
    return a
