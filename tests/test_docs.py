"""The examples in the docstrings run and print what they say.

Every module of the package is collected: a new module's examples are tested without
adding it to a list.
"""

import doctest
import importlib
import pkgutil

import pytest

import pyprog

MODULES = [
    "pyprog",
    *sorted(
        info.name
        for info in pkgutil.walk_packages(pyprog.__path__, prefix="pyprog.")
        if info.name != "pyprog.__main__"  # runs the command line when imported
    ),
]


def test_every_layer_is_collected():
    for layer in ("forecast", "learn", "envs", "runner", "results", "stats", "paper", "cli"):
        assert any(m.startswith(f"pyprog.{layer}.") for m in MODULES), layer


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0
