"""The import paths before issue 49's layout still work, and warn, for one release.

Every public name each old module had (its ``__all__``) is still found at its old path, is
the very object at its new path, and its use warns with a :class:`MovedWarning` that names
the new path; names that stayed where they were do not warn.
"""

import importlib
import warnings

import pytest

from pyprog.utils.moved import REMOVED_IN, MovedWarning, moved

OLD_PATHS = {
    "pyprog.forecast.misfit": [
        "BEND_NONCENTRALITY",
        "DRIFT_P",
        "MISFIT_P",
        "TREND_DEGREE",
        "backtest_mse",
        "bend_allowance",
        "extrapolates_drift",
        "noise_variance",
        "periodic_misfit",
        "trend_misfit",
    ],
    "pyprog.forecast.post_selection": [
        "forecast_weights",
        "plausible_deviations",
        "selected_interval",
    ],
    "pyprog.utils.memo": ["array_cache"],
    "pyprog.offpolicy.rounds": [
        "MAX_ABS_REWARD",
        "PROB_TOL",
        "Rounds",
        "UNSEEN_MASS",
        "as_days",
        "check_action_dist",
        "check_rounds",
        "check_support",
        "fits_ns",
        "parse_utc",
        "policy_action_dist",
        "utc_dates",
    ],
    "pyprog.forecast.rounds_csv": [
        "AmbiguousDate",
        "COMPACT_DATES",
        "listing",
        "parse_time_text",
        "read_rounds",
        "read_rounds_csv",
        "shorten",
    ],
    "pyprog.forecast.log_columns": [
        "DictLog",
        "column",
        "column_names",
        "log_columns",
        "numbers_of",
        "target_time",
        "time_values",
    ],
    "pyprog.forecast.logs": [
        "COLUMNS",
        "EpisodeIdWarning",
        "LogFormatError",
        "Logs",
        "MAX_EPISODE_ID",
        "MAX_LINE_BYTES",
        "MAX_PADDED_CELLS",
        "read_logs",
    ],
    "pyprog.forecast.arrays": [
        "LOG_PROB_FLOOR",
        "as_timestamps",
        "logs_from_arrays",
        "logs_from_frame",
    ],
    "pyprog.forecast.readers": [
        "OBD_COLUMNS",
        "from_minari",
        "from_obp",
        "from_scope_rl",
        "read_obd_csv",
    ],
    "pyprog.forecast.readers.bandit": ["OBD_COLUMNS", "from_obp", "read_obd_csv"],
    "pyprog.forecast.readers.episodes": ["from_minari", "from_scope_rl"],
    "pyprog.forecast.readers.common": [
        "MAX_ABS_REWARD",
        "as_array",
        "as_index",
        "call",
        "check_action_dist",
        "check_rewards",
        "choose_positions",
        "count",
        "fail",
        "log_probabilities",
        "need_key",
        "numbers",
        "shift_densities",
        "show",
    ],
    "pyprog.offpolicy.time_features": [
        "Crossed",
        "DayOfWeek",
        "PeriodBlocks",
        "check_time_feature",
        "checked_labels",
        "one_hot",
    ],
    "pyprog.offpolicy.time_terms": [
        "Blocks",
        "Season",
        "Step",
        "TimeModel",
        "Trend",
        "as_time_model",
        "blocks",
        "parse_period",
        "season",
        "step",
        "time_point",
        "trend",
    ],
    "pyprog.offpolicy.time_models": ["TimeForecast", "time_forecast"],
    "pyprog.offpolicy.future": ["DEFAULT_BLOCKS", "OPFVResult", "opfv", "opfv_select"],
    "pyprog.forecast.value": ["ValueForecast", "forecast_value", "read_rounds_csv"],
    "pyprog.offpolicy.time_candidates": [
        "Binned",
        "YEAR",
        "bin_estimates",
        "default_reward_time_model",
        "default_time_models",
    ],
    "pyprog.offpolicy": [
        "ActionRidge",
        "Binned",
        "Blocks",
        "CrossFit",
        "Crossed",
        "DEFAULT_BLOCKS",
        "DayOfWeek",
        "ESTIMATORS",
        "OPFVResult",
        "PeriodBlocks",
        "RoundEstimates",
        "Season",
        "Step",
        "TimeForecast",
        "TimeModel",
        "Trend",
        "as_days",
        "bin_estimates",
        "blocks",
        "cross_fit",
        "default_time_models",
        "opfv",
        "opfv_select",
        "parse_period",
        "round_estimates",
        "season",
        "step",
        "time_forecast",
        "trend",
    ],
    "pyprog.forecast.estimators": [
        "Forecast",
        "PDISResult",
        "episode_ratios",
        "nis_forecast",
        "nwis_forecast",
        "ols_weights",
        "pdis",
    ],
    "pyprog.forecast.forecasters": [
        "BasisForecaster",
        "EWMAForecaster",
        "ForecastError",
        "Forecaster",
        "MAX_WINDOW",
        "WindowForecaster",
        "parse_forecaster",
    ],
}

