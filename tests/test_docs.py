"""The examples in the docstrings run and print what they say."""

import doctest
import importlib

import pytest

MODULES = [
    "pyprog",
    "pyprog._ext.backend",
    "pyprog.runner.adapter",
    "pyprog.utils.cache",
    "pyprog.learn.learners",
    "pyprog.forecast.bases",
    "pyprog.learn.buffer",
    "pyprog.forecast.estimators",
    "pyprog.runner.loop",
    "pyprog.experiments.grid",
    "pyprog.learn.hyperparams",
    "pyprog.learn.optim",
    "pyprog.runner.parallel",
    "pyprog.paper.figures",
    "pyprog.learn.policies",
    "pyprog.runner.replay",
    "pyprog.paper.reproduce",
    "pyprog.results.store",
    "pyprog.forecast.intervals",
    "pyprog.forecast.safety",
    "pyprog.forecast.logs",
    "pyprog.experiments.sweep",
    "pyprog.stats.verdicts",
    "pyprog.envs.diabetes.patient",
    "pyprog.envs.diabetes.env",
    "pyprog.envs.diabetes.parameters",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0
