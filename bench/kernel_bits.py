"""The compiled kernels' outputs, bit for bit, from two builds: check a C change keeps results.

A change to a compiled kernel that is meant to be faster only must give the same bits: the
run fingerprints (``tests/data/run_regression.json``) and every committed result rest on them.
The tests compare the kernels with their NumPy twins to a tolerance; this compares a build with
the previous one exactly, on a fixed battery of inputs chosen for the edge cases:

* ``pdis_weights`` and ``episode_ratios`` at row counts and lengths around the 8-row tiles'
  seams, with NaN and inf in the padding, NaN at valid steps (the error message is recorded),
  masks with holes, clip inf/10/1, γ 0/0.99/1, and log-ratio sums that reach subnormal and
  overflowing ratios;
* ``wls_forecast`` on Fourier and polynomial designs, with zero and widely spread weights;
* ``softmax_forward`` and ``softmax_backward`` for linear and tanh-MLP policies, with
  saturating logits.

Usage, the previous build in a worktree built in place
(``git worktree add ../old HEAD~1 && cd ../old && python setup.py build_ext --inplace``)::

    PYTHONPATH=../old python bench/kernel_bits.py save /tmp/old.npz
    python bench/kernel_bits.py save /tmp/new.npz
    python bench/kernel_bits.py compare /tmp/old.npz /tmp/new.npz

``compare`` prints the keys whose bytes differ (or that only one file has) and exits with 1 if
there are any.
"""

from __future__ import annotations

import sys

import numpy as np


def _episodes(rng, n, h, case):
    scale = (0.1, 1.0, 5.0, 30.0, 0.1, 2.0, 1.0, 800.0)[case]
    log_pi = np.log(0.5) + scale * rng.normal(size=(n, h))
    log_beta = np.log(0.5) + 0.1 * rng.normal(size=(n, h))
    rewards = rng.normal(size=(n, h)) * (1.0, 1.0, 1e3, 1.0, 0.0, 1.0, 1.0, 1.0)[case]
    if case == 5:  # holes: any step may be invalid
        mask = (rng.random((n, h)) < 0.7).astype(np.float64)
    else:
        mask = (np.arange(h) < rng.integers(0, h + 1, size=n)[:, None]).astype(np.float64)
    if case == 1:  # garbage in the padding
        log_pi[mask == 0] = np.nan
        rewards[mask == 0] = np.inf
    if case == 6:  # NaN at a few valid steps, and zero log-ratios
        log_pi[rng.random((n, h)) < 0.01] = np.nan
        log_pi[:, ::7] = log_beta[:, ::7]
    return log_pi, log_beta, rewards, mask


def _record(out: dict, key: str, kernel, *args) -> None:
    """``out[key/i]`` = the i-th output of ``kernel(*args)``, or ``out[key/error]`` its error."""
    try:
        result = kernel(*args)
    except (ValueError, FloatingPointError) as error:
        out[f"{key}/error"] = np.array(f"{type(error).__name__}: {error}")
        return
    for i, value in enumerate(result if isinstance(result, tuple) else (result,)):
        out[f"{key}/{i}"] = np.asarray(value)


def battery() -> dict[str, np.ndarray]:
    """Every kernel call of the battery and its outputs, keyed ``kernel/case/output``."""
    from pyprog._ext import _kernels as K
    from pyprog.forecast.bases import forecast_design

    rng = np.random.default_rng(20261127)
    out: dict[str, np.ndarray] = {}
    shapes = [(8, 8), (16, 9), (24, 15), (33, 64), (64, 100), (40, 500), (17, 501)]
    for n, h in shapes:
        for case in range(8):
            args = _episodes(rng, n, h, case)
            for clip in (10.0, np.inf, 1.0):
                for gamma in (0.99, 1.0, 0.0):
                    key = f"pdis/{n}x{h}/{case}/{clip}/{gamma}"
                    _record(out, key, K.pdis_weights, *args, gamma, clip)
                log_pi, log_beta, _, mask = args
                _record(out, f"ratios/{n}x{h}/{case}/{clip}", K.episode_ratios, log_pi, log_beta,
                        mask, clip)  # fmt: skip
    for basis, d in (("fourier", 3), ("fourier", 9), ("poly", 3)):
        for n in (10, 300, 1000):
            phi, phi_star = forecast_design(n, 5, basis, d)
            y = rng.normal(size=n)
            for kind, w in (
                ("ones", np.ones(n)),
                ("spread", np.exp(rng.normal(scale=4.0, size=n))),
                ("zeros", np.where(rng.random(n) < 0.5, 0.0, rng.random(n) * 3)),
            ):
                key = f"wls/{basis}{d}/{n}/{kind}"
                _record(out, key, K.wls_forecast, phi, w, y, phi_star)
    for hidden, d, a in ((0, 4, 2), (0, 6, 5), (16, 2, 4), (64, 2, 4)):
        for logit_scale in (0.3, 30.0):
            m = 257
            obs = rng.normal(size=(m, d))
            actions = rng.integers(0, a, size=m)
            W1, b1 = rng.normal(size=(hidden, d)), rng.normal(size=hidden)
            W = logit_scale * rng.normal(size=(a, hidden or d))
            b = rng.normal(size=a)
            key = f"softmax/{hidden}/{d}/{a}/{logit_scale}"
            forward = K.softmax_forward(obs, actions, W1, b1, W, b)
            for i, value in enumerate(forward):
                out[f"{key}/forward/{i}"] = np.asarray(value)
            hidden_out, log_probs, probs, _, entropy = forward
            c, e = rng.normal(size=m), rng.normal(size=m)
            _record(out, f"{key}/backward", K.softmax_backward, obs, actions, hidden_out,
                    log_probs, probs, entropy, W1, W, c, e)  # fmt: skip
    return out


def compare(a: dict, b: dict) -> list[str]:
    """The keys whose arrays differ in dtype, shape or any byte, or that only one side has."""
    return sorted(
        key
        for key in set(a) | set(b)
        if key not in a
        or key not in b
        or a[key].dtype != b[key].dtype
        or a[key].shape != b[key].shape
        or a[key].tobytes() != b[key].tobytes()
    )


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "save":
        import pyprog

        outputs = battery()
        np.savez(argv[1], **outputs)
        print(f"{len(outputs)} arrays from {pyprog.__file__} -> {argv[1]}")
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        with np.load(argv[1]) as f, np.load(argv[2]) as g:
            a, b = dict(f), dict(g)
        differ = compare(a, b)
        for key in differ:
            print("differs:", key)
        print(f"{len(set(a) | set(b))} arrays, {len(differ)} differ")
        return 1 if differ else 0
    print("usage: python bench/kernel_bits.py save OUT.npz | compare A.npz B.npz", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
