"""pyprog.utils.machine: the CPU model a benchmark or a bit-exact record names."""

from __future__ import annotations

import platform

from pyprog.utils.machine import cpu_model


def test_reads_the_model_name(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Test CPU 9000 @ 1.00GHz\nflags\t: avx\n")
    assert cpu_model(info) == "Test CPU 9000 @ 1.00GHz"


def test_falls_back_without_a_model_name(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t:   \n")
    expected = platform.processor() or platform.machine() or "unknown"
    assert cpu_model(info) == expected
    assert cpu_model(tmp_path / "missing") == expected
