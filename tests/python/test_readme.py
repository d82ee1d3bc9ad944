"""The README's Python and C quick starts, run as they are written (only the server's address
is changed, to the test server's), and the Python examples."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
README_URL = "grpc://127.0.0.1:8001"


def readme_block(language):
    text = open(os.path.join(ROOT, "README.md")).read()
    section = text[text.index("## Python and C"):]
    return re.search(r"```%s\n(.*?)```" % language, section, re.S).group(1)


def test_the_python_quick_start(server):
    code = readme_block("python")
    assert README_URL in code
    out = subprocess.run([sys.executable, "-c", code.replace(README_URL, server.grpc)],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    assert "[[ 0.  1.  2." in out and "15.]]" in out


def test_the_python_quick_start_is_the_example():
    example = open(os.path.join(ROOT, "examples", "python", "quickstart.py")).read()
    assert readme_block("python") == example


def test_the_c_quick_start(server, tmp_path):
    include, library = os.environ.get("SONIC_C_INCLUDE"), os.environ.get("SONIC_C_LIBRARY")
    if not include or not library:
        pytest.skip("the C API is not built")
    source = tmp_path / "quick.c"
    assert README_URL in readme_block("c")
    source.write_text(readme_block("c").replace(README_URL, server.grpc))
    program = tmp_path / "quick"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I" + include, str(source),
                    "-o", str(program), library, "-Wl,-rpath," + os.path.dirname(library)],
                   check=True, timeout=120)
    out = subprocess.run([str(program)], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    assert out == "1 2 3\n"


def test_the_batch_sweep_example(server, tmp_path):
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "python", "batch_sweep.py"),
         "--url", server.grpc, "--max-batch", "4", "--seconds", "0.2",
         "--plot", str(tmp_path / "sweep.png")],
        check=True, capture_output=True, text=True, timeout=60).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [row[0] for row in rows] == ["1", "2", "4"]
    assert all(float(row[1]) > 0 for row in rows)


def install_section():
    text = open(os.path.join(ROOT, "README.md")).read()
    start = text.index("## Install, then use it")
    return text[start:text.index("\n## ", start + 1)]


def test_the_install_section_names_every_build_switch():
    cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    switches = set(re.findall(r"^option\((SONIC_BUILD_\w+)", cmake, re.M))
    assert "SONIC_BUILD_HTTP" in switches
    missing = {s for s in switches if "`%s`" % s not in install_section()}
    assert not missing, "README's install section does not name %s" % sorted(missing)


def test_the_install_section_names_every_pkg_config_name():
    cmake = open(os.path.join(ROOT, "cmake", "SonicPkgConfig.cmake")).read()
    names = set(re.findall(r"^\s*sonic_pkg_config\(([\w-]+)", cmake, re.M))
    assert "sonic-http" in names
    missing = {n for n in names if "`%s`" % n not in install_section()}
    assert not missing, "README's install section does not name %s" % sorted(missing)
