"""PEP 517 build backend behind `pip install .` (pyproject.toml names it).

Why not setuptools: pip would then need setuptools and wheel in the interpreter (a pyenv
Python has neither, and `--no-build-isolation` then fails on bdist_wheel), or fetch them from
PyPI (no network in CI). The wheel is one extension module plus its metadata, so this file
writes it directly with zipfile.

The module comes from CMake's `ringlm_python` target. An existing tree is reused
($RINGLM_BUILD_DIR, else build/ as scripts/setup.sh makes it) when its module fits this
interpreter (same EXT_SUFFIX); otherwise a tree of its own, build-py-<tag>/, is configured for
this interpreter (its objects are the same as build/'s: with ccache, mostly cache hits)."""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARY = "Native runtime for Gemma 4 on-device models: generation, chat, JSON-Schema-guided extraction"


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(ringlm VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no `project(ringlm VERSION x.y.z)` line")
    return m.group(1)


def _tag():
    impl = "cp" if sys.implementation.name == "cpython" else sys.implementation.name[:2]
    py = f"{impl}{sys.version_info.major}{sys.version_info.minor}"
    abi = py + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{abi}-{plat}"


def _log(msg):
    print(f"ringlm_build: {msg}", file=sys.stderr, flush=True)


def _build_module():
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    name = "ringlm" + suffix
    tree = os.environ.get("RINGLM_BUILD_DIR") or os.path.join(ROOT, "build")
    if os.path.exists(os.path.join(tree, "CMakeCache.txt")):
        # Brings the module up to date (a no-op when it is); fails loudly if the tree has no
        # Python module (pybind11 missing when it was configured).
        _log(f"reusing the CMake tree {tree}")
        subprocess.run(["cmake", "--build", tree, "--target", "ringlm_python"], check=True,
                       stdout=sys.stderr)
        built = os.path.join(tree, "python", name)
        if os.path.exists(built):
            return built
        _log(f"{tree} built no {name} (it was configured for another Python)")
    tree = os.path.join(ROOT, "build-py-" + _tag())
    _log(f"configuring {tree} for {sys.executable}")
    configure = ["cmake", "-S", ROOT, "-B", tree, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 "-DRINGLM_PYTHON_MODULE=ON", "-DRINGLM_BUILD_TESTS=OFF", f"-DPYTHON_EXECUTABLE={sys.executable}"]
    if shutil.which("ccache"):
        configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
    subprocess.run(configure, check=True, stdout=sys.stderr)
    subprocess.run(["cmake", "--build", tree, "--target", "ringlm_python"], check=True, stdout=sys.stderr)
    built = os.path.join(tree, "python", name)
    if not os.path.exists(built):
        raise RuntimeError(f"the CMake build produced no {built}")
    return built


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: ringlm\nVersion: {version}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.9\n")


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    info = f"ringlm-{version}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(version))
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    module = _build_module()
    tag = _tag()
    info = f"ringlm-{version}.dist-info"
    files = [(os.path.basename(module), open(module, "rb").read()),
             (f"{info}/METADATA", _metadata(version).encode()),
             (f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: ringlm_build\nRoot-Is-Purelib: false\nTag: {tag}\n".encode())]
    record = "\n".join([_record_line(p, d) for p, d in files] + [f"{info}/RECORD,,"]) + "\n"
    wheel = f"ringlm-{version}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(path, data)
        z.writestr(f"{info}/RECORD", record)
    _log(f"wrote {wheel}")
    return wheel
