"""Forecasters in time (pyprog.timeseries.models): linear in y, exact in span, HC2."""

import numpy as np
import pytest

from pyprog.timeseries import (
    DayOfWeek,
    PeriodBlocks,
    TimeForecast,
    blocks,
    parse_period,
    season,
    time_forecast,
    trend,
)

YEAR = 365.25


def _log(n=300, span=730.0, seed=0):
    rng = np.random.default_rng(seed)
    return np.sort(rng.uniform(0.0, span, n)), rng


def test_zeta_dot_y_is_the_forecast_and_zeta_sums_to_one():
    t, rng = _log()
    y = rng.normal(size=t.size)
    model = trend() + season("365D", harmonics=2) + blocks(DayOfWeek())
    for kwargs in ({"at": 800.0}, {"over": (760.0, 790.0)}):
        f = time_forecast(y, t, model, weights=rng.uniform(0.5, 2.0, t.size), **kwargs)
        assert isinstance(f, TimeForecast)
        assert f.zeta.shape == (t.size,)
        assert f.zeta @ y == pytest.approx(f.value, abs=1e-12)
        assert f.zeta.sum() == pytest.approx(1.0, abs=1e-10)
    assert f.model == "const+trend+season(365D,k=2)+blocks(dow)"
    d = f.as_dict()
    assert d["target"] == ["over", 760.0, 790.0] and d["n"] == t.size
    assert d["low"] < d["value"] < d["high"]


def test_matches_lstsq_on_a_random_design():
    t, rng = _log(n=120)
    y = rng.normal(size=t.size)
    w = rng.uniform(0.2, 3.0, t.size)
    model = trend() + season(30.0, harmonics=3) + blocks(PeriodBlocks(YEAR, 4))
    f = time_forecast(y, t, model, at=760.0, weights=w)
    t0, t1 = t.min(), t.max()
    X = model.design(t, t0, t1)
    sw = np.sqrt(w)
    beta = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)[0]
    x_star = model.design(np.array([760.0]), t0, t1)[0]
    assert f.value == pytest.approx(x_star @ beta, abs=1e-10)
    # HC2 by the textbook formula
    A = np.linalg.inv(X.T @ (w[:, None] * X))
    h = w * np.einsum("ij,jk,ik->i", X, A, X)
    e = y - X @ beta
    zeta = w * (X @ A @ x_star)
    assert f.zeta == pytest.approx(zeta, abs=1e-10)
    assert f.se == pytest.approx(np.sqrt(np.sum(zeta**2 * e**2 / (1 - h))), rel=1e-10)


def test_exact_on_a_noise_free_yearly_sinusoid_plus_trend():
    t, _ = _log(n=200, span=2 * YEAR)
    truth = lambda s: 2.0 - 0.3 * s / YEAR + 0.7 * np.cos(2 * np.pi * s / YEAR + 0.4)  # noqa: E731
    target = t.max() + 100.0
    f = time_forecast(truth(t), t, trend() + season("365.25D"), at=target)
    assert f.value == pytest.approx(truth(target), abs=1e-8)
    assert f.se < 1e-8


def test_window_average_equals_mean_of_point_forecasts_on_a_fine_grid():
    t, rng = _log()
    y = rng.normal(size=t.size)
    model = trend() + season(YEAR, harmonics=2) + season("7D") + blocks(DayOfWeek())
    # whole days, so that both midpoint grids give each day of the week its exact share;
    # what is left is the midpoint rule's error on the weekly cosine (~1e-6)
    a, b = 745.0, 790.0
    f = time_forecast(y, t, model, over=(a, b), n_points=45_000)
    grid = a + (np.arange(4500) + 0.5) * (b - a) / 4500
    points = [time_forecast(y, t, model, at=s, alpha=None).value for s in grid]
    assert f.value == pytest.approx(np.mean(points), abs=1e-5)
    # without blocks the window is closed-form: a very fine grid matches to 1e-7
    smooth = trend() + season(YEAR, harmonics=2)
    g = time_forecast(y, t, smooth, over=(a, b + 0.37))
    grid = a + (np.arange(4500) + 0.5) * (b + 0.37 - a) / 4500
    pts = [time_forecast(y, t, smooth, at=s, alpha=None).value for s in grid]
    assert g.value == pytest.approx(np.mean(pts), abs=1e-7)


