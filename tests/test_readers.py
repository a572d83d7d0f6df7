"""The readers of the field's formats (``pyprog.logs.readers``): each format → pyprog
gives the same numbers as the arrays path, and bad input gets an error naming the key.

None of OBP, SCOPE-RL or Minari is installed here (``pip install obp`` fails on current
Python; SCOPE-RL pins old gym): their structures are built below from their documented
keys; the Open Bandit Dataset's CSV layout is ``tests/data/readers/obd_fixture.csv``,
written by ``tests/data/readers/make_obd_fixture.py``.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from pyprog.logs.episodes import LogFormatError, Logs
from pyprog.logs.readers import from_minari, from_obp, from_scope_rl, read_obd_csv

OBD_FIXTURE = Path(__file__).parent / "data" / "readers" / "obd_fixture.csv"


def same(a: Logs, b: Logs):
    np.testing.assert_array_equal(a.lengths, b.lengths)
    np.testing.assert_allclose(a.steps, b.steps, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.episode_ids, b.episode_ids)
    if b.timestamps is not None:
        np.testing.assert_array_equal(a.timestamps, b.timestamps)


# -- OBP ---------------------------------------------------------------------------------------


def obp_feedback(n=60, n_actions=4, len_list=3, seed=0):
    """A bandit_feedback dict with OBP's keys (obp.types.BanditFeedback) and an action_dist."""
    rng = np.random.default_rng(seed)
    feedback = {
        "n_rounds": n,
        "n_actions": n_actions,
        "action": rng.integers(n_actions, size=n),
        "position": rng.integers(len_list, size=n),
        "reward": rng.binomial(1, 0.3, size=n).astype(float),
        "pscore": rng.uniform(0.05, 1.0, size=n),
        "context": rng.normal(size=(n, 2)),
        "action_context": np.eye(n_actions),
    }
    dist = rng.dirichlet(np.ones(n_actions), size=(n, len_list)).transpose(0, 2, 1)
    return feedback, dist


class TestOBP:
    def test_round_trip_all_positions_and_one(self):
        fb, dist = obp_feedback()
        n = fb["n_rounds"]
        pi = dist[np.arange(n), fb["action"], fb["position"]]
        want = Logs.from_arrays(
            fb["reward"], np.log(pi), np.log(fb["pscore"]), episode=np.arange(n)
        )
        same(from_obp(fb, dist, position="all"), want)
        at1 = fb["position"] == 1
        got = from_obp(fb, dist, position=1)
        same(
            got,
            Logs.from_arrays(
                fb["reward"][at1],
                np.log(pi[at1]),
                np.log(fb["pscore"][at1]),
                episode=np.flatnonzero(at1),
            ),
        )

    def test_one_position_needs_no_choice_and_timestamps_are_kept(self):
        fb, dist = obp_feedback(len_list=1)
        fb["position"] = None
        fb["timestamp"] = np.arange(fb["n_rounds"]) * 60.0
        logs = from_obp(fb, dist)
        assert logs.episodes == fb["n_rounds"]
        np.testing.assert_array_equal(logs.timestamps, fb["timestamp"])

    def test_several_positions_need_a_choice(self):
        fb, dist = obp_feedback()
        with pytest.raises(LogFormatError, match=r"'position': the rows hold 3 positions.*'all'"):
            from_obp(fb, dist)
        with pytest.raises(LogFormatError, match="'position': no row at position 7"):
            from_obp(fb, dist, position=7)

    @pytest.mark.parametrize(
        "change, match",
        [
            (lambda fb, d: fb.pop("pscore"), "'pscore': missing key"),
            (lambda fb, d: fb.pop("n_rounds"), "'n_rounds': missing key"),
            (lambda fb, d: fb.update(reward=fb["reward"][:-1]), r"'reward': shape \(59,\)"),
            (lambda fb, d: fb["pscore"].__setitem__(3, 0.0), r"'pscore': 0.0 at \[3\]"),
            (lambda fb, d: fb["pscore"].__setitem__(3, 1.5), "'pscore': 1.5 .* not a probability"),
            (lambda fb, d: fb["action"].__setitem__(2, 4), "'action': 4 at round 2"),
            (lambda fb, d: fb["position"].__setitem__(2, 3), "'position': 3 at round 2"),
            (lambda fb, d: fb.update(context=fb["context"][:10]), "'context': 10 rows"),
            (lambda fb, d: d.__setitem__((0, 0, 0), d[0, 0, 0] + 0.5), "'action_dist'"),
        ],
    )
    def test_bad_input_names_the_key(self, change, match):
        fb, dist = obp_feedback()
        change(fb, dist)
        with pytest.raises(LogFormatError, match=match):
            from_obp(fb, dist, position="all")

    def test_two_dimensional_action_dist_gets_the_fix(self):
        fb, dist = obp_feedback(len_list=1)
        with pytest.raises(LogFormatError, match=r"'action_dist'.*action_dist\[:, :, None\]"):
            from_obp(fb, dist[:, :, 0], position="all")


