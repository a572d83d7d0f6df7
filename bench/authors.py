"""pyprog beside the authors' reference implementation, one thread each, same settings.

The paper's authors published their PyTorch code as ``yashchandak/OptFuture_NSMDP``. It has
no licence, so pyprog neither ships nor copies it: this script runs an existing checkout of it
(``--authors PATH`` or ``$PYPROG_AUTHORS_CODE``: a clone, or a bare git directory) with a
Python that has PyTorch (``--authors-python`` or ``$PYPROG_AUTHORS_PYTHON``), and skips
cleanly, exit 0, when either is missing. Both sides get the authors' tuned setting for the
case (``pyprog/data/hyperparams.json``, their ``Src/*_hyperparams.md``), 1000 episodes,
``OMP_NUM_THREADS=1`` (and ``torch.set_num_threads(1)``, one BLAS thread for NumPy), each run in
a fresh process timed from just before training starts to its end (imports excluded).

Run::

    python bench/authors.py --authors ~/OptFuture_NSMDP --authors-python ~/torch-venv/bin/python

It prints a side-by-side table and writes ``bench/results/authors.json`` and ``authors.md``
(``--out``). ``--cases reco`` runs NS-Reco only (the rows of the other cases already in
``authors.json`` are kept, with their own dates); ``--repeat K`` runs each side K times,
alternately, and reports the medians and the range of the K paired speed-ups (the machine
may be shared: alternating spreads its load over both sides).

Their code needs NumPy, PyTorch (CPU), matplotlib and PyYAML; it finds its own
modules only under a folder named ``OptFuture``, so each run copies the checkout into a
temporary ``.../OptFuture`` (which also keeps the files it writes out of your checkout).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pyprog.utils.machine import cpu_model

CASES = [("reco", "pro-wls", 2), ("reacher", "pro-ols", 2)]
ENV_NAMES = {"reco": "NS_Reco", "reacher": "NS_Reacher"}
ALGO_NAMES = {"pro-wls": "ProWLS", "pro-ols": "ProOLS", "onpg": "ONPG", "ftrl-pg": "OFPG"}
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}

# Runs in the authors' interpreter, in the copied checkout: their Src/run_NS.py main(),
# with sys.argv set to their parser's options; the time goes to a file (their code
# redirects sys.stdout to a logger).
AUTHORS_DRIVER = """
import json, sys, time
import torch
torch.set_num_threads(1)
out, sys.argv = sys.argv[1], ["run_NS.py"] + sys.argv[2:]
from Src.run_NS import main
t0 = time.perf_counter()
main(train=True)
seconds = time.perf_counter() - t0
with open(out, "w") as fh:
    json.dump({"seconds": seconds, "torch": torch.__version__}, fh)
"""

# Runs in this interpreter: pyprog.run with the same setting.
PYPROG_DRIVER = """
import json, sys, time
from threadpoolctl import threadpool_limits
import pyprog
out, env, algo, speed, seed, episodes = sys.argv[1:7]
with threadpool_limits(1):
    t0 = time.perf_counter()
    result = pyprog.run(env, algo, speed=int(speed), seed=int(seed), episodes=int(episodes),
                        hyper="paper")
    seconds = time.perf_counter() - t0
with open(out, "w") as fh:
    json.dump({"seconds": seconds, "pyprog": pyprog.__version__,
               "mean_return": float(result.returns.mean())}, fh)
