"""Puts the runtime library into the package when it is built (pyproject.toml has the rest).

The library comes from $CAPGRAPH_LIBRARY (an aarch64 build for a comma device, say) or from the
build tree beside this folder (../build/runtime). The package is pure Python; the wheel carries
one native library, so it is tagged for this platform.
"""
import os
import shutil
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

LIBRARY = "libcapgraph_runtime.so"


class build_py_with_library(build_py):
    def run(self):
        super().run()
        here = Path(__file__).resolve().parent
        source = Path(os.environ.get("CAPGRAPH_LIBRARY") or here.parent / "build" / "runtime" / LIBRARY)
        if not source.is_file():
            raise SystemExit(f"capgraph: {source} not found: build capgraph first "
                             "(scripts/setup.sh), or set CAPGRAPH_LIBRARY to the library")
        target = Path(self.build_lib) / "capgraph" / LIBRARY
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


class PlatformDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": build_py_with_library}, distclass=PlatformDistribution)