# -- the Open Bandit Dataset's CSV -------------------------------------------------------------


def obd_by_pandas(path):
    """The fixture read independently, as OBP's loader does: pandas, sorted by timestamp."""
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(path, index_col=0)
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    return frame.sort_values("timestamp", kind="stable")


class TestOBD:
    def test_round_trip_against_pandas_and_the_obp_path(self):
        frame = obd_by_pandas(OBD_FIXTURE)
        want = Logs.from_arrays(
            frame["click"].to_numpy(float),
            np.full(len(frame), np.log(1 / 80)),
            np.log(frame["propensity_score"].to_numpy()),
            episode=frame.index.to_numpy(),
            timestamp=frame["timestamp"],
        )
        got = read_obd_csv(OBD_FIXTURE, evaluation_pscore=1 / 80, position="all")
        same(got, want)
        assert got.episode_ids.tolist() != sorted(got.episode_ids.tolist())  # it sorted
        # the OBP form of the same file (OBP's loader: positions 0, 1, 2), uniform π
        n = len(frame)
        fb = {
            "n_rounds": n,
            "n_actions": 80,
            "action": frame["item_id"].to_numpy(),
            "position": frame["position"].to_numpy() - 1,
            "reward": frame["click"].to_numpy(float),
            "pscore": frame["propensity_score"].to_numpy(),
            "timestamp": frame["timestamp"],
        }
        via_obp = from_obp(fb, np.full((n, 80, 3), 1 / 80), position="all")
        np.testing.assert_array_equal(via_obp.steps, got.steps)
        np.testing.assert_array_equal(via_obp.timestamps, got.timestamps)

    def test_evaluation_pscore_as_array_or_callable_and_one_position(self):
        frame = obd_by_pandas(OBD_FIXTURE)
        n = len(frame)
        pi = np.linspace(0.01, 0.5, n)  # in the file's row order
        by_array = read_obd_csv(OBD_FIXTURE, evaluation_pscore=pi, position="all")
        by_call = read_obd_csv(
            OBD_FIXTURE,
            evaluation_pscore=lambda cols: np.linspace(0.01, 0.5, len(cols["item_id"])),
            position="all",
        )
        same(by_call, by_array)
        np.testing.assert_allclose(by_array.log_pi[:, 0], np.log(pi[by_array.episode_ids]))
        at2 = read_obd_csv(OBD_FIXTURE, evaluation_pscore=0.5, position=2)
        assert at2.episodes == (frame["position"] == 2).sum()

    def test_action_prob_is_taken_for_propensity_score(self, tmp_path):
        path = tmp_path / "all.csv"
        path.write_text(OBD_FIXTURE.read_text().replace("propensity_score", "action_prob"))
        same(
            read_obd_csv(path, evaluation_pscore=0.1, position="all"),
            read_obd_csv(OBD_FIXTURE, evaluation_pscore=0.1, position="all"),
        )

    @pytest.mark.parametrize(
        "edit, kwargs, match",
        [
            (lambda t: t.replace(",click,", ",clicked,"), {}, "line 1, column 'click': missing"),
            (
                lambda t: t.replace(",0.483968,", ",0.0,"),
                {},
                r"line 2, column 'propensity_score': 0.0",
            ),
            (lambda t: t.replace(",0.483968,", ",1.2,"), {}, "line 2, column 'propensity_score'"),
            (lambda t: t.replace(",23,1,0,", ",23,1,x,"), {}, "line 2, column 'click': 'x'"),
            (
                lambda t: t.replace("2019-11-24 00:40", "yesterday"),
                {},
                "line 2, column 'timestamp'",
            ),
            (lambda t: t, dict(evaluation_pscore=1.5), "'evaluation_pscore': 1.5"),
            (lambda t: t, dict(evaluation_pscore=[0.1] * 3), r"'evaluation_pscore': shape \(3,\)"),
            (lambda t: t, dict(position=None), "'position': the rows hold 3 positions"),
        ],
    )
    def test_bad_input_names_line_and_column(self, tmp_path, edit, kwargs, match):
        path = tmp_path / "all.csv"
        path.write_text(edit(OBD_FIXTURE.read_text()))
        options = dict(evaluation_pscore=1 / 80, position="all") | kwargs
        with pytest.raises(LogFormatError, match=match):
            read_obd_csv(path, **options)