#: Names that changed as they moved (two functions were called check_action_dist).
RENAMED = {("pyprog.forecast.readers.common", "check_action_dist"): "check_sums_to_one"}
CASES = [(module, name) for module, names in OLD_PATHS.items() for name in names]


def _forwarded(module, name: str) -> bool:
    forward = getattr(module, "__getattr__", None)
    if forward is None:
        return False
    names = getattr(forward, "forwards", None)
    return names is None or name in names


@pytest.mark.parametrize(("old", "name"), CASES, ids=[f"{m}.{n}" for m, n in CASES])
def test_an_old_path_finds_the_same_object(old, name):
    module = importlib.import_module(old)
    moved_here = _forwarded(module, name)
    if moved_here:
        vars(module).pop(name, None)  # found once already: forget it, to see the warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(module, name)
    said = [w for w in caught if issubclass(w.category, MovedWarning)]
    if not moved_here:
        assert said == [], f"{old}.{name} did not move, yet warned: {said[0].message}"
        return
    assert len(said) == 1, f"{old}.{name} should warn once; warned {len(said)} times"
    message = str(said[0].message)
    new = message.split(" moved to ")[1].split(";")[0]
    home, _, attr = new.rpartition(".")
    assert attr == RENAMED.get((old, name), name)
    assert getattr(importlib.import_module(home), attr) is value
    assert not home.startswith(old + ".") and home != old
    assert f"goes in pyprog {REMOVED_IN}" in message
    assert said[0].filename == __file__  # the warning points at the code that used the path


def test_from_import_of_an_old_path_warns_once():
    import pyprog.offpolicy as package

    vars(package).pop("bin_estimates", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from pyprog.offpolicy import bin_estimates  # noqa: F401
    assert [str(w.message).split(";")[0] for w in caught] == [
        "pyprog.offpolicy.bin_estimates moved to pyprog.value.bins.bin_estimates"
    ]


def test_an_unknown_name_at_an_old_path_is_an_attribute_error():
    module = importlib.import_module("pyprog.forecast.value")
    with pytest.raises(AttributeError, match=r"'pyprog\.forecast\.value' has no attribute 'nope'"):
        module.nope  # noqa: B018
    with pytest.raises(AttributeError):
        module.__wrapped__  # noqa: B018  (dunder names are never forwarded)
    estimators = importlib.import_module("pyprog.forecast.estimators")
    with pytest.raises(AttributeError, match="has no attribute 'solve_everything'"):
        estimators.solve_everything  # noqa: B018


def test_dir_of_an_old_module_lists_the_moved_names():
    module = importlib.import_module("pyprog.forecast.log_columns")
    assert {"column_names", "time_values", "target_time"} <= set(dir(module))


def test_moved_needs_a_new_module():
    with pytest.raises(ValueError, match="at least one new module"):
        moved("pyprog.nowhere")


def test_a_renamed_keyword_still_works_and_warns():
    import numpy as np

    import pyprog

    J = np.random.default_rng(0).normal(size=80)
    new = pyprog.nis_forecast(J, 1, "linear", alpha=0.1, random_state=3)
    with pytest.warns(MovedWarning, match=r"nis_forecast\(seed=\.\.\.\) is now nis_forecast"):
        old = pyprog.nis_forecast(J, 1, "linear", alpha=0.1, seed=3)
    assert (old.low, old.high) == (new.low, new.high)
    with pytest.raises(TypeError, match="got both seed= and random_state="):
        pyprog.nis_forecast(J, 1, "linear", alpha=0.1, seed=3, random_state=3)


def test_forecast_value_takes_models_as_candidates_with_a_warning():
    import numpy as np

    from pyprog.timeseries import TimeModel, trend
    from pyprog.value import ModelAverage, bin_estimates, bin_noise

    t = np.arange(400.0)
    y = np.random.default_rng(1).normal(size=400)
    b = bin_estimates(y, t)
    with pytest.warns(MovedWarning, match=r"ModelAverage\(models=\.\.\.\) is now ModelAverage"):
        avg = ModelAverage(b, bin_noise(y, t, b), models=[TimeModel((trend(),))])
    assert avg.top == "const+trend"
