"""pyprog reproduce on a tiny protocol: figures, tables, summary, resume, store settings."""

import csv
import json
import re

import numpy as np
import pytest

from pyprog.learn.hyperparams import ALGOS, paper_hyper
from pyprog.paper import (
    CLAIMS,
    FULL,
    QUICK,
    Plan,
    claims,
    stationary_margin,
    zeta_weights,
)
from pyprog.paper import figures as plots
from pyprog.paper.reproduce import reproduce
from pyprog.results.store import ResultStore
from pyprog.stats.verdicts import VERDICTS

#: Every kind of figure reproduce draws (names without their speed)
FIGURE_KINDS = {
    "fig3_reco_regret_vs_speed",
    "fig3_reacher_regret_vs_speed",
    "fig3_diabetes_regret_vs_speed",
    "curves_reco_speed",
    "curves_reacher_speed",
    "curves_diabetes_speed",
    "fig4_zeta",
    "ablation_basis",
    "reco_items",
    "diabetes_glucose_speed",
    "diabetes_cr_cf_speed",
}


def kinds(figures):
    return {re.sub(r"\d+\.png$|\.png$", "", name) for name in figures}


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
    assert kinds(result["figures"]) == FIGURE_KINDS
    assert {"diabetes_glucose_speed2.png", "diabetes_cr_cf_speed2.png"} <= set(result["figures"])
    with (out / "regret.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 * (2 + 1 + 1)
    assert {r["metric"] for r in rows if r["env"] == "reco"} == {"regret"}
    assert {r["metric"] for r in rows if r["env"] != "reco"} == {"surrogate regret"}
    with (out / "ablation.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 2 * 3  # 2 algos x 3 bases x 1 speed
    with (out / "diabetes_glucose.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 * 2  # per learner: an early and the last day
    assert all(0 <= float(r["time_in_range"]) <= 1 for r in rows)
    with (out / "diabetes_cr_cf.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 4 * 3  # per learner, every episode


def test_summary_and_claims_json_state_every_claim(tiny):
    out, result = tiny
    text = (out / "summary.md").read_text()
    for claim in CLAIMS.values():
        assert claim in text
    written = json.loads((out / "claims.json").read_text())
    assert [c["id"] for c in written] == list(CLAIMS)
    assert written == json.loads(json.dumps(result["claims"]))
    for c in written:
        assert {"id", "claim", "verdict", "test", "cases"} <= set(c)
        assert c["verdict"] in VERDICTS and c["test"]
    # the zeta claim is pure arithmetic: it must hold
    assert next(c for c in written if c["id"] == "zeta")["verdict"] == "held"
    # every table states its seeds and episodes
    assert "(mean ± standard error over 2 seeds, 60 episodes per run)" in text
    assert "| reco, basis ablation | 3 | 2 | 60 |" in text
    assert "the replay's returns equal the stored run's" in text


def test_the_policies_of_the_glucose_figures_are_the_stored_runs(tiny):
    _, result = tiny
    policies = result["policies"]
    assert policies["replays_store"] is True
    assert set(policies["actions"]) == set(ALGOS)
    assert policies["actions"]["onpg"].shape == (3, 2)
    trace = policies["glucose"]["pro-wls"][3]
    assert trace.bg.shape == (480,) and len(policies["meals"]) >= 1


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
    from pyprog.experiments.sweep import SweepTask, run_sweep

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
    # one seed: no standard error, so no test; claims.json stays strict JSON (null, not NaN)
    text = (tmp_path / "out" / "claims.json").read_text()
    written = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    stationary = next(c for c in written if c["id"] == "reco_stationary")
    assert stationary["verdict"] == "inconclusive"
    assert stationary["cases"][0]["se"] is None


def test_reproduce_does_not_change_what_best_answers(tmp_path, capsys):
    """``reproduce --store S`` only reads S: ``best --store S`` answers the same before and
    after, and S is unchanged byte for byte, although the reproduction ran more seeds of the
    sweep's best settings, the paper's settings and the ablation's other bases."""
    from pyprog.cli.main import main
    from pyprog.experiments.sweep import SweepTask, run_sweep

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


def _table(env, means, se=1.0, seeds=10):
    """A constructed regret table: {speed: (pro-ols, pro-wls, onpg, ftrl-pg) means}."""
    return [
        dict(env=env, algo=a, speed=s, metric="regret", mean=m, se=se, seeds=seeds, episodes=100)
        for s, row in means.items()
        for a, m in zip(ALGOS, row, strict=True)
    ]


def _verdicts(table, ablation=(), **kwargs):
    return {c["id"]: c["verdict"] for c in claims(table, list(ablation), zeta_weights(), **kwargs)}


def test_claim_verdicts_on_constructed_tables():
    clear = _table("reco", {3: (10, 12, 50, 60), 4: (10, 11, 50, 60)})
    out = _verdicts(clear)
    assert out["reco_fast"] == "held" and out["zeta"] == "held"
    # not run: untested (not "inconclusive", which means tested and undecided)
    assert out["reacher"] == out["diabetes"] == out["ablation"] == "untested"
    reversed_ = _table("reco", {3: (10, 12, 50, 60), 4: (10, 70, 50, 60)})
    assert _verdicts(reversed_)["reco_fast"] == "contradicted"  # pro-wls 70 > onpg 50
    noisy = _table("reco", {3: (50, 50, 50, 50), 4: (50, 50, 50, 50)}, se=20.0)
    assert _verdicts(noisy)["reco_fast"] == "inconclusive"


def test_diabetes_claims_split_the_stationary_speed():
    table = _table("diabetes", {0: (5, 4, 5, 5), 2: (5, 1, 5, 5), 4: (6, 1, 6, 6)}, se=0.5)
    out = claims(table, [], zeta_weights())
    by_id = {c["id"]: c for c in out}
    assert by_id["diabetes"]["verdict"] == "held"
    assert [c["case"] for c in by_id["diabetes"]["cases"]][:3] == [
        "speed 2: pro-wls < pro-ols",
        "speed 2: pro-wls < onpg",
        "speed 2: pro-wls < ftrl-pg",
    ]
    assert by_id["diabetes_stationary"]["verdict"] == "inconclusive"  # 4 vs 5 ± 0.7


def test_stationary_equivalence_uses_the_stated_margin():
    assert stationary_margin(1000) == pytest.approx(40.3, abs=0.01)
    close = _table("reco", {0: (20, 21, 22, 20)}, se=1.0, seeds=30)
    assert _verdicts(close, margin=10.0)["reco_stationary"] == "held"
    assert _verdicts(close, margin=0.5)["reco_stationary"] == "inconclusive"
    apart = _table("reco", {0: (20, 21, 90, 20)}, se=1.0, seeds=30)
    assert _verdicts(apart, margin=10.0)["reco_stationary"] == "contradicted"
    out = claims(close, [], zeta_weights(), margin=10.0)
    stationary = next(c for c in out if c["id"] == "reco_stationary")
    assert len(stationary["cases"]) == 6 and "±10" in stationary["test"]


def test_ablation_claim_compares_each_basis_with_linear():
    rows = [
        dict(algo=a, basis=b, speed=s, mean=m, se=2.0, seeds=10, episodes=100)
        for a in ("pro-ols", "pro-wls")
        for s in (2, 4)
        for b, m in {"fourier": 40, "poly": 50, "linear": 200}.items()
    ]
    out = claims([], rows, zeta_weights())
    ablation = next(c for c in out if c["id"] == "ablation")
    assert ablation["verdict"] == "held" and len(ablation["cases"]) == 2 * 2 * 2
    rows[1]["mean"] = 300  # pro-ols, speed 2: poly worse than linear
    assert _verdicts([], rows)["ablation"] == "contradicted"


def test_untested_claims_are_untested_with_the_reason():
    clear = _table("reco", {3: (10, 12, 50, 60), 4: (10, 11, 50, 60)})
    out = claims(clear, [], zeta_weights(), untested={"reco_fast": "too few seeds"})
    fast = next(c for c in out if c["id"] == "reco_fast")
    assert fast["verdict"] == "untested" and fast["test"] == "not tested: too few seeds"
    assert fast["headline"] == "untested"
    assert fast["cases"] == []


def test_a_claim_held_at_one_of_its_speeds_does_not_read_like_the_full_claim():
    """Issue 19: the headline list showed a bare `held` for reco_fast tested at speed 4."""
    only_4 = _table("reco", {4: (10, 11, 50, 60)})
    fast = next(c for c in claims(only_4, [], zeta_weights()) if c["id"] == "reco_fast")
    assert fast["verdict"] == "held" and fast["headline"] == "held at speed 4 only"
    both = _table("reco", {3: (10, 12, 50, 60), 4: (10, 11, 50, 60)})
    fast = next(c for c in claims(both, [], zeta_weights()) if c["id"] == "reco_fast")
    assert fast["headline"] == "held"


def test_the_quick_plan_draws_every_figure_kind_and_says_what_it_does_not_test():
    for plan in (QUICK, FULL):
        assert set(plan.speeds) == {"reco", "reacher", "diabetes"}
        assert all(len(plan.speeds[e]) >= 1 and plan.seeds[e] >= 2 for e in plan.speeds)
        assert plan.ablation_speeds and plan.glucose_speed in plan.speeds["diabetes"]
        assert set(plan.untested) <= set(CLAIMS)
    assert FULL.untested == {}
    with pytest.raises(ValueError, match=r"unknown claim.*reco_slow.*valid: reco_fast"):
        Plan("t", {"reco": (0,)}, {"reco": 2}, {"reco": 9}, (), 2, untested={"reco_slow": "x"})
    for reason in QUICK.untested.values():
        assert reason.count(". ") == 0  # one sentence


@pytest.mark.slow
def test_quick_writes_every_figure_kind_and_prints_the_verdicts(tmp_path, capsys):
    from pyprog.cli.main import main

    assert main(["reproduce", "--quick", "--out", str(tmp_path), "--jobs", "2", "--quiet"]) == 0
    printed = capsys.readouterr().out
    written = json.loads((tmp_path / "claims.json").read_text())
    figures = [p.name for p in tmp_path.glob("*.png")]
    assert kinds(figures) == FIGURE_KINDS
    for name in figures:
        assert (tmp_path / name).stat().st_size > 5000, name
    verdicts = {c["id"]: c["verdict"] for c in written}
    # held where the full protocol's cases hold (NS-Diabetes at speed 4, the ablation at 3)
    for claim in ("reco_fast", "diabetes", "zeta", "ablation"):
        assert verdicts[claim] == "held", claim
    scopes = {c["id"]: c["scope"] for c in written}
    assert scopes["diabetes"] == "tested at speed 4 of the claim's speeds 1, 2, 3, 4"
    assert scopes["ablation"] == "tested at speed 3 of the claim's speeds 2, 3, 4"
    assert scopes["reco_fast"] == "" and f"    ({scopes['diabetes']})" in printed
    assert "contradicted" not in verdicts.values()
    for c in written:
        assert f"[{c['verdict']}] {c['id']}: {c['claim']}" in printed
    for reason in QUICK.untested.values():
        assert reason in printed


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


def test_glucose_and_action_plots(tmp_path):
    bg = 150 + 60 * np.sin(np.arange(480) / 40)
    fig = plots.plot_glucose_days(
        {"pro-wls": {"day 1": bg, "day 9": bg + 10}, "onpg": {"day 1": bg}},
        meals=[(405, 36.0), (667, 92.0)],
        path=tmp_path / "g.png",
    )
    ax = fig.axes[0]
    assert (tmp_path / "g.png").stat().st_size > 5000
    assert ax.get_ylabel() == "blood glucose (mg/dL)" and ax.get_xlim() == (0, 24)
    assert [t.get_text() for t in ax.texts] == ["36 g", "92 g"]  # the meals
    band = ax.patches[0]  # the 70-180 target band
    assert (band.get_y(), band.get_y() + band.get_height()) == (70, 180)
    assert len(ax.get_lines()) == 2 + 1  # two days, and the meals' baseline at 0
    # issue 19: meal labels upright in a band below 0 mg/dL, where no curve goes
    assert ax.get_ylim()[0] < 0 and min(ax.get_yticks()) >= 0
    assert all(t.get_rotation() == 90 and t.xy[1] < 0 for t in ax.texts)
    fig = plots.plot_policy_actions(
        {"pro-ols": np.c_[np.linspace(16, 10, 50), np.linspace(27, 40, 50)]},
        bounds=[(3, 30), (5, 50)],
        context=("alpha", np.linspace(1, 0, 50)),
        path=tmp_path / "a.png",
    )
    assert [a.get_ylabel() for a in fig.axes] == ["CR (g/U)", "CF (mg/dL per U)", "alpha"]
    np.testing.assert_allclose(fig.axes[1].get_lines()[0].get_ydata()[-1], 40)


def test_a_single_speed_plot_spans_one_speed_either_side():
    """Issue 19: one speed gave an axis of 2.84-3.16."""
    table = [
        dict(algo=a, speed=3, mean=m, se=1.0, seeds=5) for a, m in (("onpg", 1), ("pro-ols", 2))
    ]
    ax = plots.plot_regret_vs_speed(table).axes[0]
    assert ax.get_xlim() == (2.0, 4.0) and list(ax.get_xticks()) == [3.0]
    ax = plots.plot_basis_ablation([dict(r, basis="linear") for r in table]).axes[0]
    assert ax.get_xlim() == (2.0, 4.0)


def test_a_claim_tested_at_fewer_speeds_than_claimed_says_so():
    # the quick protocol tests NS-Diabetes at speed 4 only: "held" must name its scope
    partial = _table("diabetes", {4: (6, 1, 6, 6)}, se=0.5)
    by_id = {c["id"]: c for c in claims(partial, [], zeta_weights())}
    assert by_id["diabetes"]["verdict"] == "held"
    assert by_id["diabetes"]["speeds"] == [4]
    assert by_id["diabetes"]["scope"] == "tested at speed 4 of the claim's speeds 1, 2, 3, 4"
    every = _table("diabetes", {s: (6, 1, 6, 6) for s in (0, 1, 2, 3, 4)}, se=0.5)
    by_id = {c["id"]: c for c in claims(every, [], zeta_weights())}
    assert by_id["diabetes"]["speeds"] == [1, 2, 3, 4] and by_id["diabetes"]["scope"] == ""
    assert by_id["diabetes_stationary"]["scope"] == "" and by_id["zeta"]["scope"] == ""
    # untested and unrun claims have no speeds and no scope sentence
    assert by_id["reacher"]["speeds"] == [] and by_id["reacher"]["scope"] == ""


def _diabetes_summary(tmp_path, final):
    """summary.md of a synthetic NS-Diabetes reproduction whose final days are ``final``."""
    from pyprog.paper.report import write_summary

    plan = Plan(
        name="synthetic",
        speeds={"diabetes": (4,)},
        seeds={"diabetes": 3},
        episodes={"diabetes": 100},
        ablation_speeds=(),
        ablation_seeds=0,
    )
    table = [
        dict(env="diabetes", algo=a, speed=4, metric="surrogate regret", mean=0.1 * i, se=0.01)
        for i, a in enumerate(ALGOS)
    ]
    glucose = []
    for a, (min_bg, tir) in zip(ALGOS, final, strict=True):
        for day, low, frac in ((10, 90.0, 0.95), (100, min_bg, tir)):  # early day: fine
            glucose.append(
                dict(algo=a, episode=day, cr=3.0, cf=40.0, time_in_range=frac, mean_bg=140.0,
                     min_bg=low, max_bg=300.0, score=10.0, run_return=11.0)
            )  # fmt: skip
    path = tmp_path / "summary.md"
    write_summary(
        path, plan=plan, envs=["diabetes"], table=table, ablation=[], claim_list=[],
        figures=[], settings_from="test", seconds=1.0,
        report=dict(ran=12, already_stored=0, total=12, run_hours=0.01),
        glucose_rows=glucose, replays_store=True,
    )  # fmt: skip
    return path.read_text()


def test_diabetes_summary_gives_each_final_policys_outcome_and_says_when_all_are_poor(tmp_path):
    text = _diabetes_summary(tmp_path, [(6.0, 0.32), (19.0, 0.40), (60.0, 0.30), (14.0, 0.80)])
    # beside each learner's surrogate regret: its final day's minimum glucose and time in range
    assert "| pro-ols | 0 ± 0.01 | 6 | 32 % | yes |" in text
    assert "| pro-wls | 0.1 ± 0.01 | 19 | 40 % | yes |" in text
    assert "| onpg | 0.2 ± 0.01 | 60 | 30 % | yes |" in text  # poor by time in range only
    assert "| ftrl-pg | 0.3 ± 0.01 | 14 | 80 % | yes |" in text  # poor by hypoglycaemia only
    assert "before day 100" in text
    sentence = next(line for line in text.splitlines() if "clinically poor:" in line)
    assert "minimum blood glucose 6–60 mg/dL and 30–80 % of the day in 70–180 mg/dL" in sentence
    assert "below 54 mg/dL" in sentence and "less than 50 %" in sentence
    assert "Battelino et al. 2019" in sentence and "International Consensus on Time in Range" in (
        sentence
    )
    # the outcome sits in the NS-Diabetes section, before the replay's own table
    assert text.index("clinically poor:") < text.index("## NS-Diabetes: the learned bolus")


def test_diabetes_summary_has_no_poor_sentence_when_one_final_policy_is_fine(tmp_path):
    text = _diabetes_summary(tmp_path, [(6.0, 0.32), (19.0, 0.40), (60.0, 0.30), (72.0, 0.75)])
    assert "| ftrl-pg | 0.3 ± 0.01 | 72 | 75 % | no |" in text
    assert "| pro-ols | 0 ± 0.01 | 6 | 32 % | yes |" in text
    assert "clinically poor:" not in text
    # thresholds are inclusive of the boundary: 54 mg/dL and 50 % are not poor
    text = _diabetes_summary(tmp_path, [(54.0, 0.5)] * 4)
    assert "| pro-wls | 0.1 ± 0.01 | 54 | 50 % | no |" in text
    assert "clinically poor:" not in text


def test_the_reproductions_summary_gives_the_final_policies_outcome(tiny):
    out, result = tiny
    text = (out / "summary.md").read_text()
    assert "| algo | surrogate regret, speed 2 (all seeds) | min BG (mg/dL) |" in text
    assert "seed 0, speed 2: the mean (CR, CF) before day 3" in text
