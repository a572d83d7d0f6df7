"""pyprog.forecast_value: the value of a policy at a future date from timestamped rounds.

Unit behaviour, every input form (arrays, DataFrame, CSV, CLI), bad input, and the
chooser's answers on noiseless and near-noiseless shapes. The Monte Carlo claims (MSE
against OPFV, coverage per shape) are in tests/test_value_mc.py.
"""

import datetime as dt
import json

import numpy as np
import pytest
from contextual_year import YEAR, YearOfRounds, as_datetime64

import pyprog
from pyprog.timeseries import DayOfWeek, PeriodBlocks, TimeModel, blocks, season, step, trend
from pyprog.timeseries.errors import ForecastError
from pyprog.value import ModelAverage, bin_noise
from pyprog.value.bins import bin_estimates
from pyprog.value.candidates import default_reward_time_model, default_time_models
from pyprog.value.forecast import UNTIMED, forecast_value, read_rounds_csv


def year_log(shape="sinusoid", n=3000, seed=0, **kw):
    gen = YearOfRounds(shape, **kw)
    d = gen.sample(n, np.random.default_rng(seed))
    frame = {"time": d["times"], "action": d["action"], "reward": d["reward"]}
    frame["pscore"] = d["pscore"]
    for j in range(d["context"].shape[1]):
        frame[f"x{j}"] = d["context"][:, j]
    for a in range(gen.n_actions):
        frame[f"pi_{a}"] = d["action_dist"][:, a]
    return gen, d, frame


def test_top_level_export_and_result_fields():
    gen, d, frame = year_log()
    f = pyprog.forecast_value(frame, "pi_", at=YEAR + 30)
    assert isinstance(f, pyprog.ValueForecast)
    assert f.low <= f.value <= f.high
    assert f.estimator.removesuffix(UNTIMED) in ("dr-pooled", "dr", "is")
    assert f.model.startswith("const")
    out = f.as_dict()
    assert set(out) >= {"value", "low", "high", "model", "estimator", "target", "alpha"}
    json.dumps(out, allow_nan=False)
    assert f.target == ("at", YEAR + 30) and f.n_rounds == 3000 and 300 < f.n_bins <= 366
    assert "days ahead" in str(f)


def test_one_year_sinusoid_is_forecast_by_a_yearly_season_containing_the_truth():
    gen, d, frame = year_log("sinusoid", n=5000, seed=1)
    targets = [YEAR + 45.0, YEAR + 200.0]
    res = forecast_value(frame, d["action_dist"], at=targets)
    truth = gen.value(np.array(targets))
    assert [r.model for r in res] == ["const+season(365.25D,k=1)"] * 2
    for r, v in zip(res, truth, strict=True):
        assert r.low <= v <= r.high, (r, v)


def test_inputs_arrays_frame_csv_and_dates_agree(tmp_path):
    pd = pytest.importorskip("pandas")
    gen, d, frame = year_log("trend", n=1500, seed=2)
    base = forecast_value(frame, "pi_", at=YEAR + 20)
    # a DataFrame with time-zone-aware dates: the same instants, the same answer
    df = pd.DataFrame(frame)
    stamps = pd.to_datetime(as_datetime64(d["times"])).tz_localize("UTC")
    df["time"] = stamps.tz_convert("Asia/Tokyo")
    at = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=YEAR + 20)
    by_frame = forecast_value(df, "pi_", at=at.isoformat())
    assert by_frame.value == pytest.approx(base.value, rel=1e-9, abs=1e-9)
    assert by_frame.model == base.model
    # a CSV file with ISO-8601 dates (UTC offsets): the same answer
    path = tmp_path / "rounds.csv"
    df.assign(time=[s.isoformat() for s in df["time"]]).to_csv(path, index=False)
    by_csv = forecast_value(path, "pi_", at=at.isoformat())
    assert by_csv.value == pytest.approx(base.value, rel=1e-9, abs=1e-9)
    cols = read_rounds_csv(path)
    np.testing.assert_allclose(cols["time"], d["times"], atol=1e-6)


