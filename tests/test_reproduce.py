"""pyprog reproduce on a tiny protocol: figures, tables, summary, resume, store settings."""

import csv

import numpy as np
import pytest

from pyprog import plots
from pyprog.hyperparams import paper_hyper
from pyprog.reproduce import CLAIMS, Plan, claims, reproduce, zeta_weights
from pyprog.store import ResultStore

TINY = Plan(
    name="tiny",
    speeds={"reco": (0, 3), "reacher": (2,), "diabetes": (2,)},
    seeds={"reco": 2, "reacher": 2, "diabetes": 2},
    episodes={"reco": 60, "reacher": 4, "diabetes": 3},
    ablation_speeds=(3,),
    ablation_seeds=2,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    result = reproduce(out, plan=TINY, jobs=2)
    return out, result


def test_outputs(tiny):
    out, result = tiny
    for name in result["figures"]:
        assert (out / name).stat().st_size > 5000, name
    assert {"fig3_reco_regret_vs_speed.png", "fig4_zeta.png", "ablation_basis.png"} <= set(
        result["figures"]
    )
    assert "curves_reacher_speed2.png" in result["figures"]
    with (out / "regret.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 * (2 + 1 + 1)
    assert {r["metric"] for r in rows if r["env"] == "reco"} == {"regret"}
    assert {r["metric"] for r in rows if r["env"] != "reco"} == {"surrogate regret"}
    with (out / "ablation.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 2 * 3  # 2 algos x 3 bases x 1 speed


def test_summary_states_every_claim(tiny):
    out, result = tiny
    text = (out / "summary.md").read_text()
    for claim in CLAIMS.values():
        assert claim in text
    assert len(result["claims"]) == len(CLAIMS)
    # the zeta claim is pure arithmetic: it must hold
    zeta = next(c for c in result["claims"] if c["claim"] == CLAIMS["zeta"])
    assert zeta["held"] is True


def test_every_run_is_in_the_store_and_a_rerun_reuses_them(tiny):
    out, _ = tiny
    with ResultStore(out / "runs.sqlite", readonly=True) as store:
        n = len(store)
    assert n == 4 * (2 * 2 + 2 + 2) + 2 * 2 * 2  # main runs + the two non-Fourier ablation bases
    again = reproduce(out, plan=TINY, jobs=1)
    with ResultStore(out / "runs.sqlite", readonly=True) as store:
        assert len(store) == n
    assert again["seconds"] < 60


def test_store_best_settings_replace_the_papers(tmp_path):
    # a "sweep" that ran one custom setting of pro-ols at speed 0 on NS-Reco
    from pyprog.sweep import SweepTask, run_sweep

    custom = paper_hyper("reco", "pro-ols", 0).replace(lr=0.02, delta=2)
    run_sweep(
        [SweepTask("reco", "pro-ols", 0.0, 0, custom, 0, 60)], str(tmp_path / "s.sqlite"), jobs=1
    )
    plan = Plan("t", {"reco": (0,)}, {"reco": 1}, {"reco": 60}, (), 1)
    reproduce(tmp_path / "out", store=tmp_path / "s.sqlite", envs=("reco",), plan=plan, jobs=1)
    with ResultStore(tmp_path / "out" / "runs.sqlite", readonly=True) as store:
        used = {r.algo: r.hyper for r in store.rows(env="reco")}
    assert "pro-ols" not in used  # the sweep's run was reused, not run again
    assert used["onpg"] == paper_hyper("reco", "onpg", 0).to_dict()
    assert "best of the sweep store" in (tmp_path / "out" / "summary.md").read_text()
    table = list(csv.DictReader((tmp_path / "out" / "regret.csv").open()))
    assert {r["algo"] for r in table} == {"pro-ols", "pro-wls", "onpg", "ftrl-pg"}


def test_reproduce_does_not_change_what_best_answers(tmp_path, capsys):
    """``reproduce --store S`` only reads S: ``best --store S`` answers the same before and
    after, and S is unchanged byte for byte, although the reproduction ran more seeds of the
    sweep's best settings, the paper's settings and the ablation's other bases."""
    from pyprog.cli import main
    from pyprog.sweep import SweepTask, run_sweep

    sweep = tmp_path / "s.sqlite"
    settings = [paper_hyper("reco", "pro-wls", 3).replace(lr=lr) for lr in (0.002, 0.02)]
    tasks = [
        SweepTask("reco", "pro-wls", 3.0, k, h, seed, 60)
        for k, h in enumerate(settings)
        for seed in (0, 1)
    ]
    run_sweep(tasks, str(sweep), name="mine", jobs=1)
    assert main(["best", "--store", str(sweep), "--json", "-"]) == 0
    before, bytes_before = capsys.readouterr(), sweep.read_bytes()
    plan = Plan("t", {"reco": (3,)}, {"reco": 3}, {"reco": 60}, (3,), 3)
    reproduce(tmp_path / "out", store=sweep, envs=("reco",), plan=plan, jobs=2)
    assert main(["best", "--store", str(sweep), "--json", "-"]) == 0
    after = capsys.readouterr()
    assert (after.out, after.err) == (before.out, before.err)
    assert sweep.read_bytes() == bytes_before
    with ResultStore(tmp_path / "out" / "runs.sqlite", readonly=True) as store:
        mine = [r for r in store.rows(algo="pro-wls") if r.hyper["basis"] == "fourier"]
    assert [r.seed for r in mine] == [2]  # seeds 0 and 1 of the best setting were reused


def test_missing_sweep_store_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        reproduce(tmp_path / "out", store=tmp_path / "nothing.sqlite", plan=TINY, envs=("reco",))
    assert not (tmp_path / "nothing.sqlite").exists()


def test_claim_logic():
    table = [
        dict(env="reco", algo=a, speed=s, metric="regret", mean=m, se=1.0, seeds=5)
        for s, means in {3: (10, 12, 50, 60), 4: (10, 70, 50, 60), 0: (10, 11, 12, 13)}.items()
        for a, m in zip(("pro-ols", "pro-wls", "onpg", "ftrl-pg"), means, strict=True)
    ]
    out = {c["claim"]: c["held"] for c in claims(table, [], zeta_weights())}
    assert out[CLAIMS["reco_fast"]] is False  # pro-wls 70 > onpg 50 at speed 4
    assert out[CLAIMS["reco_stationary"]] is True
    assert out[CLAIMS["reacher"]] is None and out[CLAIMS["ablation"]] is None


def test_zeta_weights_of_fig4():
    zeta = zeta_weights(99)
    for name, z in zeta.items():
        assert z.shape == (99,) and z.sum() == pytest.approx(1.0), name
    np.testing.assert_allclose(zeta["constant"], 1 / 99)
    assert zeta["identity"][0] < 0 < zeta["identity"][-1]


def test_running_mean_and_plots(tmp_path):
    np.testing.assert_allclose(plots.running_mean(np.arange(5.0), 2), [0, 0.5, 1.5, 2.5, 3.5])
    fig = plots.plot_learning_curves(
        {"pro-ols": np.ones((3, 40))}, window=5, path=tmp_path / "c.png"
    )
    assert (tmp_path / "c.png").stat().st_size > 0 and fig.axes[0].get_xlabel() == "episode"


def test_figures_say_what_their_bars_are_and_speeds_are_integers(tmp_path):
    table = [
        dict(algo=a, speed=s, mean=m, se=1.0, seeds=5, metric="regret")
        for a, m in (("pro-ols", 1.0), ("onpg", 2.0))
        for s in (0, 1, 2, 3, 4)
    ]
    fig = plots.plot_regret_vs_speed(table)
    ax = fig.axes[0]
    assert ax.get_legend().get_title().get_text() == "bars: ± 1 standard error over 5 seeds"
    fig.canvas.draw()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    fig = plots.plot_learning_curves({"onpg": np.ones((3, 40)), "pro-ols": np.ones((3, 40))})
    assert fig.axes[0].get_legend().get_title().get_text() == (
        "bands: ± 1 standard error over 3 seeds"
    )
    ablation = [dict(r, basis="fourier") for r in table]
    fig = plots.plot_basis_ablation(ablation)
    for ax in fig.axes:
        assert "standard error over 5 seeds" in ax.get_legend().get_title().get_text()
        fig.canvas.draw()
        assert all(float(t).is_integer() for t in ax.get_xticks())
