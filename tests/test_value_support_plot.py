"""Support diagnostics of the importance weights, the value forecast's picture, and the
command line's several targets and --plot (issue 51)."""

import json
import warnings

import numpy as np
import pytest

from pyprog.logs.rounds import check_rounds
from pyprog.offpolicy.support import (
    RARE_PSCORE,
    Support,
    SupportWarning,
    support_diagnostics,
)
from pyprog.value.forecast import forecast_value
from pyprog.value.plot import plot_value_forecasts


def readme_log(n: int = 4000, seed: int = 0) -> tuple[dict, np.ndarray]:
    """The README's example: a year of rounds, uniform logging over 2 actions, π_e = 1."""
    rng = np.random.default_rng(seed)
    days = np.sort(rng.uniform(0, 365, n))
    x = rng.normal(size=(n, 2))
    a = rng.integers(0, 2, n)
    season = np.sin(2 * np.pi * days / 365.25)
    r = np.where(a == 1, 1 + 0.5 * season + 0.3 * x[:, 0], 0.8) + rng.normal(0, 1, n)
    stamps = np.datetime64("2023-01-01") + (days * 86400).astype("timedelta64[s]")
    log = dict(time=stamps, x0=x[:, 0], x1=x[:, 1], action=a, reward=r, pscore=np.full(n, 0.5))
    return log, np.tile([0.0, 1.0], (n, 1))


def rare_action_log(n: int = 3000, seed: int = 1) -> tuple[dict, np.ndarray]:
    """π₀ plays action 2 with probability 2e-4 (it is logged a few times); π_e plays it 0.3."""
    rng = np.random.default_rng(seed)
    p0 = np.array([0.5 - 1e-4, 0.5 - 1e-4, 2e-4])
    a = rng.choice(3, size=n, p=p0)
    while not (a == 2).any():  # the action must be in the log, or it is refused (tested below)
        a = rng.choice(3, size=n, p=p0)
    t = np.sort(rng.uniform(0, 120, n))
    log = {"time": t, "action": a, "reward": rng.normal(size=n), "pscore": p0[a]}
    return log, np.tile([0.35, 0.35, 0.3], (n, 1))


# -- the diagnostics -------------------------------------------------------------------


def test_the_diagnostics_are_their_formulas():
    rng = np.random.default_rng(3)
    n, A = 500, 4
    p0 = rng.dirichlet(np.ones(A), size=n)
    a = np.array([rng.choice(A, p=p) for p in p0])
    ps = p0[np.arange(n), a]
    pe = rng.dirichlet(np.ones(A), size=n)
    t = rng.uniform(0, 10, n)
    s = support_diagnostics(pe, check_rounds(None, t, a, np.zeros(n), ps, A))
    w = pe[np.arange(n), a] / ps
    assert s.ess == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-12)
    assert s.ess_share == pytest.approx(s.ess / n)
    assert s.max_weight_share == pytest.approx(w.max() / w.sum(), rel=1e-12)
    rare = ps < RARE_PSCORE
    assert s.rare_mass == pytest.approx(w[rare].sum() / n)
    counts = np.bincount(np.floor(t).astype(int))
    counts = counts[counts > 0]
    assert s.rounds_per_bin == (counts.min(), np.median(counts), counts.max())


def test_the_rare_mass_is_an_unbiased_estimate_of_pi_e_mass_where_pi_0_is_rare():
    # π₀(2) = 5e-4 < RARE_PSCORE, π_e(2) = 0.2: the estimate averages to 0.2 over logs
    # (200 logs of 20,000 rounds; its sd is about sqrt(0.2 · 0.2 / 5e-4 / 20,000) = 0.063)
    p0, pe, n = np.array([0.6, 0.3995, 5e-4]), np.array([0.5, 0.3, 0.2]), 20_000
    rng = np.random.default_rng(11)
    est = []
    for _ in range(200):
        a = rng.choice(3, size=n, p=p0)
        r = check_rounds(None, np.arange(n) / 100.0, a, np.zeros(n), p0[a], 3)
        est.append(support_diagnostics(np.tile(pe, (n, 1)), r).rare_mass)
    mean, se = np.mean(est), np.std(est, ddof=1) / np.sqrt(len(est))
    assert abs(mean - 0.2) < 4 * se, (mean, se)  # a z-test at |z| < 4


