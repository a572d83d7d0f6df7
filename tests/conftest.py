"""Shared fixtures."""

from __future__ import annotations

import pytest

from pyprog._ext import fallback
from pyprog.forecast import estimators, forecasters, intervals, post_selection
from pyprog.learn import learners as agents
from pyprog.learn.policies import softmax as softmax_policies


@pytest.fixture(params=["compiled", "numpy"])
def backend(request, monkeypatch):
    """Both kernel backends: the NumPy twins patched in wherever the learners use kernels."""
    if request.param == "numpy":
        for module in (
            agents,
            estimators,
            forecasters,
            intervals,
            post_selection,
            softmax_policies,
        ):
            monkeypatch.setattr(module, "kernels", fallback)
    return request.param