def test_noise_only_interval_covers_on_a_correctly_specified_model():
    rng = np.random.default_rng(33)
    t = np.sort(rng.uniform(0.0, 2 * YEAR, 200))
    model = trend() + season(YEAR)
    target = t.max() + 60.0
    truth = lambda s: 1.0 + 0.2 * s / YEAR + 0.5 * np.sin(2 * np.pi * s / YEAR)  # noqa: E731
    sd = 0.5 + 0.5 * (t / t.max())  # heteroskedastic noise
    reps, hits = 400, 0
    for _ in range(reps):
        y = truth(t) + sd * rng.normal(size=t.size)
        f = time_forecast(y, t, model, at=target, alpha=0.1)
        hits += f.low <= truth(target) <= f.high
    cover = hits / reps
    se = np.sqrt(0.9 * 0.1 / reps)
    assert abs(cover - 0.9) <= 3 * se, (cover, se)


def test_parse_period_and_names():
    assert parse_period("7D") == 7.0
    assert parse_period("24h") == 1.0
    assert parse_period("2W") == 14.0
    assert parse_period(365.25) == 365.25
    assert (trend() + season("365D", harmonics=2)).name == "const+trend+season(365D,k=2)"
    assert blocks(PeriodBlocks(YEAR, 8)).name == "blocks(365.25D/8)"
    assert sum([trend(), season(7)]).name == "const+trend+season(7D,k=1)"
    for bad in ("7 days", "0D", -3, True, None):
        with pytest.raises(ValueError, match="period"):
            parse_period(bad)
    with pytest.raises(ValueError, match="harmonics"):
        season(7, harmonics=0)
    with pytest.raises(ValueError, match="feature"):
        blocks(object())


def test_dates_are_days_since_the_epoch():
    t = np.datetime64("2023-01-01") + np.arange(0, 400, 2).astype("timedelta64[D]")
    days = t.astype("datetime64[ns]").astype(np.int64) / 86400e9
    y = np.cos(2 * np.pi * days / 7.0)
    f = time_forecast(y, t, season("7D"), at=np.datetime64("2024-03-01"))
    g = time_forecast(y, days, season("7D"), at=19783.0)
    assert f.target[1] == pytest.approx(19783.0)
    assert f.value == pytest.approx(np.cos(2 * np.pi * 19783.0 / 7.0), abs=1e-10)
    assert g.value == pytest.approx(f.value, abs=1e-12)


def test_errors_name_the_argument():
    t, rng = _log(n=50)
    y = rng.normal(size=t.size)
    with pytest.raises(ValueError, match="at must be after the log"):
        time_forecast(y, t, trend(), at=t.max())
    with pytest.raises(ValueError, match="over must start after the log"):
        time_forecast(y, t, trend(), over=(t.max() - 1, t.max() + 5))
    with pytest.raises(ValueError, match="t1 < t2"):
        time_forecast(y, t, trend(), over=(800.0, 790.0))
    with pytest.raises(ValueError, match="exactly one of at"):
        time_forecast(y, t, trend())
    with pytest.raises(ValueError, match="exactly one of at"):
        time_forecast(y, t, trend(), at=800.0, over=(800.0, 810.0))
    with pytest.raises(ValueError, match=r"level\(s\) \[6, 7\] never observed"):
        tb, _ = _log(n=300, span=250.0)
        time_forecast(np.ones(300), tb, blocks(PeriodBlocks(YEAR, 8)), at=800.0)
    with pytest.raises(ValueError, match="rank-deficient"):
        time_forecast(y, t, season(YEAR) + season(YEAR), at=800.0)
    with pytest.raises(ValueError, match=r"has 6 units.*needs at least 7 units"):
        time_forecast(y[:6], t[:6], trend() + season(YEAR, harmonics=2), at=800.0)
    y_nan = y.copy()
    y_nan[3] = np.nan
    with pytest.raises(ValueError, match="y must be finite; got nan at row 3"):
        time_forecast(y_nan, t, trend(), at=800.0)
    t_nan = t.copy()
    t_nan[4] = np.nan
    with pytest.raises(ValueError, match="times must be finite"):
        time_forecast(y, t_nan, trend(), at=800.0)
    with pytest.raises(ValueError, match="times must have one entry per estimate"):
        time_forecast(y, t[:-1], trend(), at=800.0)
    with pytest.raises(ValueError, match="weights must have one entry"):
        time_forecast(y, t, trend(), at=800.0, weights=np.ones(3))
    with pytest.raises(ValueError, match="weights must be finite and > 0"):
        time_forecast(y, t, trend(), at=800.0, weights=np.zeros(t.size))
    with pytest.raises(ValueError, match="alpha"):
        time_forecast(y, t, trend(), at=800.0, alpha=1.5)
    with pytest.raises(ValueError, match="at must be a finite time"):
        time_forecast(y, t, trend(), at=np.inf)
    with pytest.raises(ValueError, match="terms must be"):
        time_forecast(y, t, "trend", at=800.0)
    with pytest.raises(ValueError, match="leverage 1"):
        tt = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 7.0])  # level 1 seen once
        time_forecast(np.arange(6.0), tt, blocks(PeriodBlocks(12.0, 2)), at=20.0)