def test_zero_weights_give_zero_diagnostics_not_nan():
    r = check_rounds(None, [0.0, 1.0], [0, 0], [1.0, 1.0], [0.5, 0.5], 2)
    s = support_diagnostics(np.tile([0.0, 1.0], (2, 1)), r)
    assert (s.ess, s.max_weight_share, s.rare_mass) == (0.0, 0.0, 0.0)
    assert any("effective sample size" in p for p in s.problems())


def test_each_problem_says_what_to_do():
    s = Support(1000, 5.0, 0.3, 0.2, {2: 0.2}, (1.0, 3.0, 9.0))
    problems = s.problems()
    assert len(problems) == 3
    assert "action 2 (0.2)" in problems[0] and "log them more often" in problems[0]
    assert "estimator='dr'" in problems[1] and "0.50%" in problems[1]
    assert "30.00% of the total" in problems[2]
    assert Support(1000, 500.0, 0.01, 0.0, {}, (1.0, 3.0, 9.0)).problems() == []
    summary = json.loads(json.dumps(s.as_dict()))
    assert summary["rare_actions"] == {"2": 0.2} and summary["ess_share"] == 0.005


# -- in forecast_value -------------------------------------------------------------------


def test_the_readme_example_warns_of_nothing_and_carries_its_diagnostics():
    log, pi = readme_log()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SupportWarning)
        f = forecast_value(log, pi, at="2024-03-01")
    assert f.support.n_rounds == 4000 and 0.4 < f.support.ess_share < 0.6
    assert f.support.rare_mass == 0.0 and f.support.rare_actions == {}
    assert json.loads(json.dumps(f.as_dict()))["support"]["ess"] == pytest.approx(f.support.ess)


def test_a_policy_on_an_action_the_logging_policy_almost_never_takes_is_warned_of_by_name():
    log, pi = rare_action_log()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = forecast_value(log, pi, at=125.0, context=None)
    assert all(w.category is SupportWarning for w in caught) and len(caught) == 3
    assert "action 2 (" in str(caught[0].message)  # the rare mass, then ESS and largest weight
    assert all(w.filename == __file__ for w in caught)  # each points at the caller's line
    assert list(f.support.rare_actions) == [2] and f.support.rare_mass > 0.01


def test_an_action_the_logging_policy_never_takes_is_refused_by_name():
    log, pi = rare_action_log()
    keep = log["action"] != 2
    log = {k: v[keep] for k, v in log.items()}
    with pytest.raises(ValueError, match="mass on action 2, which the log never played"):
        forecast_value(log, pi[keep], at=125.0, context=None)


def test_a_policy_that_changes_with_time_gets_the_diagnostics_of_each_target():
    log, _ = readme_log(n=2000)

    def policy(x, t):  # action 1 until February 2024, then a coin
        p1 = np.where(t < 19754.0, 1.0, 0.5)  # 19754 = 2024-02-01 in days since 1970
        return np.column_stack([1 - p1, p1])

    before, after = forecast_value(log, policy, at=["2024-01-15", "2024-03-01"], n_actions=2)
    assert before.support.ess_share < after.support.ess_share == pytest.approx(1.0)


# -- the picture ----------------------------------------------------------------------


def test_plot_draws_the_bins_the_model_and_each_target(tmp_path):
    log, pi = readme_log(n=2000)
    fs = forecast_value(log, pi, at=["2024-01-15", "2024-03-01"])
    fig = plot_value_forecasts(fs, tmp_path / "f.png")
    left, right = fig.axes
    assert left.get_xlabel() == "date (UTC)"
    labels = [t.get_text() for t in left.get_legend().get_texts()]
    assert any(s.startswith("model in time (") for s in labels)
    assert "90% prediction band, day by day" in labels and "forecast and its interval" in labels
    # one errorbar per bin and one per target; the targets' intervals are the results'
    bars = [c for c in left.containers if type(c).__name__ == "ErrorbarContainer"]
    assert len(bars) == 3
    for bar, f in zip(bars[1:], fs, strict=True):
        (seg,) = bar.lines[2]
        assert seg.get_segments()[0][:, 1] == pytest.approx([f.low, f.high])
    assert (tmp_path / "f.png").stat().st_size > 10_000
    # a window, on a log in days: the window is shaded and the axis says days
    days = dict(log, time=np.linspace(0, 365, 2000))
    g = forecast_value(days, pi, over=(380.0, 400.0))
    fig = g.plot()
    assert fig.axes[0].get_xlabel() == "time (days)" and fig.axes[1].patches


