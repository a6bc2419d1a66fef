"""pytest: `pip install .` (pyproject.toml + python/ringlm_build.py) works offline for a Python
that has pip but neither setuptools nor wheel (as a pyenv Python; #30: setup.py failed there on
bdist_wheel), reuses the CMake tree in RINGLM_BUILD_DIR instead of building a second one, and
the installed module imports, reports its version and generates. Also with the first python3
on PATH when it is another interpreter (pyenv) whose extension suffix the tree has built."""
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

SRC = os.environ.get("RINGLM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("RINGLM_BUILD_DIR", os.path.join(SRC, "build"))
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_pip_test")
RINGLM = os.environ.get("RINGLM", os.path.join(BUILD, "ringlm"))


def model_dir():
    model = os.path.join(TMP, "tiny")
    if not os.path.exists(os.path.join(model, "config.json")):
        os.makedirs(TMP, exist_ok=True)
        subprocess.run([RINGLM, "make-test-model", model, "--preset", "tiny", "--seed", "3", "--no-vision", "--no-audio"],
                       check=True, stderr=subprocess.DEVNULL)
    return model


def pip_install(python, *extra):
    before = set(os.listdir(SRC))
    env = dict(os.environ, RINGLM_BUILD_DIR=BUILD, PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([python, "-m", "pip", "install", "-v", "--no-index", "--no-cache-dir", *extra, SRC],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert f"reusing the CMake tree {BUILD}" in out, out[-3000:]
    assert "configuring" not in out  # no second C++ tree
    assert set(os.listdir(SRC)) - before == set(), "pip install left new files in the source tree"
    return out


def check_module(python, env=None):
    code = ("import ringlm, sys; e = ringlm.Engine(sys.argv[1], threads=1, ctx=256);"
            "print(ringlm.__version__); print(ringlm.__file__); print(repr(e.generate('Hi', max_tokens=4)))")
    r = subprocess.run([python, "-c", code, model_dir()], env=env, capture_output=True, text=True, cwd=TMP)
    assert r.returncode == 0, r.stderr[-3000:]
    version, path, reply = r.stdout.splitlines()[:3]
    assert version == "0.1.0"
    return path


def test_pip_install_in_a_venv_without_setuptools_or_wheel():
    venv = os.path.join(TMP, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    os.makedirs(TMP, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    subprocess.run([py, "-m", "pip", "uninstall", "-y", "-q", "setuptools", "wheel"], capture_output=True)
    for mod in ("setuptools", "wheel"):
        assert subprocess.run([py, "-c", f"import {mod}"], capture_output=True).returncode != 0, mod
    pip_install(py)
    path = check_module(py)
    assert path.startswith(venv), path


def test_pip_install_with_the_python_on_path():
    py = shutil.which("python3")
    if not py or os.path.realpath(py) == os.path.realpath(sys.executable):
        pytest.skip("python3 on PATH is the interpreter running this test")
    suffix = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                            capture_output=True, text=True).stdout.strip()
    if suffix != sysconfig.get_config_var("EXT_SUFFIX"):
        pytest.skip(f"{py} needs a module built for {suffix}, which this tree does not build")
    target = os.path.join(TMP, "target")
    shutil.rmtree(target, ignore_errors=True)
    pip_install(py, "--target", target)
    path = check_module(py, env=dict(os.environ, PYTHONPATH=target))
    assert path.startswith(target), path


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
