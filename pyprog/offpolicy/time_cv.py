"""Least squares on the day bins, and its cross-validation in time without refits.

A model of :mod:`.time_models` is fit to the bins' means ȳ_j weighted by their counts
n_j: with √n X = QR (columns scaled to unit norm first), the fit is √n ŷ = QQᵀ√n ȳ and
its residuals ξ = (I − H)√n ȳ, H = QQᵀ. The held-out residuals of a fold F (the bins
predicted by the model fit on all the others) are (I − H_FF)⁻¹ ξ_F, the block form of
the PRESS identity (e.g. Arlot & Celisse 2010), so K-fold cross-validation needs one QR
per model, not K fits; the same holds for B bootstrap columns of ȳ at once.

Used by :mod:`.time_selection`; the folds are contiguous stretches of time ("blocked")
or every K-th bin ("interleaved").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from pyprog.offpolicy.drift_test import drift_basis
from pyprog.offpolicy.time_candidates import Binned
from pyprog.offpolicy.time_terms import Step, TimeModel

__all__ = [
    "FOLDS",
    "Candidate",
    "candidate",
    "cv_losses",
    "fitted",
    "hc2_variance",
    "stretches",
]


@dataclass(frozen=True)
class Candidate:
    """One model's least-squares machinery on the bins."""

    model: TimeModel
    q: np.ndarray  # (m, p): orthonormal basis of √n X
    r: np.ndarray  # (p, p)
    scale: np.ndarray  # (p,)
    press: list  # per stretch: (I − H_FF)⁻¹, (|F|, |F|)
    drift: np.ndarray  # (m, p − 1): the columns net of the constant (:mod:`.drift_test`)

    @property
    def p(self) -> int:
        return int(self.q.shape[1])

    @property
    def size(self) -> int:
        """Complexity for the one-SE rule: columns, plus one per step's chosen time."""
        return self.p + sum(isinstance(term, Step) for term in self.model.terms)


FOLDS = ("blocked", "interleaved")


def stretches(m: int, n_folds: int, kind: str = "blocked") -> list:
    """The K folds of m time-ordered bins: contiguous stretches, or every K-th bin."""
    if kind == "interleaved":
        return [np.arange(k, m, n_folds) for k in range(n_folds)]
    edges = (np.arange(n_folds + 1) * m) // n_folds
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(edges)]


def candidate(model: TimeModel, binned: Binned, folds: list) -> Candidate | None:
    """A model's QR on the bins and each fold's (I − H_FF)⁻¹; None when the model cannot
    be fit (more columns than bins allow, a column all zero, rank-deficient on these
    times) or cannot be cross-validated on ``folds`` (a fold the rest cannot predict)."""
    t0, t1 = binned.span
    sw = np.sqrt(binned.count)
    X = model.design(binned.times, t0, t1)
    if X.shape[1] + 2 > binned.m:
        return None
    Xw = X * sw[:, None]
    scale = np.linalg.norm(Xw, axis=0)
    if (scale == 0).any():
        return None
    q, r = np.linalg.qr(Xw / scale)
    diag = np.abs(np.diag(r))
    if diag.min() < 1e-10 * diag.max():
        return None  # rank-deficient on these times (a block never observed)
    press = []
    for f in folds:
        qf = q[f]
        a = np.eye(qf.shape[0]) - qf @ qf.T
        s = np.linalg.svd(a, compute_uv=False)
        if s.min() < 1e-8:
            return None  # a stretch the rest cannot predict
        press.append(np.linalg.inv(a))
    return Candidate(model, q, r, scale, press, drift_basis(q, sw))


def cv_losses(cand: Candidate, yw: np.ndarray, folds: list) -> np.ndarray:
    """Held-out squared errors (weighted) per bin, for columns of yw: (m,) or (m, B)."""
    resid = yw - cand.q @ (cand.q.T @ yw)
    out = np.empty_like(resid)
    for f, press in zip(folds, cand.press, strict=True):
        out[f] = press @ resid[f]
    return out**2


def hc2_variance(cand: Candidate, y: np.ndarray, yw: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """Per-bin noise variances of ȳ from the candidate's residuals, ξ_j² / (1 − h_j)."""
    h = np.einsum("ij,ij->i", cand.q, cand.q)
    return (y - fitted(cand, yw) / sw) ** 2 / np.maximum(1.0 - h, 1e-12)


def fitted(cand: Candidate, yw: np.ndarray) -> np.ndarray:
    """The weighted fit √n ŷ = QQᵀ√n ȳ for columns of yw: (m,) or (m, B)."""
    return cand.q @ (cand.q.T @ yw)
