#!/usr/bin/env python3
"""What including <sonic/sonic.hpp> costs a user: compiles the README's first example (its first
C++ block) at -O2 and fails when the compiler needs more memory or time than the budget.

The engine behind Client is compiled into sonic::client so that this stays small (2.0 s and
191 MB with g++ 12 on the project's 2-core VM; 22 s and 697 MB while the engine was in the
headers). Memory is the steady figure: the compiler's peak resident size. Time is the best of
three runs, against a budget with room for a loaded machine.

  check_compile_cost.py --compiler g++ --readme README.md --include DIR --work-dir DIR
      [--max-mb 200] [--max-seconds 6]
"""
import argparse
import pathlib
import re
import resource
import subprocess
import sys
import time


def first_example(readme: str) -> str:
    match = re.search(r"```cpp\n(.*?)```", readme, re.S)
    if not match:
        sys.exit("check_compile_cost: README.md has no C++ block")
    return match.group(1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compiler", required=True)
    parser.add_argument("--readme", required=True)
    parser.add_argument("--include", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--max-mb", type=float, default=200)
    parser.add_argument("--max-seconds", type=float, default=6)
    args = parser.parse_args()

    work = pathlib.Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    source = work / "first_example.cpp"
    source.write_text(first_example(pathlib.Path(args.readme).read_text()))
    command = [args.compiler, "-std=c++17", "-O2", "-I", args.include, "-c", str(source),
               "-o", str(work / "first_example.o")]

    best = float("inf")
    for _ in range(3):
        started = time.monotonic()
        subprocess.run(command, check=True)
        best = min(best, time.monotonic() - started)
    # ru_maxrss of the children: the largest compiler process, in KiB on Linux.
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1000
    print(f"the README's first example: {best:.2f} s (best of 3), {peak_mb:.0f} MB at -O2")
    failures = []
    if peak_mb > args.max_mb:
        failures.append(f"{peak_mb:.0f} MB is over the budget of {args.max_mb:.0f} MB")
    if best > args.max_seconds:
        failures.append(f"{best:.2f} s is over the budget of {args.max_seconds:.1f} s")
    for failure in failures:
        print(f"check_compile_cost: {failure}: a public header includes more than it should "
              "(the engine belongs in src/client)", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
