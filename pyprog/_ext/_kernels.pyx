# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Cython kernels: reversed cumulative PDIS sums, clipped ratios, WLS forecasts.

Each function has a NumPy twin of the same name, signature and docstring in
``fallback.py``; a comment with the NumPy meaning stands above each low-level step.
Kernels trust the values of their inputs; validation happens once, in
:mod:`pyprog.forecast.estimators`. They do check, cheaply, that each array is float64 with
the layout they read (C-contiguous; the design ``phi`` of ``wls_forecast`` is
Fortran-ordered, one contiguous column per feature) and that shapes agree, so that a
wrong call raises instead of reading out of bounds.

One extension module, its source split by kernel family: this file holds the imports, the
input checks and C declarations every family uses, then includes ``_pdis.pxi`` (PDIS
weights, episode ratios), ``_wls.pxi`` (WLS forecasts), ``_policy.pxi`` (softmax policy
passes), ``_bootstrap.pxi`` (wild-bootstrap t-statistics), ``_choice.pxi`` (the one-SE choice in
every bootstrap replicate of ``basis="auto"``) and ``_update.pxi`` (a
learner's whole update of a softmax policy in one call) and ``_reml.pxi`` (the restricted
likelihood of :mod:`pyprog.value.reml`'s mixed model).
"""

cimport numpy as cnp
import math
import numbers

import numpy as _np

from libc.math cimport (
    exp, fabs, frexp, isfinite, ldexp, log, log1p, pow, sqrt, tanh, INFINITY, NAN
)
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dsyrk
from scipy.linalg.cython_lapack cimport (
    dgeqp3, dgesvd, dormqr, dpocon, dpotrf, dpotri, dpotrs, dtrtrs
)

from pyprog._ext import _exact

cdef double DBL_EPSILON = 2.220446049250313e-16


cnp.import_array()


cdef inline cnp.ndarray _empty(Py_ssize_t n, Py_ssize_t h=-1, int typenum=cnp.NPY_FLOAT64):
    """np.empty(n) or np.empty((n, h)), through the C API (this is per-call overhead)."""
    cdef cnp.npy_intp dims[2]
    dims[0] = n
    dims[1] = h
    return cnp.PyArray_EMPTY(1 if h < 0 else 2, dims, typenum, 0)


cdef inline double* _data(cnp.ndarray a) noexcept:
    return <double*>cnp.PyArray_DATA(a)


cdef const double* _input(object a, str name, int ndim, bint fortran=False) except NULL:
    """Data pointer of a float64 array of ``ndim`` dimensions in the expected layout."""
    cdef bint ok = (
        cnp.PyArray_Check(a)
        and cnp.PyArray_TYPE(<cnp.ndarray>a) == cnp.NPY_FLOAT64
        and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a)
        and cnp.PyArray_ISALIGNED(<cnp.ndarray>a)
        and cnp.PyArray_NDIM(<cnp.ndarray>a) == ndim
        and (cnp.PyArray_IS_F_CONTIGUOUS(<cnp.ndarray>a) if fortran
             else cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a))
    )
    if not ok:
        layout = "Fortran" if fortran else "C"
        raise ValueError(f"{name} must be a {ndim}-D {layout}-contiguous float64 ndarray")
    # a zero-size array may have a NULL data pointer; nothing is read from it then
    return <const double*>cnp.PyArray_DATA(<cnp.ndarray>a) or <const double*>&DBL_EPSILON


cdef double _real(object value, str name) except? -1.0:
    """``value`` as a double (a real number; ints beyond float64 are ±inf)."""
    if type(value) is float:  # the usual case, without the slower ABC check below
        return <double>value
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number; got {value!r}")
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


cdef double _clip(object value) except? -1.0:
    cdef double clip = _real(value, "clip")
    if not clip > 0:
        raise ValueError(f"clip must be > 0 (inf for no clipping); got {value!r}")
    return clip


cdef double _gamma(object value) except? -1.0:
    cdef double gamma = _real(value, "gamma")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1]; got {value!r}")
    return gamma


cdef inline int _same_shape(object a, str name, tuple shape) except -1:
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {a.shape}")
    return 0


cdef extern from "_loops.h" nogil:
    enum: PYPROG_BLOCK
    double pyprog_exp(double x)
    void pyprog_rho_terms(const double* c, const double* discount, const double* rewards,
                          const double* mask, double log_clip, Py_ssize_t h, double* out)
    void pyprog_weighted_gram(const double* phi, const double* w, const double* y,
                              Py_ssize_t n, Py_ssize_t d, double* A, double* b, double* scratch)
    void pyprog_wls_outputs(const double* phi, const double* w, const double* y,
                            Py_ssize_t n, Py_ssize_t d, const double* wts, const double* u,
                            double* dfdy, double* dfdw)


cdef extern from "_policy.h" nogil:
    enum: PYPROG_ROWS
    double pyprog_tanh(double x)
    float pyprog_tanh_f32(float x)
    unsigned int pyprog_flush_subnormals()
    void pyprog_restore_fp(unsigned int saved)
    double pyprog_log(double x)
    void pyprog_softmax_forward(
        const double* obs, const cnp.int64_t* actions, Py_ssize_t m, Py_ssize_t d,
        const double* W1t, const double* b1, Py_ssize_t hd, const double* W, const double* b,
        Py_ssize_t a, double* hidden, double* log_probs, double* probs, double* log_prob,
        double* entropy, double* scratch)
    void pyprog_softmax_backward(
        const double* obs, const cnp.int64_t* actions, Py_ssize_t m, Py_ssize_t d,
        Py_ssize_t hd, const double* W, Py_ssize_t a, const double* hidden,
        const double* log_probs, const double* probs, const double* entropy,
        const double* coef_log_prob, const double* coef_entropy, double* gW1t, double* gb1,
        double* gW, double* gb, double* scratch)
    # float32 instances of the same passes (_policy_real.h), for float32 policies
    void pyprog_softmax_forward_f32(
        const float* obs, const cnp.int64_t* actions, Py_ssize_t m, Py_ssize_t d,
        const float* W1t, const float* b1, Py_ssize_t hd, const float* W, const float* b,
        Py_ssize_t a, float* hidden, float* log_probs, float* probs, float* log_prob,
        float* entropy, float* scratch)
    void pyprog_softmax_backward_f32(
        const float* obs, const cnp.int64_t* actions, Py_ssize_t m, Py_ssize_t d,
        Py_ssize_t hd, const float* W, Py_ssize_t a, const float* hidden,
        const float* log_probs, const float* probs, const float* entropy,
        const float* coef_log_prob, const float* coef_entropy, float* gW1t, float* gb1,
        float* gW, float* gb, float* scratch)


cdef enum Elementwise:
    EXP = 0
    TANH = 1
    LOG = 2
    TANH_F32 = 3


def _elementwise(str name, x):
    """np.exp / np.tanh / np.log (``name``) of a 1-D array, by the kernels' vectorisable
    functions (exposed for the accuracy tests); ``"tanh_f32"`` is the float32 policies' tanh
    of each element rounded to float32 (its result is exact in float64)."""
    if name not in ("exp", "tanh", "log", "tanh_f32"):
        raise ValueError(f"name must be 'exp', 'tanh', 'log' or 'tanh_f32'; got {name!r}")
    cdef int which = {"exp": EXP, "tanh": TANH, "log": LOG, "tanh_f32": TANH_F32}[name]
    cdef const double* xs = _input(x, "x", 1)
    cdef Py_ssize_t i, n = len(x)
    cdef cnp.ndarray out = _empty(n)
    cdef double* y = _data(out)
    with nogil:
        for i in range(n):
            if which == EXP:
                y[i] = pyprog_exp(xs[i])
            elif which == TANH:
                y[i] = pyprog_tanh(xs[i])
            elif which == TANH_F32:
                y[i] = pyprog_tanh_f32(<float>xs[i])
            else:
                y[i] = pyprog_log(xs[i])
    return out


# The kernel families, in the order their functions were defined in this file before the split
include "_pdis.pxi"
include "_wls.pxi"
include "_policy.pxi"
include "_bootstrap.pxi"
include "_choice.pxi"
include "_update.pxi"
include "_reml.pxi"
