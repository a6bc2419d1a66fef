"""pip install --no-build-isolation .  — builds the `ringlm` Python module with CMake
(Debian's pybind11-dev, the same build as ./scripts/setup.sh) and installs it.

--no-build-isolation: the build needs nothing from PyPI (setuptools and CMake's pybind11
come from Debian). Debian's system Python is "externally managed" (PEP 668), so install
into a virtual environment (python3 -m venv --system-site-packages .venv) or use
--user --break-system-packages; docs/python.md has the commands."""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("RINGLM_BUILD_DIR", os.path.join(ROOT, "build-py"))
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                     "-DRINGLM_PYTHON_MODULE=ON", "-DRINGLM_BUILD_TESTS=OFF", f"-DPYTHON_EXECUTABLE={sys.executable}"]
        if shutil.which("ccache"):  # the objects are the same as build/'s: mostly cache hits
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", build_dir, "--target", "ringlm_python", f"-j{os.cpu_count() or 2}"], check=True)
        built = [f for f in os.listdir(os.path.join(build_dir, "python")) if f.startswith("ringlm.") and f.endswith(".so")]
        if not built:
            raise RuntimeError("the CMake build produced no build/python/ringlm*.so")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        self.copy_file(os.path.join(build_dir, "python", built[0]), target)


setup(
    name="ringlm",
    version="0.1.0",
    description="Native runtime for Gemma 4 on-device models: generation, chat, JSON-Schema-guided extraction",
    ext_modules=[CMakeExtension("ringlm")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
)
