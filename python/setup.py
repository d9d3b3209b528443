"""Builds tilek (the C extension python/src over libtk) for `pip install ./python`.

libtk is found, in order: through pkg-config (`meson install` put tk.pc on the search
path, or PKG_CONFIG_PATH names it); else in a build of this repository ($TK_BUILD_DIR, or
../build-release or ../build next to this folder), which the extension then loads by its
absolute path (an rpath). See docs/python.md.
"""
import json
import os
import shlex
import subprocess

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def from_pkg_config():
    try:
        # Tcl/Tk installs a tk.pc as well; ours is the one that names tkc.
        if not subprocess.run(["pkg-config", "--variable=tkc", "tk"], capture_output=True,
                              text=True).stdout.strip():
            return None
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "tk"], check=True,
                               capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    inc, libdirs, libs = [], [], []
    for f in shlex.split(flags):
        if f.startswith("-I"):
            inc.append(f[2:])
        elif f.startswith("-L"):
            libdirs.append(f[2:])
        elif f.startswith("-l"):
            libs.append(f[2:])
    return dict(include_dirs=inc, library_dirs=libdirs, libraries=libs,
                runtime_library_dirs=libdirs)


def source_of(build):
    """The source tree a meson build directory was configured from."""
    try:
        with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
            return json.load(f)["directories"]["source"]
    except (OSError, ValueError, KeyError):
        return REPO


def from_build_tree():
    dirs = [os.environ["TK_BUILD_DIR"]] if os.environ.get("TK_BUILD_DIR") else [
        os.path.join(REPO, "build-release"), os.path.join(REPO, "build")]
    for d in dirs:
        lib = os.path.join(os.path.abspath(d), "runtime")
        if os.path.exists(os.path.join(lib, "libtk.so")):
            return dict(include_dirs=[os.path.join(source_of(d), "include")], library_dirs=[lib],
                        libraries=["tk"], runtime_library_dirs=[lib])
    return None


tk = from_pkg_config() or from_build_tree()
if tk is None:
    raise SystemExit("tilek: libtk was not found: `meson install` tk (pkg-config tk must "
                     "work), or build it here (scripts/run-tests) or set TK_BUILD_DIR")

setup(
    name="tilek",
    version="0.1.0",
    description="tk tile kernels from Python: compile .tk, launch on PyTorch tensors",
    packages=["tilek"],
    ext_modules=[Extension("tilek._tilek",
                           sources=["src/module.c", "src/kernel.c", "src/args.c", "src/tune.c"],
                           extra_compile_args=["-std=c11", "-Wall", "-Wextra",
                                               "-Wno-missing-field-initializers"],
                           **tk)],
    python_requires=">=3.10",
)
