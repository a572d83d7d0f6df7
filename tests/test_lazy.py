"""Packages that load their public names on first use (``pyprog.utils.lazy``)."""

import subprocess
import sys

import pytest

import pyprog
import pyprog.logs


def test_reading_rounds_does_not_load_the_episode_readers():
    code = (
        "import sys\nfrom pyprog.logs import Rounds, as_days\n"
        "print(sorted(m for m in sys.modules if m.startswith('pyprog.logs.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout
    assert "pyprog.logs.rounds" in loaded and "pyprog.logs.times" in loaded
    assert "pyprog.logs.readers" not in loaded and "pyprog.logs.episodes_csv" not in loaded


@pytest.mark.parametrize("package", [pyprog, pyprog.logs])
def test_every_public_name_is_listed_and_loads(package):
    assert set(package.__all__) <= set(dir(package))
    for name in package.__all__:
        assert getattr(package, name) is not None


@pytest.mark.parametrize("package", [pyprog, pyprog.logs])
def test_an_unknown_name_is_an_attribute_error(package):
    with pytest.raises(
        AttributeError, match=f"module '{package.__name__}' has no attribute 'nope'"
    ):
        package.nope  # noqa: B018
