"""Which kernels run: the compiled ones, or the NumPy twins (forced, or without a compiler)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def backend_in_subprocess(env_extra, path=None):
    env = {**os.environ, **env_extra}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    code = (
        "import warnings; warnings.simplefilter('always'); import pyprog; print(pyprog.backend())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/"
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), done.stderr


def test_pure_python_switch_forces_the_numpy_kernels():
    assert backend_in_subprocess({"PYPROG_PURE_PYTHON": "1"})[0] == "numpy"


def test_default_is_compiled_when_built():
    try:
        import pyprog._ext._kernels
    except ImportError:
        pytest.skip("the extension is not built here")
    assert backend_in_subprocess({"PYPROG_PURE_PYTHON": ""})[0] == "cython"
    assert pyprog.backend() in ("cython", "numpy")


@pytest.mark.slow
def test_install_without_a_compiler_falls_back_with_one_warning(tmp_path):
    """CC=/bin/false: pip install still succeeds, and pyprog warns once and uses NumPy."""
    pytest.importorskip("Cython")
    pytest.importorskip("setuptools")
    target = tmp_path / "site"
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    cmd += ["--target", str(target), str(ROOT)]
    done = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "CC": "/bin/false"}
    )
    assert done.returncode == 0, done.stderr
    backend, err = backend_in_subprocess({"PYPROG_PURE_PYTHON": ""}, path=target)
    assert backend == "numpy"
    assert err.count("compiled kernels are not available") == 1
