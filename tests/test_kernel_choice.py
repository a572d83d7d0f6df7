"""The bootstrap's one-SE choice and signed replicates (``_choice.pxi``) against their NumPy
twins and the definition: ``selection.choose`` on the losses, ``ŷ + σ ⊙ ξ̃``."""

import inspect

import numpy as np
import pytest
from test_kernels import KERNEL_MODULES, compiled, needs_compiled

from pyprog._ext import fallback
from pyprog.forecast import selection


@pytest.fixture(params=KERNEL_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def K(request):
    return request.param


def choice_inputs(rng, b, c, m, usable=None):
    F = rng.normal(size=(b, c, m)).astype(np.float32)
    S1 = rng.normal(size=(b, m)).astype(np.float32)
    W = rng.random(m) + 0.5
    usable = np.ones(c, dtype=bool) if usable is None else np.asarray(usable, dtype=bool)
    return F, S1, W, usable


def choose_reference(F, S1, W, usable, step, se_rule):
    """The definition: the losses as arrays, then selection's one-SE rule on them."""
    losses = F.astype(np.float64) * (W * F - 2.0 * S1[:, None, :].astype(np.float64))
    losses[:, ~usable, :] = np.inf
    if se_rule == selection.SE_RULE:
        return selection.choose(losses, step)
    gap, se = selection.loss_gaps(losses, step)
    return np.argmax(np.isfinite(gap) & ((gap <= se_rule * se) | (gap == 0.0)), axis=1)


@needs_compiled
@pytest.mark.parametrize("name", ["one_se_choice", "signed_rows"])
def test_twins_share_signature_and_docstring(name):
    f, c = getattr(fallback, name), getattr(compiled, name)
    assert list(inspect.signature(f).parameters) == list(inspect.signature(c).parameters)
    assert inspect.getdoc(f) == inspect.getdoc(c)


@pytest.mark.parametrize(
    "b, c, m, step, se_rule",
    [(200, 13, 60, 1, 1.0), (300, 5, 31, 2, 1.0), (100, 3, 7, 3, 0.5), (50, 4, 1, 1, 1.0),
     (80, 6, 9, 20, 1.0), (120, 13, 60, 1, 0.0)],
)  # fmt: skip
def test_one_se_choice_is_choose_on_the_losses(K, b, c, m, step, se_rule):
    args = choice_inputs(np.random.default_rng(b + c + m), b, c, m)
    got = K.one_se_choice(*args, step, se_rule)
    assert got.dtype == np.int64 and got.shape == (b,)
    np.testing.assert_array_equal(got, choose_reference(*args, step, se_rule))
    if se_rule == 1.0 and -(-m // step) > 1:  # not the best always: it picks simpler ones
        best = np.argmin(np.mean(args[0] * (args[2] * args[0] - 2 * args[1][:, None]), 2), 1)
        assert (got < best).any() and (got <= best).all()


def test_one_se_choice_never_picks_an_unusable_or_non_finite_candidate(K):
    F, S1, W, _ = choice_inputs(np.random.default_rng(1), 400, 6, 12)
    usable = np.array([False, True, False, True, True, True])
    F[:50, 3, 4] = np.nan  # replicates whose candidate 3 has a NaN loss
    F[50:100, 1, :] = np.inf
    got = K.one_se_choice(F, S1, W, usable, 1, 1.0)
    np.testing.assert_array_equal(got, choose_reference(F, S1, W, usable, 1, 1.0))
    assert not np.isin(got, [0, 2]).any()
    assert not (got[:50] == 3).any() and not (got[50:100] == 1).any()


def test_one_se_choice_with_no_usable_candidate_is_candidate_0(K):
    args = choice_inputs(np.random.default_rng(2), 10, 3, 5, usable=[False] * 3)
    np.testing.assert_array_equal(K.one_se_choice(*args, 1, 1.0), np.zeros(10, np.int64))


def test_one_se_choice_with_no_replicate_or_origin(K):
    F, S1, W, usable = choice_inputs(np.random.default_rng(3), 0, 3, 5)
    assert K.one_se_choice(F, S1, W, usable, 1, 1.0).shape == (0,)
    F, S1, W, usable = choice_inputs(np.random.default_rng(3), 4, 3, 0)
    np.testing.assert_array_equal(K.one_se_choice(F, S1, W, usable, 1, 1.0), np.zeros(4))


@needs_compiled
def test_one_se_choice_compiled_equals_fallback_at_the_bootstraps_size():
    args = choice_inputs(np.random.default_rng(4), 2000, 13, 60)
    np.testing.assert_array_equal(
        compiled.one_se_choice(*args, 1, 1.0), fallback.one_se_choice(*args, 1, 1.0)
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: {**a, "F": a["F"].astype(np.float64)}, "F must be a 3-D C-contiguous float32"),
        (lambda a: {**a, "S1": a["S1"][:, :-1].copy()}, "S1"),
        (lambda a: {**a, "S1": a["S1"].astype(np.float64)}, "S1 must be a 2-D"),
        (lambda a: {**a, "W": a["W"][:-1].copy()}, "W"),
        (lambda a: {**a, "usable": a["usable"].astype(np.int8)}, "usable must be a 1-D"),
        (lambda a: {**a, "usable": a["usable"][:-1].copy()}, "usable"),
        (lambda a: {**a, "step": 0}, "step must be >= 1"),
        (lambda a: {**a, "se_rule": -1.0}, "se_rule must be >= 0"),
        (lambda a: {**a, "se_rule": float("nan")}, "se_rule must be >= 0"),
    ],
)
def test_one_se_choice_bad_input_names_the_argument(K, change, message):
    F, S1, W, usable = choice_inputs(np.random.default_rng(5), 4, 3, 5)
    args = change({"F": F, "S1": S1, "W": W, "usable": usable, "step": 1, "se_rule": 1.0})
    with pytest.raises(ValueError, match=message):
        K.one_se_choice(**args)


@pytest.mark.parametrize("n, b", [(1, 3), (8, 5), (13, 40), (1000, 257)])
def test_signed_rows_are_the_fit_plus_flipped_residuals(K, n, b):
    rng = np.random.default_rng(n)
    signs = rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8)
    fitted, resid = rng.normal(size=n), rng.normal(size=n)
    lo, hi = (fitted - resid).astype(np.float32), (fitted + resid).astype(np.float32)
    bits = np.array([[(signs[r, i // 8] >> (i % 8)) & 1 for i in range(n)] for r in range(b)])
    expected = (fitted + np.where(bits == 1, 1.0, -1.0) * resid).astype(np.float32)
    got = K.signed_rows(signs, lo, hi)
    assert got.dtype == np.float32 and got.shape == (b, n)
    np.testing.assert_array_equal(got, expected)  # exactly: a choice, not arithmetic


def test_signed_rows_bad_input_names_the_argument(K):
    signs = np.zeros((2, 2), dtype=np.uint8)
    lo = hi = np.zeros(9, dtype=np.float32)
    with pytest.raises(ValueError, match="lo must be a 1-D C-contiguous float32"):
        K.signed_rows(signs, lo.astype(np.float64), hi)
    with pytest.raises(ValueError, match="hi"):
        K.signed_rows(signs, lo, hi[:-1].copy())
    with pytest.raises(ValueError, match=r"signs must be a C-contiguous uint8 .*\(B, 2\)"):
        K.signed_rows(signs[:, :1].copy(), lo, hi)