"""


#: Options naming this machine's folders → how the report writes them (as a user types them).
PLACEHOLDERS = {
    "--authors": "PATH/TO/OptFuture_NSMDP",
    "--authors-python": "PATH/TO/torch-venv/bin/python",
    "--out": "OUT",
}


def user_command(argv: list[str]) -> str:
    """The command as a user would type it: this machine's folders as placeholders.

    Examples
    --------
    >>> user_command(["--authors", "/work/x/repo", "--repeat", "3", "--out=/tmp/o"])
    'python bench/authors.py --authors PATH/TO/OptFuture_NSMDP --repeat 3 --out OUT'
    """
    words, given = [], iter(argv)
    for word in given:
        option, eq, value = word.partition("=")
        if option in PLACEHOLDERS:
            if not eq:
                next(given, None)
            words += [option, PLACEHOLDERS[option]]
        else:
            words.append(word)
    return " ".join(["python bench/authors.py", *words])


def authors_argv(env: str, algo: str, speed: int, setting: dict, episodes: int, seed: int):
    """The authors' ``Src/NS_parser.py`` options for one of pyprog's settings.

    >>> argv = authors_argv("reco", "pro-wls", 2, {"lr": 0.01, "delta": 5,
    ...     "entropy_lambda": 0.1, "basis": "fourier", "d": 3, "clip": 15.0,
    ...     "inner_steps": 50, "gamma": 0.99, "optimizer": "rmsprop", "hidden": None}, 1000, 0)
    >>> argv[argv.index("--algo_name") + 1], argv[argv.index("--fourier_k") + 1]
    ('ProWLS', '3')
    """
    argv = [
        "--env_name", ENV_NAMES[env],
        "--algo_name", ALGO_NAMES[algo],
        "--speed", str(speed),
        "--max_episodes", str(episodes),
        "--seed", str(seed),
        "--actor_lr", repr(setting["lr"]),
        "--delta", str(setting["delta"]),
        "--entropy_lambda", repr(setting["entropy_lambda"]),
        "--extrapolator_basis", setting["basis"].capitalize(),
        "--fourier_k", str(setting["d"]),
        "--importance_clip", repr(setting["clip"]),
        "--max_inner", str(setting["inner_steps"]),
        "--gamma", repr(setting["gamma"]),
        "--optim", setting["optimizer"],
        "--debug", "False",  # True opens matplotlib windows at the end (NS-Reco)
        "--save_model", "False",
        "--log_output", "term",
    ]  # fmt: skip
    if setting.get("buffer_size"):
        argv += ["--buffer_size", str(setting["buffer_size"])]
    if setting.get("hidden"):
        # an MLP policy: their state features (NN_basis_dim) then a linear softmax layer
        argv += ["--raw_basis", "False", "--NN_basis_dim", str(setting["hidden"])]
        if setting.get("hidden_lr"):
            argv += ["--state_lr", repr(setting["hidden_lr"])]
    else:
        argv += ["--raw_basis", "True"]
    return argv


def locate_authors(path: str | None) -> tuple[Path | None, str]:
    """(checkout, "") or (None, why not) for ``--authors`` / ``$PYPROG_AUTHORS_CODE``."""
    path = path or os.environ.get("PYPROG_AUTHORS_CODE")
    if not path:
        return None, "no checkout of the authors' code (--authors or $PYPROG_AUTHORS_CODE)"
    root = Path(path).expanduser()
    if (root / "Src" / "run_NS.py").is_file():
        return root, ""
    if (root / "HEAD").is_file() and (root / "objects").is_dir():
        return root, ""  # a bare git directory: exported at HEAD for each run
    return None, f"{root} holds neither Src/run_NS.py nor a bare git repository"


def locate_python(python: str | None) -> tuple[str | None, str]:
    """An interpreter that imports torch (``--authors-python`` / ``$PYPROG_AUTHORS_PYTHON``)."""
    python = python or os.environ.get("PYPROG_AUTHORS_PYTHON") or sys.executable
    probe = subprocess.run(
        [python, "-c", "import torch, matplotlib, yaml"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return None, f"{python} cannot import torch, matplotlib and yaml"
    return python, ""


def copy_checkout(source: Path, parent: Path) -> Path:
    """The authors' code under ``parent/OptFuture`` (their module loader needs that name)."""
    dest = parent / "OptFuture"
    if (source / "Src" / "run_NS.py").is_file():
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".git", "Experiments"))
    else:
        dest.mkdir()
        archive = subprocess.run(
            ["git", f"--git-dir={source}", "archive", "HEAD"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def timed(cmd: list[str], cwd: Path, extra_env: dict, out: Path, log: Path) -> dict:
    env = {**os.environ, **ONE_THREAD, **extra_env}
    with open(log, "w") as fh:
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not out.is_file():
        tail = log.read_text().splitlines()[-15:]
        raise RuntimeError(f"{cmd[0]} exited {done.returncode}:\n" + "\n".join(tail))
    return json.loads(out.read_text())


def machine() -> dict:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def parse_cases(text: str) -> list[tuple[str, str, int]]:
    """The CASES named in a comma-separated list of environments (``"reco,reacher"``).

    >>> [case[0] for case in parse_cases("reacher")]
    ['reacher']
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = [case[0] for case in CASES]
    unknown = sorted(set(names) - set(known))
    if not names or unknown:
        raise ValueError(
            f"--cases must name some of {', '.join(known)}, comma-separated; got {text!r}"
        )
    return [case for case in CASES if case[0] in names]


def median(values: list[float]) -> float:
    """The median of a non-empty list.

    >>> median([3.0, 1.0, 2.0]), median([1.0, 2.0])
    (2.0, 1.5)
    """
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors", help="checkout (or bare git dir) of OptFuture_NSMDP")
    parser.add_argument("--authors-python", help="a Python with torch, matplotlib, pyyaml")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cases", default=",".join(case[0] for case in CASES),
        help="environments to run, comma-separated (default: all)",
    )  # fmt: skip
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each side, alternately (default 1)"
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.seed < 0:
        parser.error("--episodes must be >= 1 and --seed >= 0")
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1; got {args.repeat}")
    try:
        cases = parse_cases(args.cases)
    except ValueError as exc:
        parser.error(str(exc))
    checkout, why = locate_authors(args.authors)
    python, why_python = locate_python(args.authors_python) if checkout else (None, "")
    if checkout is None or python is None:
        print(f"skipped: {why or why_python}")
        return 0

    from pyprog.learn.hyperparams import paper_hyper

    rows = []
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for env, algo, speed in cases:
            setting = paper_hyper(env, algo, speed).to_dict()
            argv_a = authors_argv(env, algo, speed, setting, args.episodes, args.seed)
            run_dir = tmp / f"{env}-{algo}"
            run_dir.mkdir()
            code = copy_checkout(checkout, run_dir)
            a_runs, p_runs = [], []
            for _ in range(args.repeat):
                a = timed(
                    [python, "-c", AUTHORS_DRIVER, str(run_dir / "authors.json"), *argv_a],
                    code,
                    {"PYTHONPATH": str(code)},
                    run_dir / "authors.json",
                    run_dir / "authors.log",
                )
                p = timed(
                    [sys.executable, "-c", PYPROG_DRIVER, str(run_dir / "pyprog.json"),
                     env, algo, str(speed), str(args.seed), str(args.episodes)],
                    run_dir,
                    {},
                    run_dir / "pyprog.json",
                    run_dir / "pyprog.log",
                )  # fmt: skip
                a_runs.append(a["seconds"])
                p_runs.append(p["seconds"])
            paired = [x / y for x, y in zip(a_runs, p_runs, strict=True)]
            config = [
                line.strip()
                for line in (run_dir / "authors.log").read_text().splitlines()
                if line.strip().startswith("Namespace(")
            ]
            row = {
                "case": f"{ENV_NAMES[env]} {ALGO_NAMES[algo]} speed {speed}",
                "env": env,
                "algo": algo,
                "speed": speed,
                "episodes": args.episodes,
                "seed": args.seed,
                "setting": setting,
                "authors_argv": argv_a,
                "authors_config": config[0] if config else None,  # as their code parsed it
                "date": now,
                "authors_s": median(a_runs),
                "pyprog_s": median(p_runs),
                "speedup": median(a_runs) / median(p_runs),
                "authors_runs": a_runs,
                "pyprog_runs": p_runs,
                "speedup_range": [min(paired), max(paired)],
                "torch": a["torch"],
                "pyprog": p["pyprog"],
            }
            rows.append(row)
            print(
                f"{row['case']:<28} authors {row['authors_s']:8.2f} s   "
                f"pyprog {row['pyprog_s']:7.2f} s   {row['speedup']:6.1f}x",
                flush=True,
            )
    out = Path(args.out)
    ran = {row["case"] for row in rows}
    try:  # the other cases' rows of an earlier report stay, with their own dates
        earlier = json.loads((out / "authors.json").read_text())
        kept = [r for r in earlier.get("rows", []) if r.get("case") not in ran]
        for r in kept:
            r.setdefault("date", earlier.get("date"))
            r.setdefault("command", earlier.get("command"))
    except (OSError, ValueError, AttributeError):
        kept = []
    order = [f"{ENV_NAMES[env]} {ALGO_NAMES[algo]} speed {speed}" for env, algo, speed in CASES]
    rows = sorted(rows + kept, key=lambda r: order.index(r["case"]) if r["case"] in order else 99)
    report = {
        "date": now,
        "command": user_command(argv or sys.argv[1:]),
        "machine": machine(),
        "threads": "one each: " + ", ".join(f"{k}=1" for k in ONE_THREAD if k != "MPLBACKEND"),
        "rows": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "authors.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "authors.md").write_text(markdown(report))
    print(f"wrote {out / 'authors.json'} and {out / 'authors.md'}")
    return 0


def markdown(report: dict) -> str:
    """The side-by-side table of a report, as Markdown."""
    m = report["machine"]
    lines = [
        "# pyprog beside the authors' reference implementation",
        "",
        f"{report['date']}, {m['cpu']}, {m['cores']} cores, {m['platform']}, "
        f"Python {m['python']}; {report['threads']}, torch.set_num_threads(1).",
        "",
        f"| case ({report['rows'][0]['episodes']} episodes, authors' tuned setting) "
        "| authors (PyTorch) | pyprog | speed-up |",
        "|---|---|---|---|",
    ]
    notes = []
    for r in report["rows"]:
        runs = len(r.get("authors_runs", [r["authors_s"]]))
        spread = ""
        if runs > 1:
            low, high = r["speedup_range"]
            spread = f" (median of {runs}; paired {low:.3g}x–{high:.3g}x)"
        lines.append(
            f"| {r['case']} | {r['authors_s']:.2f} s | {r['pyprog_s']:.2f} s "
            f"| {r['speedup']:.1f}x{spread} |"
        )
        if r.get("date", report["date"]) != report["date"]:
            notes.append(f"{r['case']}: from an earlier run, {r['date']}, `{r.get('command')}`.")
    lines += ["", f"Command: `{report['command']}`", ""]
    if notes:
        lines += [*notes, ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
