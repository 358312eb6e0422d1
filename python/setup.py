"""pip install ./python: builds rnnx with CMake (the repository one level up) and packages
the rnnx Python package together with librnnx, found next to the extension ($ORIGIN).

Offline, with Debian's pip, setuptools and wheel:
    pip install --no-build-isolation ./python     (add --break-system-packages, --user or
                                                   use a venv with --system-site-packages)
RNNX_CMAKE_ARGS adds CMake arguments; RNNX_BUILD_JOBS sets the parallel build level.
"""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        for line in f:
            if line.startswith("project(") and "VERSION" in line:
                return line.split("VERSION")[1].split()[0]
    return "0.0.0"


def pybind11_args():
    """The pybind11 of the interpreter building the package (a virtual environment's from
    pip), found before the system's (Debian's pybind11-dev), which CMake would find first."""
    try:
        import pybind11
    except ImportError:
        return []
    return [f"-Dpybind11_DIR={pybind11.get_cmake_dir()}"]


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configure, build and `cmake --install` into a staging prefix laid out as the package:
    the library goes to <stage>/rnnx (CMAKE_INSTALL_LIBDIR=rnnx) and the Python package to
    <stage>/rnnx too (RNNX_PYTHON_INSTALL_DIR=.), so the extension's RPATH is $ORIGIN."""

    def run(self):
        build_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        stage = os.path.abspath(os.path.join(self.build_temp, "stage"))
        shutil.rmtree(stage, ignore_errors=True)
        jobs = os.environ.get("RNNX_BUILD_JOBS", str(os.cpu_count() or 1))
        configure = [
            "cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}", f"-DCMAKE_INSTALL_PREFIX={stage}",
            "-DCMAKE_INSTALL_LIBDIR=rnnx", "-DRNNX_PYTHON_INSTALL_DIR=.",
            "-DRNNX_BUILD_TESTS=OFF", "-DRNNX_BUILD_TOOLS=OFF", "-DRNNX_BUILD_EXAMPLES=OFF",
            "-DRNNX_BUILD_BENCH=OFF", "-DRNNX_BUILD_PYTHON=ON",
        ] + pybind11_args() + shlex.split(os.environ.get("RNNX_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs])
        subprocess.check_call(["cmake", "--install", build_dir])
        target = os.path.join(os.path.abspath(self.build_lib), "rnnx")
        os.makedirs(target, exist_ok=True)
        staged = os.path.join(stage, "rnnx")
        soname = "librnnx.so." + project_version().split(".")[0]  # what _rnnx links to
        for name in os.listdir(staged):
            if name.endswith(".py") or name.startswith("_rnnx") or name == soname:
                shutil.copy2(os.path.join(staged, name), os.path.join(target, name))


setup(
    name="rnnx",
    version=project_version(),
    description="Fused recurrent operators (RNN, LSTM, GRU) with variable-length sequences",
    packages=["rnnx"],
    package_dir={"rnnx": "rnnx"},
    ext_modules=[CMakeExtension("rnnx._rnnx")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    install_requires=["numpy"],
    extras_require={"torch": ["torch"]},
    zip_safe=False,
)
