"""The examples in the docstrings run and print what they say."""

import doctest
import importlib

import pytest

MODULES = [
    "pyprog",
    "pyprog._backend",
    "pyprog.adapter",
    "pyprog._cache",
    "pyprog.agents",
    "pyprog.bases",
    "pyprog.buffer",
    "pyprog.estimators",
    "pyprog.experiment",
    "pyprog.grid",
    "pyprog.hyperparams",
    "pyprog.optim",
    "pyprog.parallel",
    "pyprog.plots",
    "pyprog.policies",
    "pyprog.replay",
    "pyprog.reproduce",
    "pyprog.store",
    "pyprog.uncertainty",
    "pyprog.safety",
    "pyprog.logs",
    "pyprog.sweep",
    "pyprog.verdicts",
    "pyprog.envs.patient",
    "pyprog.envs.diabetes",
    "pyprog.envs.simglucose_data",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0
