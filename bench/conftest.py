"""Side-by-side speed-ups: every benchmark group pairs a baseline with a candidate.

Tag a benchmark with ``benchmark.extra_info.update(role="baseline" | "candidate")``
(and ``target=<ratio>`` or ``target_seconds=<s>`` on the candidate). After the run, a
table gives each group's speed-up (baseline median / candidate median) and whether it
meets its target;
``--ratio-json PATH`` also writes it as JSON (the README's tables come from there).
"""

import json
import platform
from collections import defaultdict

import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--ratio-json", default=None, help="write the speed-up table to this JSON file"
    )


def _rows(config):
    session = getattr(config, "_benchmarksession", None)
    if session is None:
        return []
    groups = defaultdict(dict)
    for bench in session.benchmarks:
        role = bench.extra_info.get("role")
        if role and bench.stats:
            groups[bench.group][role] = bench
    rows = []
    for group, pair in groups.items():
        if {"baseline", "candidate"} <= pair.keys():
            base, cand = pair["baseline"], pair["candidate"]
            ratio = base.stats.median / cand.stats.median
            target = cand.extra_info.get("target")
            target_seconds = cand.extra_info.get("target_seconds")
            rows.append(
                {
                    "group": group,
                    "baseline": base.extra_info.get("impl", base.name),
                    "candidate": cand.extra_info.get("impl", cand.name),
                    "baseline_median_s": base.stats.median,
                    "candidate_median_s": cand.stats.median,
                    "speedup": ratio,
                    "target": target,
                    "meets_target": None if target is None else bool(ratio >= target),
                    "target_seconds": target_seconds,
                    "meets_target_seconds": None
                    if target_seconds is None
                    else bool(cand.stats.median < target_seconds),
                }
            )
    return rows


def _fmt_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    rows = _rows(config)
    if not rows:
        return
    tr = terminalreporter
    tr.section("speed-ups (median baseline / median candidate)")
    tr.write_line(f"machine: {platform.machine()}, {platform.processor() or platform.platform()}")
    for r in rows:
        verdict = ""
        if r["target"] is not None:
            verdict = (" meets" if r["meets_target"] else " MISSES") + f" target {r['target']}x"
        if r["target_seconds"] is not None:
            verdict += " meets" if r["meets_target_seconds"] else " MISSES"
            verdict += f" target < {r['target_seconds']:g} s"
        tr.write_line(
            f"{r['group']:<48} {r['baseline']:>12} {_fmt_time(r['baseline_median_s']):>10}  "
            f"{r['candidate']:>12} {_fmt_time(r['candidate_median_s']):>10}  "
            f"{r['speedup']:7.1f}x{verdict}"
        )
    path = config.getoption("--ratio-json")
    if path:
        with open(path, "w") as fh:
            json.dump({"machine": platform.platform(), "rows": rows}, fh, indent=2)
