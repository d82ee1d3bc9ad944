"""Builds the package sonic with CMake: sonic's libraries and the extension sonic._sonic go
into the package directory, each finding the others through an $ORIGIN run path, so that the
installed package needs nothing of the build. Extra CMake arguments: SONIC_CMAKE_ARGS."""

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def version():
    with open(os.path.join(ROOT, "include", "sonic", "version.hpp")) as header:
        text = header.read()
    return ".".join(re.search(r"#define SONIC_VERSION_%s (\d+)" % part, text).group(1)
                    for part in ("MAJOR", "MINOR", "PATCH"))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        package = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        build = os.path.abspath(self.build_temp)
        configure = [
            "cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
            "-DSONIC_BUILD_TOOLS=OFF", "-DSONIC_BUILD_EXAMPLES=OFF", "-DSONIC_BUILD_BENCH=OFF",
            "-DSONIC_BUILD_TESTS=OFF", "-DSONIC_BUILD_SERVER=OFF", "-DSONIC_BUILD_C=OFF",
            "-DSONIC_BUILD_PYTHON=ON", "-DSONIC_REQUIRE_BACKENDS=OFF",
            "-DPython_EXECUTABLE=" + sys.executable,
            "-DSONIC_PYTHON_PACKAGE_DIR=" + package,
            "-DCMAKE_LIBRARY_OUTPUT_DIRECTORY=" + package,
            "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DCMAKE_INSTALL_RPATH=$ORIGIN",
        ]
        # Ninja where it is installed (install-deps.sh brings it): Makefiles wait for each
        # library to be linked before compiling what uses it, which leaves a core idle. A build
        # directory keeps the generator it was made with.
        fresh = not os.path.exists(os.path.join(build, "CMakeCache.txt"))
        if fresh and "CMAKE_GENERATOR" not in os.environ and shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("SONIC_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        # The extension's target also builds the backends its fallback loads.
        subprocess.check_call(["cmake", "--build", build, "-j%d" % (os.cpu_count() or 2),
                               "--target", "sonic_python"])
        self._keep_one_file_per_library(package)
        os.remove(os.path.join(package, "_build_paths.py"))  # paths of this temporary build

    @staticmethod
    def _keep_one_file_per_library(package):
        # A wheel stores links as copies: keep each library once, under the name the loader
        # looks for (its soname, libsonic_x.so.MAJOR.MINOR).
        for path in glob.glob(os.path.join(package, "libsonic_*.so*")):
            if os.path.islink(path):
                os.remove(path)
        for path in glob.glob(os.path.join(package, "libsonic_*.so.*.*.*")):
            os.replace(path, path.rsplit(".", 1)[0])


setup(
    version=version(),
    ext_modules=[Extension("sonic._sonic", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    package_data={"sonic": ["libsonic_*.so.*"]},
)