def test_a_callable_policy_is_evaluated_at_the_target_time():
    """π_e that plays arm 1 before day 400 and arm 0 after: the forecast at day 420 is the
    value of arm 0, which the log's own times would never show."""
    rng = np.random.default_rng(3)
    n = 4000
    t = np.sort(rng.uniform(0, 365, n))
    a = rng.integers(0, 2, n)
    r = np.where(a == 0, 2.0, 1.0) + rng.normal(0, 0.3, n)
    frame = {"time": t, "action": a, "reward": r, "pscore": np.full(n, 0.5)}

    def switch(x, times):
        late = (np.asarray(times) >= 400)[:, None]
        return np.where(late, [[1.0, 0.0]], [[0.0, 1.0]])

    early, late = forecast_value(frame, switch, at=[380.0, 420.0], n_actions=2, context=None)
    assert early.value == pytest.approx(1.0, abs=0.1)
    assert late.value == pytest.approx(2.0, abs=0.1)


def test_over_a_window_is_the_average_of_the_forecast():
    gen, d, frame = year_log("sinusoid", n=3000, seed=4)
    win = forecast_value(frame, "pi_", over=(YEAR + 10, YEAR + 40), estimator="dr")
    points = forecast_value(
        frame, "pi_", at=list(YEAR + np.linspace(10, 40, 301)), estimator="dr", alpha=None
    )
    assert win.value == pytest.approx(np.mean([p.value for p in points]), abs=2e-3)
    assert win.target == ("over", YEAR + 10, YEAR + 40)


def drifting_contexts_log(n=3000, seed=0, shift=1.5):
    """A year of rounds whose contexts' mean moves by ``shift`` (each feature) over the log."""
    gen = YearOfRounds("stationary")
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, YEAR, n))
    x = rng.standard_normal((n, gen.dim)) + shift * (t / YEAR)[:, None]
    p0 = gen.logging(x, t)
    a = np.minimum((rng.random(n)[:, None] > np.cumsum(p0, axis=1)).sum(axis=1), 9)
    rows = np.arange(n)
    r = gen.q(x, t)[rows, a] + gen.noise * rng.standard_normal(n)
    frame = {"time": t, "action": a, "reward": r, "pscore": p0[rows, a]}
    frame.update({f"x{j}": x[:, j] for j in range(gen.dim)})
    return frame, gen.evaluation(x, t)


def test_contexts_are_pooled_unless_they_drift():
    gen, d, frame = year_log("blocks", n=3000, seed=2)
    kw = {"at": YEAR + 20, "alpha": None, "estimator": "dr", "time_feature": None}
    assert forecast_value(frame, "pi_", **kw).estimator == "dr-pooled"
    assert forecast_value(frame, "pi_", pool_contexts=False, **kw).estimator == "dr"
    frame, pi = drifting_contexts_log()
    assert forecast_value(frame, pi, **kw).estimator == "dr"  # "auto" saw the drift
    assert forecast_value(frame, pi, pool_contexts=True, **kw).estimator == "dr-pooled"

    class Mean:  # not affine in its inputs: never pooled by "auto", refused when asked
        def fit(self, X, y):
            self.m = float(np.mean(y))
            return self

        def predict(self, X):
            return np.full(len(X), self.m)

    assert forecast_value(frame, pi, reward_model=Mean(), **kw).estimator == "dr"
    with pytest.raises(ValueError, match="pool_contexts=True needs a reward model affine"):
        forecast_value(frame, pi, reward_model=Mean(), pool_contexts=True, **kw)


@pytest.mark.parametrize("shape, n, seed, untimed", [
    ("stationary", 1000, 0, True),  # nothing in time to explain: q̂'s time inputs only add noise
    ("blocks", 3000, 2, False),  # q̂ follows the blocks, and DR's residuals shrink
])  # fmt: skip
def test_auto_time_inputs_keep_the_reward_model_the_backtest_prefers(shape, n, seed, untimed):
    """time_feature="auto" computes DR with and without q̂'s time inputs and keeps the
    one with the lower cross-validation error; its forecast is that variant's own."""
    gen, d, frame = year_log(shape, n=n, seed=seed)
    kw = {"at": YEAR + 20, "alpha": None, "random_state": 0}
    auto = forecast_value(frame, "pi_", **kw)
    assert auto.estimator == "dr-pooled" + (UNTIMED if untimed else "")
    phi = None if untimed else default_reward_time_model(*auto_span(frame))
    same = forecast_value(frame, "pi_", time_feature=phi, **kw)
    assert same.estimator == "dr-pooled" and same.value == auto.value
    assert same.weights == auto.weights


def auto_span(frame) -> tuple[float, float]:
    return float(np.min(frame["time"])), float(np.max(frame["time"]))