# -- SCOPE-RL ----------------------------------------------------------------------------------


def scope_rl_dataset(n=6, h=4, n_actions=3, continuous=False, seed=1):
    """A logged_dataset dict with SCOPE-RL's keys (SyntheticDataset.obtain_episodes)."""
    rng = np.random.default_rng(seed)
    size = n * h
    done = np.zeros(size)
    done[h - 1 :: h] = 1.0
    data = {
        "size": size,
        "n_trajectories": n,
        "step_per_trajectory": h,
        "action_type": "continuous" if continuous else "discrete",
        "n_actions": None if continuous else n_actions,
        "action_dim": 2 if continuous else None,
        "state": rng.normal(size=(size, 3)),
        "action": rng.normal(size=(size, 2)) if continuous else rng.integers(n_actions, size=size),
        "reward": rng.normal(size=size),
        "done": done,
        "terminal": done.copy(),
        "info": {},
        "pscore": rng.uniform(0.2, 3.0, (size, 2)) if continuous else rng.uniform(0.1, 1, size),
        "behavior_policy": "eps_greedy",
        "dataset_id": 0,
    }
    dist = rng.dirichlet(np.ones(n_actions), size=size)
    return data, dist


class TestScopeRL:
    def test_round_trip_discrete(self):
        data, dist = scope_rl_dataset()
        pi = dist[np.arange(data["size"]), data["action"]]
        want = Logs.from_arrays(
            data["reward"].reshape(6, 4),
            np.log(pi).reshape(6, 4),
            np.log(data["pscore"]).reshape(6, 4),
        )
        same(from_scope_rl(data, evaluation_policy_action_dist=dist), want)
        same(from_scope_rl(data, evaluation_policy_log_prob=np.log(pi)), want)

    def test_continuous_keeps_every_ratio(self):
        data, _ = scope_rl_dataset(continuous=True)
        log_pi = np.random.default_rng(5).normal(0.5, 1.0, data["size"])  # log-densities, some > 0
        logs = from_scope_rl(data, evaluation_policy_log_prob=log_pi, timestamp=np.arange(6.0))
        ratio = np.exp(log_pi - np.log(data["pscore"]).sum(axis=1)).reshape(6, 4)
        np.testing.assert_allclose(np.exp(logs.log_pi - logs.log_beta), ratio, rtol=1e-12)
        assert (logs.log_pi <= 0).all() and (logs.log_beta <= 0).all()
        np.testing.assert_array_equal(logs.timestamps, np.arange(6.0))

    @pytest.mark.parametrize(
        "change, match",
        [
            (lambda d: d.pop("done"), "'done': missing key"),
            (lambda d: d.pop("terminal"), "'terminal': missing key"),
            (lambda d: d.update(step_per_trajectory=3), "'size': 24 steps, but .* 6 × 3"),
            (lambda d: d.update(reward=d["reward"][:-2]), r"'reward': shape \(22,\)"),
            (lambda d: d["pscore"].__setitem__(5, 0.0), r"'pscore': 0.0 at \[5\]"),
            (lambda d: d["done"].__setitem__(7, 0.0), "'done': trajectory 1 does not end"),
        ],
    )
    def test_bad_input_names_the_key(self, change, match):
        data, dist = scope_rl_dataset()
        change(data)
        with pytest.raises(LogFormatError, match=match):
            from_scope_rl(data, evaluation_policy_action_dist=dist)

    def test_evaluation_policy_arguments(self):
        data, dist = scope_rl_dataset()
        with pytest.raises(LogFormatError, match="exactly one"):
            from_scope_rl(data)
        with pytest.raises(
            LogFormatError, match=r"'evaluation_policy_action_dist': shape \(24, 3, 1\)"
        ):
            from_scope_rl(data, evaluation_policy_action_dist=dist[:, :, None])
        dist[0] = [0.5, 0.5, 0.5]
        with pytest.raises(LogFormatError, match=r"'evaluation_policy_action_dist': sums to 1\.5"):
            from_scope_rl(data, evaluation_policy_action_dist=dist)


# -- Minari ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EpisodeData:
    """The fields of ``minari.dataset.episode_data.EpisodeData`` (Minari 0.5)."""

    id: int
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict = field(default_factory=dict)


