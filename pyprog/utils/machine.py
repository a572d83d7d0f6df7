"""What machine a number came from: the CPU model, for ``pyprog info`` and benchmark records.

Speeds and the last bits of a long run depend on the CPU (its vector width decides which
kernel paths run, and the order of floating-point sums); reports name it.
"""

from __future__ import annotations

import platform
from pathlib import Path

__all__ = ["cpu_model"]


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The CPU's model name, e.g. ``"Intel(R) Xeon(R) CPU @ 2.30GHz"``.

    Read from the first ``model name`` line of ``cpuinfo`` (Linux); elsewhere, or when the
    file cannot be read, :func:`platform.processor` or, failing that, the architecture
    (:func:`platform.machine`).

    Examples
    --------
    >>> isinstance(cpu_model(), str) and len(cpu_model()) > 0
    True
    """
    try:
        for line in Path(cpuinfo).read_text(errors="replace").splitlines():
            if line.startswith("model name") and ":" in line:
                name = line.split(":", 1)[1].strip()
                if name:
                    return name
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"
