"""Hyper-parameters of a learner, validated before any work starts, and the paper's settings.

``Hyper`` holds one setting; :func:`paper_hyper` returns the authors' tuned setting for an
(environment, algorithm, speed) from their 2000-setting random search (shipped as
``pyprog/data/hyperparams.json``, a copy of the reference implementation's tables).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from pyprog.envs.registry import ENVS
from pyprog.forecast.bases import BASES
from pyprog.utils.validation import check_int

__all__ = [
    "ALGOS",
    "DEFAULT_DTYPE",
    "DTYPES",
    "ENVS",
    "FORECASTING",
    "FORECAST_KEYS",
    "MAX_INNER_STEPS",
    "MAX_LR",
    "OPTIMIZERS",
    "SPEEDS",
    "Hyper",
    "check_algo",
    "check_env",
    "check_written_setting",
    "default_hyper",
    "hyper_from_table",
    "is_settings_table",
    "paper_hyper",
]

#: Environment names, as used by :func:`pyprog.run` and the CLI.
#: Algorithm names: the two Prognosticator variants and the two baselines.
ALGOS = ("pro-ols", "pro-wls", "onpg", "ftrl-pg")
#: The learners that forecast; ONPG and FTRL-PG ascend past estimates, not a forecast.
FORECASTING = ("pro-ols", "pro-wls")
#: The keys of a setting that only a forecasting learner uses.
FORECAST_KEYS = ("basis", "d", "select_every")
#: The paper's speeds of non-stationarity (0 = stationary).
SPEEDS = (0, 1, 2, 3, 4)
#: Optimisers of :mod:`pyprog.learn.optim`.
OPTIMIZERS = ("rmsprop", "adam", "sgd")
#: Precisions of a policy's passes (``Hyper.dtype``); the first is the default.
DTYPES = ("float64", "float32")
DEFAULT_DTYPE = DTYPES[0]
#: The most gradient steps per update a setting may take (the paper's take at most 150).
MAX_INNER_STEPS = 10_000
#: The largest learning rate (of either layer) a setting may take; the paper's tuned rates
#: are below 0.01, and a step of 10 already throws a softmax policy to a corner.
MAX_LR = 10.0
#: Upper bounds of the other real-valued hyper-parameters: far beyond any useful setting,
#: and low enough that the arithmetic they enter stays finite (a bound of 1e308 would not).
MAX_ENTROPY_LAMBDA = 1e3
MAX_CLIP = 1e6
MAX_GAUSS_STD = 1e6


def _choice(kind: str, value: Any, valid: tuple[str, ...]) -> str:
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r}; valid: {', '.join(valid)}")
    return value


def check_env(env: str) -> str:
    """``env`` if it is one of :data:`ENVS`, else a ValueError listing them."""
    return _choice("env", env, ENVS)


def check_algo(algo: str) -> str:
    """``algo`` if it is one of :data:`ALGOS`, else a ValueError listing them."""
    return _choice("algo", algo, ALGOS)


def _number(name: str, value: Any, low: float, low_ok: bool, high: float = math.inf) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)
    ok = ok and (value >= low if low_ok else value > low) and value <= high
    if not ok:
        bound = f">= {low:g}" if low_ok else f"> {low:g}"
        if high != math.inf:
            bound += f" and <= {high:g}"
        raise ValueError(f"{name} must be a number {bound}; got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class Hyper:
    """One hyper-parameter setting of a learner (paper appendix D.2).

    Parameters
    ----------
    lr : float in (0, MAX_LR]
        Learning rate of the policy (of its output layer, for the MLP).
    delta : int >= 1
        Episodes between updates, and how far ahead the forecast looks.
    inner_steps : int in [1, MAX_INNER_STEPS]
        Gradient steps per update (ONPG takes ``delta`` steps instead).
    entropy_lambda : float in [0, 1000]
        Weight of the policy's entropy in the objective.
    basis : {"fourier", "poly", "linear", "auto"}
        Time basis of the forecast (Pro-OLS, Pro-WLS). ``"auto"`` chooses the forecaster
        (a basis and its ``d``, or a window or exponentially weighted mean) by rolling-origin
        backtests of the buffer's per-episode estimates, see
        :func:`pyprog.forecast.selection.select_forecaster`.
    d : int >= 1
        Number of basis features (ignored by ``"linear"`` and ``"auto"``).
    select_every : int >= 1
        With ``basis="auto"``: episodes between two selections (the forecaster chosen is
        kept in between, and at the next selection it is kept unless the backtests reject
        it; a selection costs about as much as a few inner steps).
    clip : float in (0, 1e6], or inf
        Clip of the importance ratios.
    gamma : float in [0, 1]
        Discount factor.
    optimizer : {"rmsprop", "adam", "sgd"}
    hidden : int >= 1 or None
        Hidden units of the softmax-MLP policy (NS-Reacher); None for a linear policy.
    hidden_lr : float in (0, MAX_LR]
        Learning rate of the MLP's hidden layer (the reference uses 1e-3).
    gauss_std : float in (0, 1e6] or None
        Standard deviation of the Gaussian policy (NS-Diabetes).
    buffer_size : int >= 1
        Episodes kept for the forecast.
    dtype : {"float64", "float32"}
        Precision of the policy's forward and backward passes over the stored steps (softmax
        policies). ``"float32"`` runs them in single precision (parameters and features
        rounded to float32 at every pass), while the PDIS sums, ratios, ζ, the forecast, the
        parameters' master copy and the optimiser stay float64. The paper's protocol keeps
        the default, ``"float64"``, which is left out of :meth:`to_dict` (and so of the
        store's setting hashes) so that every float64 key stays what it was.

    Examples
    --------
    >>> Hyper(lr=1e-3, delta=3, d=5).replace(clip=5.0).clip
    5.0
    >>> Hyper(lr=0)
    Traceback (most recent call last):
    ...
    ValueError: lr must be a number > 0 and <= 10; got 0
    """

    lr: float
    delta: int = 1
    inner_steps: int = 10
    entropy_lambda: float = 0.0
    basis: str = "fourier"
    d: int = 5
    select_every: int = 10
    clip: float = 10.0
    gamma: float = 0.99
    optimizer: str = "rmsprop"
    hidden: int | None = None
    hidden_lr: float = 1e-3
    gauss_std: float | None = None
    buffer_size: int = 1000
    dtype: str = "float64"

    def __post_init__(self) -> None:
        checks = {
            "lr": _number("lr", self.lr, 0.0, False, MAX_LR),
            "delta": check_int("delta", self.delta, 1),
            "inner_steps": check_int("inner_steps", self.inner_steps, 1),
            "entropy_lambda": _number(
                "entropy_lambda", self.entropy_lambda, 0.0, True, MAX_ENTROPY_LAMBDA
            ),
            "basis": _choice("basis", self.basis, (*BASES, "auto")),
            "d": check_int("d", self.d, 1),
            "select_every": check_int("select_every", self.select_every, 1),
            "clip": _number("clip", self.clip, 0.0, False),
            "gamma": _number("gamma", self.gamma, 0.0, True, 1.0),
            "optimizer": _choice("optimizer", self.optimizer, OPTIMIZERS),
            "hidden_lr": _number("hidden_lr", self.hidden_lr, 0.0, False, MAX_LR),
            "buffer_size": check_int("buffer_size", self.buffer_size, 1),
            "dtype": _choice("dtype", self.dtype, DTYPES),
        }
        if checks["inner_steps"] > MAX_INNER_STEPS:
            raise ValueError(
                f"inner_steps must be at most {MAX_INNER_STEPS} gradient steps per update "
                f"(the paper's settings take at most 150); got {self.inner_steps!r}"
            )
        if math.isfinite(checks["clip"]) and checks["clip"] > MAX_CLIP:
            raise ValueError(
                f"clip must be at most {MAX_CLIP:g}, or inf for no clipping; got {self.clip!r}"
            )
        if self.hidden is not None:
            checks["hidden"] = check_int("hidden", self.hidden, 1)
        if self.gauss_std is not None:
            checks["gauss_std"] = _number("gauss_std", self.gauss_std, 0.0, False, MAX_GAUSS_STD)
        for name, value in checks.items():  # canonical types: ints as int, floats as float
            object.__setattr__(self, name, value)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Hyper:
        """A setting from a mapping; unknown keys are an error that lists the valid ones."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ValueError(
                f"unknown hyper-parameter(s) {', '.join(unknown)}; "
                f"valid: {', '.join(sorted(fields))}"
            )
        if "lr" not in values:
            raise ValueError("hyper-parameters must include lr (the learning rate)")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The setting as a plain dict (JSON-serialisable).

        ``dtype`` appears only when it is not the default ``"float64"``: a setting hashes
        (:func:`pyprog.results.keys.setting_hash`) as it did before ``dtype`` existed.

        Examples
        --------
        >>> "dtype" in Hyper(lr=0.01).to_dict(), Hyper(lr=0.01, dtype="float32").to_dict()["dtype"]
        (False, 'float32')
        """
        values = dataclasses.asdict(self)
        if values["dtype"] == DEFAULT_DTYPE:
            del values["dtype"]
        return values

    def replace(self, **changes: Any) -> Hyper:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


@lru_cache(maxsize=1)
def _paper_table() -> dict[str, Any]:
    text = resources.files("pyprog").joinpath("data/hyperparams.json").read_text()
    return json.loads(text)


def paper_hyper(env: str, algo: str, speed: int) -> Hyper:
    """The authors' tuned setting for ``(env, algo, speed)`` (paper appendix D–E).

    Examples
    --------
    >>> h = paper_hyper("reco", "pro-wls", 2)
    >>> h.delta, h.inner_steps, h.d, h.clip
    (5, 50, 3, 15.0)
    """
    check_env(env)
    check_algo(algo)
    table = _paper_table()[env][algo]
    if str(speed) not in table:
        raise ValueError(f"no paper setting for speed {speed!r}; valid: {', '.join(sorted(table))}")
    values = dict(table[str(speed)])
    return Hyper.from_dict(values)


#: pyprog's default setting per algorithm for environments without a paper setting.
#: Reasoning (README, "Any environment"): the middle of the paper's search ranges where the
#: authors' tuned settings do not point elsewhere — lr 3e-3 (their tuned rates cluster at
#: 1e-3–1e-2), δ = 3 and 20·δ inner steps (the middle of {1, 3, 5} and {10, 20, 30}·δ),
#: clip 10 (the middle of {5, 10, 15}), λ_H = 0.01 (a little exploration), Fourier basis; d = 5
#: for Pro-OLS and 3 for Pro-WLS, whose weighted fit is noisier (most of its tuned settings
#: have d = 3–4). The baselines take the same values: only the weighting differs.
DEFAULTS: dict[str, dict[str, Any]] = {
    algo: {
        "lr": 3e-3,
        "delta": 3,
        "inner_steps": 60,
        "entropy_lambda": 0.01,
        "basis": "fourier",
        "d": 3 if algo == "pro-wls" else 5,
        "clip": 10.0,
        "gamma": 0.99,
    }
    for algo in ALGOS
}


def default_hyper(algo: str, gauss_std: float | None = None) -> Hyper:
    """pyprog's default setting of ``algo`` for an environment without a paper setting.

    Parameters
    ----------
    algo : {"pro-ols", "pro-wls", "onpg", "ftrl-pg"}
    gauss_std : float, optional
        Standard deviation of the Gaussian policy, for continuous actions
        (:func:`pyprog.runner.adapter.default_gauss_std` picks one from the action space).

    Examples
    --------
    >>> h = default_hyper("pro-wls")
    >>> h.lr, h.delta, h.inner_steps, h.d, h.clip, h.hidden
    (0.003, 3, 60, 3, 10.0, None)
    """
    values = dict(DEFAULTS[check_algo(algo)])
    if gauss_std is not None:
        values["gauss_std"] = gauss_std
    return Hyper(**values)


def check_written_setting(values: Mapping[str, Any], algos: Sequence[str], what: str) -> None:
    """Refuse keys of a hand-written setting that would be silently unused.

    A setting that pyprog wrote (a stored run's ``hyper``, ``pyprog best --json``) holds
    every key; one a user writes holds the keys they mean to set. Two of those would have no
    effect, as ``pyprog forecast`` refuses ``--d`` with ``--basis auto``: ``d`` with
    ``"basis": "auto"`` (the backtests choose the forecaster and its ``d``), and a forecast
    key (:data:`FORECAST_KEYS`) for a learner that does not forecast (ONPG, FTRL-PG).

    Parameters
    ----------
    values : mapping
        The setting as written.
    algos : sequence of str
        The learners it is for.
    what : str
        How the setting was given, for the message (e.g. ``"--hyper"``).

    Examples
    --------
    >>> check_written_setting({"lr": 0.01, "basis": "auto"}, ["pro-wls"], "--hyper")
    >>> check_written_setting({"basis": "poly"}, ["onpg"], "--hyper")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --hyper: "basis" set(s) the forecast of pro-ols and pro-wls; onpg do(es) not ...
    """
    if values.get("basis") == "auto" and "d" in values:
        raise ValueError(
            f'{what}: "d" sets the features of a fixed basis; with "basis": "auto" the learner '
            'chooses its forecaster (and its d) by backtests: drop "d", or name a fixed basis'
        )
    given = [k for k in FORECAST_KEYS if k in values]
    idle = [a for a in algos if a not in FORECASTING]
    if given and idle:
        keys = ", ".join(f'"{k}"' for k in given)
        raise ValueError(
            f"{what}: {keys} set(s) the forecast of {' and '.join(FORECASTING)}; "
            f"{', '.join(idle)} do(es) not forecast, so it would be unused: drop it, or run "
            f"{' and '.join(FORECASTING)} on their own (--algo {','.join(FORECASTING)})"
        )


def is_settings_table(value: Any) -> bool:
    """A best-settings table ``{env: {algo: {speed: setting}}}``, not one setting (whose
    values are numbers, strings or None)."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(v, Mapping) for v in value.values())
    )