def minari_episodes(lengths=(3, 1, 4), seed=2):
    """Episodes as Minari records them: T+1 observations and infos (the first from reset)."""
    rng = np.random.default_rng(seed)
    out = []
    for k, t in enumerate(lengths):
        log_prob = np.log(rng.uniform(0.1, 1.0, t + 1))
        log_prob[0] = 0.0  # reset's info: no action
        out.append(
            EpisodeData(
                id=10 + k,
                observations=rng.normal(size=(t + 1, 2)),
                actions=rng.integers(2, size=t),
                rewards=rng.normal(size=t),
                terminations=np.eye(t)[-1],
                truncations=np.zeros(t),
                infos={"behavior_log_prob": log_prob, "time": 100.0 * k + np.arange(t + 1)},
            )
        )
    return out


def pi_log_prob(observations, actions):
    """A policy to evaluate: p(a=1 | o) = sigmoid(o[:, 0])."""
    p1 = 1 / (1 + np.exp(-observations[:, 0]))
    return np.log(np.where(actions == 1, p1, 1 - p1))


class TestMinari:
    def test_round_trip_from_infos_and_from_a_behaviour_callable(self):
        eps = minari_episodes()
        want = Logs.from_arrays(
            np.concatenate([e.rewards for e in eps]),
            np.concatenate([pi_log_prob(e.observations[:-1], e.actions) for e in eps]),
            np.concatenate([e.infos["behavior_log_prob"][1:] for e in eps]),
            episode=np.concatenate([np.full(len(e.rewards), e.id) for e in eps]),
            timestamp=[0.0, 100.0, 200.0],
        )
        got = from_minari(
            eps,
            evaluation_log_prob=pi_log_prob,
            behavior_log_prob_key="behavior_log_prob",
            timestamp_key="time",
        )
        same(got, want)
        table = {e.id: e.infos["behavior_log_prob"][1:] for e in eps}
        lookup = iter(table.values())
        by_call = from_minari(
            eps, evaluation_log_prob=pi_log_prob, behavior_policy=lambda o, a: next(lookup)
        )
        same(
            by_call,
            Logs.from_arrays(
                want.steps[:, 2],
                want.steps[:, 0],
                want.steps[:, 1],
                episode=np.repeat(want.episode_ids, want.lengths),
            ),
        )

    def test_a_dataset_with_iterate_episodes_and_dict_observations(self):
        eps = [
            EpisodeData(
                e.id,
                {"pos": e.observations, "vel": e.observations},
                e.actions,
                e.rewards,
                e.terminations,
                e.truncations,
                e.infos,
            )
            for e in minari_episodes()
        ]

        class Dataset:
            def iterate_episodes(self):
                return iter(eps)

        logs = from_minari(
            Dataset(),
            evaluation_log_prob=lambda o, a: pi_log_prob(o["pos"], a),
            behavior_log_prob_key="behavior_log_prob",
        )
        assert logs.lengths.tolist() == [3, 1, 4]

    @pytest.mark.parametrize(
        "change, kwargs, match",
        [
            (lambda e: e.__delattr__("rewards"), {}, "'rewards': missing attribute"),
            (
                lambda e: e.infos.pop("behavior_log_prob"),
                {},
                "'behavior_log_prob': missing infos key",
            ),
            (lambda e: e.__setattr__("actions", e.actions[:-1]), {}, "'actions': 2 actions for 3"),
            (
                lambda e: e.__setattr__("observations", e.observations[:-1]),
                {},
                "'observations': 3 for 3",
            ),
            (
                lambda e: e.__setattr__("truncations", e.truncations[:1]),
                {},
                "'truncations': 1 entries",
            ),
            (
                lambda e: e.infos["behavior_log_prob"].__setitem__(2, np.nan),
                {},
                "'behavior_log_prob': nan",
            ),
            (lambda e: e.infos["behavior_log_prob"].__setitem__(2, -np.inf), {}, "probability 0"),
            (lambda e: None, dict(behavior_policy=pi_log_prob), "exactly one"),
            (lambda e: None, dict(timestamp_key="clock"), "'clock': missing infos key"),
        ],
    )
    def test_bad_input_names_the_attribute_or_key(self, change, kwargs, match):
        eps = minari_episodes()
        change_on = eps[0]
        # EpisodeData is frozen: edit a plain copy with the same attributes
        target = type("Loose", (), {})()
        target.__dict__.update(vars(change_on))
        target.infos = {k: np.array(v, dtype=float) for k, v in change_on.infos.items()}
        change(target)
        eps[0] = target
        options = dict(evaluation_log_prob=pi_log_prob, behavior_log_prob_key="behavior_log_prob")
        with pytest.raises(LogFormatError, match=match):
            from_minari(eps, **(options | kwargs))