def test_horizon_beyond_the_log_is_refused_with_what_it_supports():
    gen, d, frame = year_log("stationary", n=1000, seed=5)
    with pytest.raises(ForecastError, match=r"covers 36[0-9].* days.*max_horizon"):
        forecast_value(frame, "pi_", at=d["times"].max() + 400)
    f = forecast_value(frame, "pi_", at=d["times"].max() + 400, max_horizon=500)
    assert f.horizon == pytest.approx(400)


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(at=None), "exactly one of at="),
        (dict(over=(1.0, 2.0)), "exactly one of at="),
        (dict(at=10.0), "at must be after the log"),
        (dict(at="tomorrow"), "at must be a number or an ISO-8601 date"),
        (dict(at=[]), "at must hold at least one time"),
        (dict(estimator="magic"), "estimator must be"),
        (dict(alpha=1.5), r"alpha must be a number in \(0, 1\), e.g. 0.05, or None"),
        (dict(time="when"), "no column 'when'"),
        (dict(context=["x0", "zz"]), r"context: no column\(s\) \['zz'\]"),
        (dict(policy="q_"), "policy: no columns named 'q_'"),
        (dict(max_horizon=-1), "max_horizon must be"),
        (dict(interval="median"), "interval must be 'prediction' or 'mean'"),
        (dict(pool_contexts="always"), "pool_contexts must be 'auto', True or False"),
        (dict(log=[1, 2, 3]), "log must be a CSV path"),
        (dict(log="/no/such/file.csv"), "no such file"),
    ],
)
def test_bad_input_names_the_argument(change, match):
    gen, d, frame = year_log("stationary", n=600, seed=6)
    kw = {"log": frame, "policy": "pi_", "at": YEAR + 10}
    kw.update(change)
    with pytest.raises(ValueError, match=match):
        forecast_value(kw.pop("log"), kw.pop("policy"), **kw)


def test_bad_rounds_name_the_column():
    gen, d, frame = year_log("stationary", n=600, seed=7)
    bad = dict(frame, pscore=np.where(np.arange(600) == 5, 0.0, frame["pscore"]))
    with pytest.raises(ValueError, match=r"pscore must be a probability in .* row 5"):
        forecast_value(bad, "pi_", at=YEAR + 10)
    bad = dict(frame, pi_0=frame["pi_0"] + 0.05)
    with pytest.raises(ValueError, match="each row must sum to 1"):
        forecast_value(bad, "pi_", at=YEAR + 10)


def test_csv_errors_name_line_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("time,action,reward,pscore,pi_0\n1,0,1.0,1,1\n2,0,oops,1,1\n")
    with pytest.raises(ValueError, match=r"line 3, column 'reward': 'oops' is not a number"):
        read_rounds_csv(path)
    path.write_text("time,action,reward\n1,0,1.0,7\n")
    with pytest.raises(ValueError, match="line 2: 4 fields, the header has 3"):
        read_rounds_csv(path)
    path.write_text("time,action,reward\nyesterday,0,1\n")
    with pytest.raises(ValueError, match="'time': 'yesterday' is not a number or an ISO"):
        read_rounds_csv(path)
    path.write_text("time,action,reward\r1,0,1.0\r2,1,0.5\r")  # CR-only line endings
    assert read_rounds_csv(path)["reward"].tolist() == [1.0, 0.5]
    path.write_bytes(b"\xef\xbb\xbftime,action,reward\n1,0,1.0\n")  # a spreadsheet's BOM
    assert read_rounds_csv(path)["time"].tolist() == [1.0]
    with pytest.raises(ValueError, match="no time column 'when'"):
        read_rounds_csv(path, time="when")


def test_too_short_a_log_is_a_forecast_error():
    rng = np.random.default_rng(8)
    n = 50
    frame = {"time": np.sort(rng.uniform(0, 20, n)), "action": rng.integers(0, 2, n),
             "reward": rng.normal(size=n), "pscore": np.full(n, 0.5)}  # fmt: skip
    with pytest.raises(ForecastError, match="needs at least 30"):
        forecast_value(frame, np.tile([0.5, 0.5], (n, 1)), at=25.0, context=None)