def test_plot_refuses_what_it_cannot_draw():
    log, pi = readme_log(n=2000)
    a = forecast_value(log, pi, at="2024-01-15")
    b = forecast_value(log, pi, at="2024-01-20")
    with pytest.raises(ValueError, match="must come from one fit"):
        plot_value_forecasts([a, b])
    with pytest.raises(ValueError, match="at least one ValueForecast"):
        plot_value_forecasts([])
    with pytest.raises(ValueError, match="keeps its model average; got float"):
        plot_value_forecasts([1.0])


# -- the command line -----------------------------------------------------------------------


def test_cli_takes_several_targets_in_one_fit_and_draws_them(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    from pyprog.cli.main import main

    log, pi = readme_log(n=2000)
    frame = pd.DataFrame(dict(log, pi_0=pi[:, 0], pi_1=pi[:, 1]))
    frame["time"] = [str(s)[:19] for s in log["time"]]
    path = tmp_path / "rounds.csv"
    frame.to_csv(path, index=False)
    out, png = tmp_path / "out.json", tmp_path / "f.png"
    code = main(["forecast", str(path), "--time", "time", "--at", "2024-01-15", "2024-03-01",
                 "--json", str(out), "--plot", str(png)])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    rows = [line for line in printed.splitlines() if line.startswith("2024-")]
    assert [r.split()[0] for r in rows] == ["2024-01-15", "2024-03-01"]
    assert "support: ESS" in printed and png.stat().st_size > 10_000
    direct = forecast_value(path, "pi_", at=["2024-01-15", "2024-03-01"])
    summary = json.loads(out.read_text())
    assert [s["value"] for s in summary] == pytest.approx([f.value for f in direct])
    assert [s["target_utc"] for s in summary] == [["2024-01-15T00:00Z"], ["2024-03-01T00:00Z"]]
    assert summary[0]["support"]["n_rounds"] == 2000
    code = main(["forecast", str(path), "--time", "time", "--at", "2024-01-15",
                 "--plot", str(tmp_path / "f.nope")])  # fmt: skip
    assert code == 2 and "the suffix names the figure's format" in capsys.readouterr().err
    code = main(["forecast", str(path), "--time", "time", "--at", "2024-01-15", "2023-06-01"])
    err = capsys.readouterr().err
    assert code == 2 and "--at 2023-06-01 must be after the log" in err, err


def test_cli_loads_a_policy_that_changes_with_time_from_a_file(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    from pyprog.cli.main import main

    log, _ = readme_log(n=2000)
    frame = pd.DataFrame(log)
    frame["time"] = [str(s)[:19] for s in log["time"]]
    path = tmp_path / "rounds.csv"
    frame.to_csv(path, index=False)
    source = tmp_path / "policy.py"
    source.write_text(
        "import numpy as np\n\n\n"
        "def pi(context, times):  # action 1 from February 2024 (day 19754 since 1970)\n"
        "    p1 = np.where(times < 19754.0, 0.5, 1.0)\n"
        "    return np.column_stack([1 - p1, p1])\n"
    )
    out = tmp_path / "out.json"
    code = main(["forecast", str(path), "--time", "time", "--at", "2024-03-01",
                 "--policy", f"{source}:pi", "--json", str(out)])  # fmt: skip
    assert code == 0, capsys.readouterr()
    namespace: dict = {}
    exec(source.read_text(), namespace)
    direct = forecast_value(path, namespace["pi"], at="2024-03-01", n_actions=2)
    assert json.loads(out.read_text())["value"] == pytest.approx(direct.value, rel=1e-12)
    for policy, message in [
        (f"{tmp_path / 'none.py'}:pi", "cannot load"),
        (f"{source}:nope", "has no callable 'nope'"),
        ("no_such_module_here:pi", "cannot load no_such_module_here (ModuleNotFoundError"),
    ]:
        code = main(["forecast", str(path), "--time", "time", "--at", "2024-03-01",
                     "--policy", policy])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2 and f"--policy {policy}: " in err and message in err, err
    code = main(["forecast", str(path), "--time", "time", "--at", "2024-03-01",
                 "--n-actions", "2"])  # fmt: skip
    assert code == 2 and "--n-actions: only with --policy FILE.py:NAME" in capsys.readouterr().err