def hyper_from_table(hyper: Any, env: str, algo: str, speed: float) -> Any:
    """Pick the setting for ``(env, algo, speed)`` when ``hyper`` is a settings table or file.

    A settings table is what ``pyprog best --json`` writes and what the shipped
    ``pyprog/data/hyperparams.json`` holds: ``{env: {algo: {speed: setting}}}``, speeds as
    text (``"2"``, ``"2.5"``). ``hyper`` may be such a table, or the path (str or
    path-like, ending in ``.json``) of a JSON file holding a table or one setting.
    Anything else (``"paper"``, one setting as a dict, a :class:`Hyper`) is returned as is.

    Parameters
    ----------
    hyper : table, path, or anything :func:`pyprog.run` accepts
    env, algo : str
    speed : float or None
        None for an environment that drifts by itself (its table entry is ``"-"``).

    Returns
    -------
    Hyper, dict, or ``hyper`` unchanged

    Raises
    ------
    ValueError
        The file cannot be read or is not JSON, or the table has no setting for
        ``(env, algo, speed)`` (the message lists what it has).

    Examples
    --------
    >>> table = {"reco": {"onpg": {"2": {"lr": 0.01, "delta": 3}}}}
    >>> hyper_from_table(table, "reco", "onpg", 2).delta
    3
    >>> hyper_from_table(table, "reco", "onpg", 4)
    Traceback (most recent call last):
    ...
    ValueError: the settings table has no reco/onpg setting for speed 4; it has speeds 2
    >>> hyper_from_table("paper", "reco", "onpg", 2)
    'paper'
    """
    if isinstance(hyper, os.PathLike) or (isinstance(hyper, str) and hyper.endswith(".json")):
        path = os.fspath(hyper)
        try:
            with open(path) as fh:
                hyper = json.load(fh)
        except OSError as exc:
            raise ValueError(f"hyper file {path!r} cannot be read: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"hyper file {path!r} is not valid JSON: {exc}") from None
        if not isinstance(hyper, Mapping):
            raise ValueError(f"hyper file {path!r} must hold a JSON object")
    if not is_settings_table(hyper):
        return hyper
    key = "-" if speed is None else f"{float(speed):g}"  # "-": a drift not set by pyprog
    by_speed = hyper.get(env, {}).get(algo, {})
    if key in by_speed:
        return Hyper.from_dict(dict(by_speed[key]))
    if by_speed:
        raise ValueError(
            f"the settings table has no {env}/{algo} setting for speed {key}; "
            f"it has speeds {', '.join(by_speed)}"
        )
    has = ", ".join(f"{e}/{a}" for e in hyper for a in hyper[e]) or "none"
    raise ValueError(f"the settings table has no {env}/{algo} settings; it has {has}")
