"""numba's cache of pyprog's jitted functions lives in a per-user directory (pyprog.utils.cache).

Nothing is ever written inside the installed package: a read-only install works for a
non-root user, and ``pip uninstall`` leaves no ``site-packages/pyprog/`` folder behind (the
leftover that used to shadow an editable install as an empty namespace package).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import numba
import pytest
from unprivileged import run_unprivileged

import pyprog
from pyprog.envs.diabetes import day as _diabetes_day
from pyprog.envs.diabetes import dopri5, patient
from pyprog.utils import cache as _cache

PACKAGE = Path(pyprog.__file__).resolve().parent
PROJECT = PACKAGE.parent
# A cached function of pyprog that compiles in a second: enough to make numba write its cache.
CALL_CACHED = "from pyprog.envs.diabetes.dopri5 import _fmin; print(_fmin(1.0, 2.0))"
NO_CACHE_WARNING = "pyprog: no writable cache directory"


# --------------------------------------------------------------------------- where


def test_candidates_in_order_of_preference():
    env = {
        "HOME": "/home/ada",
        "PYPROG_CACHE_DIR": "/scratch/p",
        "NUMBA_CACHE_DIR": "/scratch/n",
        "XDG_CACHE_HOME": "/xdg",
    }
    got = [(s, p.as_posix()) for s, p in _cache.cache_candidates(env)]
    if sys.platform.startswith("linux"):
        default = "/xdg/pyprog/numba"
    else:
        default = _cache.cache_candidates({"HOME": "/home/ada"})[0][1].as_posix()
    assert got == [
        ("PYPROG_CACHE_DIR", "/scratch/p/numba"),
        ("NUMBA_CACHE_DIR", "/scratch/n"),
        ("default", default),
    ]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG is the Linux convention")
def test_default_follows_xdg_and_ignores_a_relative_xdg_cache_home():
    assert _cache.cache_candidates({"HOME": "/home/ada"}) == [
        ("default", Path("/home/ada/.cache/pyprog/numba"))
    ]
    assert _cache.cache_candidates({"HOME": "/home/ada", "XDG_CACHE_HOME": "rel"}) == [
        ("default", Path("/home/ada/.cache/pyprog/numba"))
    ]


@pytest.fixture
def fresh_resolution(monkeypatch):
    """Resolve the cache directory again under a patched environment (and after the test)."""
    for key in ("PYPROG_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    _cache.numba_cache_dir.cache_clear()
    yield monkeypatch
    _cache.numba_cache_dir.cache_clear()


def test_an_unwritable_setting_falls_back_with_one_warning(tmp_path, fresh_resolution):
    (tmp_path / "file").write_text("a file, not a folder\n")
    fresh_resolution.setenv("PYPROG_CACHE_DIR", str(tmp_path / "file" / "cache"))
    fresh_resolution.setenv("HOME", str(tmp_path / "home"))
    fresh_resolution.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with pytest.warns(RuntimeWarning) as caught:
        where = _cache.numba_cache_dir()
    assert len(caught) == 1
    assert "PYPROG_CACHE_DIR" in str(caught[0].message) and "not writable" in str(caught[0].message)
    if sys.platform.startswith("linux"):
        assert where == tmp_path / "xdg" / "pyprog" / "numba" and where.is_dir()
    assert _cache.numba_cache_dir() is where  # resolved once per process


def test_nothing_writable_means_uncached_with_one_warning(tmp_path, fresh_resolution):
    (tmp_path / "file").write_text("a file, not a folder\n")
    blocked = tmp_path / "file"
    fresh_resolution.setenv("PYPROG_CACHE_DIR", str(blocked / "p"))
    fresh_resolution.setenv("NUMBA_CACHE_DIR", str(blocked / "n"))
    fresh_resolution.setenv("HOME", str(blocked / "home"))
    fresh_resolution.setenv("XDG_CACHE_HOME", str(blocked / "xdg"))
    fresh_resolution.setenv("LOCALAPPDATA", str(blocked / "local"))
    with pytest.warns(RuntimeWarning, match="no writable cache directory") as caught:
        assert _cache.numba_cache_dir() is None
    assert len(caught) == 1

    @_cache.cached_njit()
    def triple(x):
        return 3 * x

    assert triple(2) == 6  # runs, uncached
    assert not hasattr(triple._cache, "_cache_path")


@pytest.mark.parametrize(
    "func",
    [dopri5._fmin, patient._simulate_batch, _diabetes_day.diabetes_day],
    ids=["patient", "parallel batch", "diabetes day"],
)
def test_pyprog_functions_cache_outside_the_package(func):
    root = _cache.numba_cache_dir()
    if root is None:
        pytest.skip("no writable cache directory here: pyprog runs uncached")
    where = Path(func._cache._cache_path).resolve()
    assert where.is_relative_to(root.resolve())
    assert not where.is_relative_to(PACKAGE)


def test_other_code_keeps_numbas_own_cache_placement(tmp_path, monkeypatch):
    """pyprog changes no global numba setting: another module's cache=True stays in-tree."""
    (tmp_path / "user_module.py").write_text(
        "import numba\n\n@numba.njit(cache=True)\ndef double(x):\n    return 2 * x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    import user_module

    assert user_module.double(2) == 4
    assert Path(user_module.double._cache._cache_path) == tmp_path / "__pycache__"


def test_cached_njit_refuses_a_cache_argument():
    with pytest.raises(ValueError, match="cache="):
        _cache.cached_njit(cache=True)


# --------------------------------------------------------------------------- read-only install


@pytest.fixture
def read_only_install():
    """A copy of the installed package in a read-only folder that user nobody can enter."""
    if not hasattr(os, "geteuid") or (os.geteuid() == 0 and not hasattr(os, "fork")):
        pytest.skip("needs POSIX permissions (and fork to drop root)")
    top = Path(tempfile.mkdtemp(prefix="pyprog-cache-"))
    top.chmod(0o755)
    site = top / "site"
    shutil.copytree(PACKAGE, site / "pyprog", ignore=shutil.ignore_patterns("__pycache__"))
    for p in [site, *site.rglob("*")]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    writable = top / "cache"
    writable.mkdir()
    writable.chmod(0o777)
    yield site, writable
    for p in [top, *top.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755)
    shutil.rmtree(top)


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _run_as_user(site: Path, cache_dir: str | None) -> dict:
    """A cached pyprog function called from the package in ``site``, imported afresh in a
    forked child that runs as user nobody when the tests run as root.

    (The child imports pyprog again rather than starting an interpreter: as root, the
    interpreter may live where nobody cannot execute it.)
    """

    def call() -> dict:
        for key in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYPROG_CACHE_DIR"):
            os.environ.pop(key, None)
        os.environ["HOME"] = "/nonexistent"
        if cache_dir is not None:
            os.environ["PYPROG_CACHE_DIR"] = cache_dir
        for name in [n for n in sys.modules if n == "pyprog" or n.startswith("pyprog.")]:
            del sys.modules[name]
        sys.path.insert(0, str(site))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import pyprog as fresh
            from pyprog.envs.diabetes.dopri5 import _fmin

            value = _fmin(1.0, 2.0)
        return {
            "value": value,
            "file": fresh.__file__,
            "warnings": [str(w.message) for w in caught],
        }

    return run_unprivileged(
        call, lambda exc: {"error": f"{type(exc).__name__}: {exc}"}, always_fork=True
    )


def test_read_only_install_caches_in_the_users_directory(read_only_install):
    site, writable = read_only_install
    before = _files(site)
    answer = _run_as_user(site, str(writable))
    assert answer.get("value") == 1.0, answer
    assert Path(answer["file"]) == site / "pyprog" / "__init__.py"
    assert not [w for w in answer["warnings"] if "cache" in w], answer["warnings"]
    assert _files(site) == before  # nothing written inside the package
    assert list((writable / "numba").rglob("dopri5._fmin-*.nbi")), "no cache index written"


def test_read_only_install_without_any_writable_cache_runs_uncached(read_only_install):
    site, writable = read_only_install
    writable.chmod(0o555)
    before = _files(site)
    answer = _run_as_user(site, str(writable))
    assert answer.get("value") == 1.0, answer
    assert Path(answer["file"]) == site / "pyprog" / "__init__.py"
    assert [w for w in answer["warnings"] if "cache" in w] == [
        w for w in answer["warnings"] if w.startswith(NO_CACHE_WARNING)
    ]
    assert len([w for w in answer["warnings"] if w.startswith(NO_CACHE_WARNING)]) == 1
    assert _files(site) == before
    assert list(writable.iterdir()) == []


# --------------------------------------------------------------------------- pip uninstall


def _sh(args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)


@pytest.mark.slow
def test_uninstall_leaves_no_package_folder_to_shadow_an_editable_install(tmp_path):
    """The README's two commands in one environment, in miniature.

    ``pip install .``, a cached numba call, ``pip uninstall``: no ``site-packages/pyprog/``
    may remain, and an editable install then imports. The last step puts back what numba's
    in-tree cache used to leave (a ``pyprog/envs/__pycache__`` folder) and shows that this
    leftover alone breaks ``from pyprog import episode_ratios``, the error of issue 12.
    """
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(PROJECT / name, project / name)
    shutil.copytree(
        PACKAGE,
        project / "pyprog",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "*.c", "*.html"),
    )
    venv = tmp_path / "venv"
    # no pip of its own: pip, setuptools and Cython come with the dependencies below
    assert _sh([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    python = str(venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(_sh([python, "-c", code]).stdout.strip())
    # the dependencies (and pip, setuptools, Cython) from this environment, not its pyprog:
    # a plain path entry, so that this environment's editable-install hooks are not loaded
    (site / "_deps.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")))
    env = {**os.environ, "HOME": str(tmp_path / "home"), "CC": "false"}  # no C build: faster
    for k in ("PYPROG_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH"):
        env.pop(k, None)
    pip = [python, "-m", "pip", "install", "--no-deps", "--quiet"]  # isolated build, as pip does

    done = _sh([*pip, str(project)], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (site / "pyprog" / "__init__.py").exists()
    done = _sh([python, "-c", CALL_CACHED], env=env, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "1.0", done.stderr
    assert list((tmp_path / "home").rglob("dopri5._fmin-*.nbi")), "cached in ~/.cache"
    done = _sh([python, "-m", "pip", "uninstall", "-y", "pyprog"], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (site / "pyprog").exists(), sorted(_files(site / "pyprog"))

    done = _sh([*pip, "-e", str(project)], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    check = textwrap.dedent(
        """
        import pyprog
        from pyprog import episode_ratios
        print(pyprog.__file__)
        """
    )
    done = _sh([python, "-c", check], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == project / "pyprog" / "__init__.py"

    leftover = site / "pyprog" / "envs" / "__pycache__"
    leftover.mkdir(parents=True)
    (leftover / "patient._fmin-272.py311.nbi").write_bytes(b"")
    done = _sh([python, "-c", check], env=env, cwd=tmp_path)
    assert done.returncode != 0
    assert "cannot import name 'episode_ratios'" in done.stderr, done.stderr


def test_an_edit_of_any_source_in_the_folder_starts_a_new_cache(tmp_path):
    """numba checks a cached function against its own file only: an edited callee in
    another file of the folder (patient.py, called by _diabetes_day.py) must not leave the
    caller's stale entry in use, so the folder's digest is part of the cache path."""
    from pyprog.utils.cache import sources_digest

    (tmp_path / "caller.py").write_text("def day(): return step()\n")
    (tmp_path / "callee.py").write_text("def step(): return 1\n")
    before = sources_digest(str(tmp_path))
    sources_digest.cache_clear()
    (tmp_path / "callee.py").write_text("def step(): return 2\n")
    edited = sources_digest(str(tmp_path))
    assert edited != before
    sources_digest.cache_clear()
    (tmp_path / "notes.txt").write_text("not a source")  # only Python sources count
    assert sources_digest(str(tmp_path)) == edited
