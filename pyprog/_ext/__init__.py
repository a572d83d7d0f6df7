"""Compute kernels: ``_kernels`` (Cython) and ``fallback`` (NumPy), same signatures."""
