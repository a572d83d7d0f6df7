"""What every pyprog figure shares: matplotlib without a display, and how it is saved."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")  # no display needed: pyprog runs on servers and in CI

__all__ = ["save_figure"]


def save_figure(fig, path: str | os.PathLike | None):
    """Save ``fig`` as a PNG at ``path`` (at 120 dpi, trimmed), when given; return ``fig``."""
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig
