"""Build script: declares pyprog's Cython kernels.

The extension is optional. On a machine without a C compiler (or without Cython),
``pip install .`` still succeeds: the build prints one warning and pyprog uses its
NumPy fallback (``pyprog.backend() == "numpy"``).
"""

import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Portable optimisation flags only: what gets installed must run on any CPU of the
# target architecture, so no -march=native here (faster instruction sets come from
# the target_clones in _loops.h, chosen at load time). -fno-trapping-math and
# -fno-math-errno change no result (pyprog neither traps on floating-point exceptions
# nor reads errno); they let the compiler if-convert and vectorise the kernels' loops.
EXTRA_COMPILE_ARGS = (
    [] if sys.platform == "win32" else ["-O3", "-fno-trapping-math", "-fno-math-errno"]
)


def _extensions():
    try:
        import numpy
        from Cython.Build import cythonize
    except ImportError as exc:
        print(
            f"WARNING: pyprog's kernels cannot be built ({exc}); the NumPy fallback will be used.",
            file=sys.stderr,
        )
        return []
    ext = Extension(
        "pyprog._ext._kernels",
        sources=[os.path.join("pyprog", "_ext", "_kernels.pyx")],
        # the kernel families _kernels.pyx includes: rebuild when one changes, ship them in sdists
        depends=sorted(
            glob.glob(os.path.join("pyprog", "_ext", "_*.pxi"))
            + glob.glob(os.path.join("pyprog", "_ext", "_*.h"))
        ),
        include_dirs=[os.path.join("pyprog", "_ext"), numpy.get_include()],
        extra_compile_args=EXTRA_COMPILE_ARGS,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    return cythonize(
        [ext],
        language_level=3,
        compiler_directives={"embedsignature": False, "binding": True},
    )


class OptionalBuildExt(build_ext):
    """Build the kernels if possible; warn once and carry on if not."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # no compiler, missing headers, ...
            self._warn(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._warn(exc)

    def _warn(self, exc):
        print(
            "WARNING: pyprog's Cython kernels could not be built "
            f"({type(exc).__name__}: {exc}); the NumPy fallback will be used.",
            file=sys.stderr,
        )


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