def test_cli_forecasts_the_value_at_a_date(tmp_path, capsys):
    from pyprog.cli.main import main

    pd = pytest.importorskip("pandas")
    gen, d, frame = year_log("blocks", n=1500, seed=9)
    df = pd.DataFrame(frame)
    df["time"] = [str(s)[:19] for s in as_datetime64(d["times"])]
    path = tmp_path / "rounds.csv"
    df.to_csv(path, index=False)
    out_json = tmp_path / "out.json"
    code = main(["forecast", str(path), "--time", "time", "--at", "1971-02-01",
                 "--json", str(out_json), "--alpha", "0.1"])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "1971-02-01" in printed and "90% prediction" in printed and "support: ESS" in printed
    summary = json.loads(out_json.read_text())
    direct = forecast_value(path, "pi_", at="1971-02-01")
    assert summary["value"] == pytest.approx(direct.value)
    assert summary["target_utc"] == ["1971-02-01T00:00Z"]
    code = main(["forecast", str(path), "--time", "time", "--at", "1969-01-01"])
    err = capsys.readouterr().err
    assert code == 2 and "--at must be after the log" in err
    code = main(["forecast", str(path), "--at", "1971-01-01"])
    assert code == 2 and "--at and --over need --time" in capsys.readouterr().err
    code = main(["forecast", str(path), "--time", "time", "--at", "1971-02-01", "--delta", "5"])
    assert code == 2 and "--delta: for logs of episodes" in capsys.readouterr().err
    code = main(["forecast", str(path), "--time", "time", "--at", "1971-02-01", "--n-boot", "500"])
    assert code == 2 and "--n-boot: for logs of episodes" in capsys.readouterr().err
    code = main(["forecast", str(path), "--time", "time", "--at", "1971-02-01", "--interval",
                 "mean", "--json", str(out_json)])  # fmt: skip
    assert code == 0 and "90% mean interval" in capsys.readouterr().out
    mean = json.loads(out_json.read_text())
    assert mean["interval"] == "mean" and mean["value"] == pytest.approx(summary["value"])
    assert mean["high"] - mean["low"] < summary["high"] - summary["low"]


# -- the model average on its own ---------------------------------------------------------


@pytest.mark.parametrize(
    "truth, expected",
    [
        (lambda t: np.zeros_like(t), "const"),
        (lambda t: 0.004 * t, "const+trend"),
        (lambda t: np.where(t >= 0.6 * 365, 1.0, 0.0), "const+step("),
        (lambda t: np.sin(2 * np.pi * t / YEAR), "const+season(365.25D,k="),
        (lambda t: 0.5 * (np.floor(t) % 7 == 5), "+blocks(dow)"),
    ],
)
def test_the_average_puts_its_weight_on_the_shape_of_a_near_noiseless_log(truth, expected):
    t = np.arange(0.0, 365.0, 0.5)
    y = truth(t) + np.random.default_rng(0).normal(0, 0.05, t.size)
    b = bin_estimates(y, t)
    avg = ModelAverage(b, bin_noise(y, t, b))
    assert expected in avg.top, avg.top
    value, low, high = avg.predict([("at", 400.0)], alpha=0.1)
    assert low[0] <= value[0] <= high[0]
    assert value[0] == pytest.approx(truth(np.array([400.0]))[0], abs=0.05)


def test_default_models_need_a_year_for_yearly_terms_and_two_weeks_for_weekdays():
    names = [m.name for m in default_time_models(0.0, 300.0)]
    assert not any("365.25" in n for n in names) and any("dow" in n for n in names)
    names = [m.name for m in default_time_models(0.0, 10.0)]
    assert not any("dow" in n for n in names)


def test_user_models_and_time_model_terms():
    gen, d, frame = year_log("trend", n=2000, seed=10)
    f = forecast_value(frame, "pi_", at=YEAR + 50, candidates=[trend(), season(YEAR), step(100)])
    assert f.model == "const+trend"
    assert set(f.weights) == {"const+trend", "const+season(365.25D,k=1)", "const+step(100)"}
    # a sum of terms, a list of terms and a TimeModel are each one candidate
    models = [trend() + season(YEAR), [trend(), step(100)], TimeModel((season(YEAR),))]
    f = forecast_value(frame, "pi_", at=YEAR + 50, candidates=models)
    assert set(f.weights) == {
        "const+trend+season(365.25D,k=1)",
        "const+trend+step(100)",
        "const+season(365.25D,k=1)",
    }
    with pytest.raises(ValueError, match="candidates: terms must be"):
        forecast_value(frame, "pi_", at=YEAR + 50, candidates=["trend"])


def test_step_term_is_a_persistent_shift_with_exact_window_averages():
    s = step(10.0)
    assert s.columns(np.array([9.0, 10.0, 11.0]), 0, 20)[:, 0].tolist() == [0.0, 1.0, 1.0]
    assert s.window(5.0, 15.0, 0, 20, 100)[0] == pytest.approx(0.5)
    assert s.window(12.0, 15.0, 0, 20, 100)[0] == 1.0
    assert step(np.datetime64("1970-01-11")).at == 10.0
    with pytest.raises(ValueError, match="at must be a finite time"):
        step(float("nan"))


def test_round_estimates_take_a_time_model_as_the_reward_models_time_inputs():
    from pyprog.offpolicy import round_estimates
    from pyprog.timeseries import blocks

    gen, d, frame = year_log("weekday", n=2000, seed=11)
    keys = ("context", "times", "action", "reward", "pscore", "action_dist")
    plain = round_estimates(*(d[k] for k in keys), random_state=0)
    timed = round_estimates(
        *(d[k] for k in keys), time_feature=trend() + blocks(DayOfWeek()), random_state=0
    )
    assert timed.values.shape == (2000,) and not np.allclose(timed.values, plain.values)
    # the day-of-week inputs let q̂ follow the drift: smaller DR residual spread
    assert timed.values.std() < plain.values.std()


def test_the_interval_holds_twins_the_log_cannot_tell_apart():
    """A step at half the year and two blocks of the year fit a one-year log alike; a year
    later they part by the step's size. Both share the weight, and the interval holds
    both forecasts (the cascade needed a hull of the plausible models for this)."""
    t = np.arange(0.0, 365.0) + 0.5
    y = 1.0 * (t >= YEAR / 2) + np.random.default_rng(0).normal(0, 0.3, t.size)
    b = bin_estimates(y, t)
    twins = [TimeModel((step(YEAR / 2),)), TimeModel((blocks(PeriodBlocks(YEAR, 2)),))]
    goal = [("at", 400.0)]  # block 0 next year: the twins forecast 1 and 0
    f = [ModelAverage(b, bin_noise(y, t, b), candidates=[m]).predict(goal)[0][0] for m in twins]
    assert f[0] == pytest.approx(1.0, abs=0.1) and f[1] == pytest.approx(0.0, abs=0.1)
    avg = ModelAverage(b, bin_noise(y, t, b), candidates=[TimeModel(()), *twins])
    assert min(avg.weights[m.name] for m in twins) > 0.2
    _, low, high = avg.predict(goal)
    assert low[0] <= min(f) and high[0] >= max(f), (low, high, f)


@pytest.mark.parametrize("halves", [0.0, 0.5])
def test_the_interval_holds_a_faint_day_of_week(halves):
    """Saturdays 0.1 lower under daily noise of sd 0.3, alone (seed 19) or beside two
    halves of the year 0.5 apart (seed 1): the cascade's gates kept the day of week out
    and needed a widening for each; here its weight carries it into the interval."""
    t = np.arange(0.0, 365.0) + 0.5
    saturday = np.floor(t + 3).astype(int) % 7 == 5  # day 0 is a Thursday
    seed = 19 if halves == 0 else 1
    noise = np.random.default_rng(seed).normal(0, 0.3, t.size)
    y = halves * (t >= YEAR / 2) - 0.1 * saturday + noise
    b = bin_estimates(y, t)
    avg = ModelAverage(b, bin_noise(y, t, b))
    _, low, high = avg.predict([("at", 401.5)], kind="mean")  # a Saturday, first half
    assert low[0] <= -0.1 <= high[0], (low, high, avg.top)


def test_a_context_or_policy_column_of_text_is_named():
    gen, d, frame = year_log("stationary", n=600, seed=12)
    bad = dict(frame, x3=np.array(["a"] * 600))
    with pytest.raises(ValueError, match="context: column 'x3' must hold numbers"):
        forecast_value(bad, "pi_", at=YEAR + 10)
    bad = dict(frame, pi_2=np.array(["0.1"] * 600))
    with pytest.raises(ValueError, match="policy: column 'pi_2' must hold numbers"):
        forecast_value(bad, "pi_", at=YEAR + 10)


def test_the_fixed_truth_script_reports_coverage_per_cell_and_horizon():
    """``tests/value_fixed_truth.py`` (the slow fixed-truth grid), on 2 small logs: the
    cell's coverage, one entry per fixed horizon, and its table row."""
    from value_fixed_truth import HORIZONS, one_cell, table

    r = one_cell("step", {"step_at": 0.3}, "at 0.3", 2, 1500, 0)
    assert r["cell"] == "step at 0.3" and r["logs"] == 2 and r["refused"] == 0
    assert list(r["by_horizon"]) == [f"{h:g}" for h in HORIZONS]
    assert 0.0 <= r["coverage"] <= 1.0 and r["median_width"] > 0
    assert table([r]).splitlines()[2].startswith("| step at 0.3 | ")
