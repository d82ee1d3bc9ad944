#!/usr/bin/env python3
"""Compiles every ```cpp block of README.md, so that the README shows code that compiles.

A block with `int main` is a whole program: it is compiled as it stands, to an object file.
Any other block is a fragment: a run of statements, compiled (-fsyntax-only) as the body of a
function in fragment.cpp.in, which gives fragments what they take for granted (a client, a
request, the options, `log` and `use`); a fragment's own #include lines go above that
function. Errors point at README.md's lines (#line). Exit status: 0 when every block
compiles, 1 when one does not, 2 when the README has no whole program or no fragment.

  compile_snippets.py --compiler CXX --readme README.md --work-dir DIR [-I DIR]... [CXXFLAG]...
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "fragment.cpp.in")
BLOCK = re.compile(r"^( *)```cpp[ \t]*\n(.*?)^\1```[ \t]*$", re.M | re.S)
MAIN = re.compile(r"\bint\s+main\s*\(")


def blocks(text):
    """(first line number, code) of every ```cpp block, its indentation removed."""
    for match in BLOCK.finditer(text):
        indent = len(match.group(1))
        code = "".join(line[indent:] if line[:indent].isspace() else line
                       for line in match.group(2).splitlines(keepends=True))
        yield text.count("\n", 0, match.start(2)) + 1, code


def fragment_source(template, readme, line, code):
    """The fragment inside fragment.cpp.in, its #include lines moved above the function."""
    includes, body = [], []
    for number, text in enumerate(code.splitlines(), line):
        if text.lstrip().startswith("#include"):
            includes.append('#line %d "%s"\n%s' % (number, readme, text))
            body.append("")  # keeps the lines below where the README has them
        else:
            body.append(text)

    def insert(source, marker, lines):
        # Replaces the marker's line; after the README's lines, errors in the template name
        # the template's own lines again.
        back = '#line %d "%s"' % (template.count("\n", 0, template.index(marker)) + 2, TEMPLATE)
        start = source.rindex("\n", 0, source.index(marker)) + 1
        end = source.index("\n", start)
        return source[:start] + "\n".join(lines + [back]) + source[end:]

    source = insert(template, "@INCLUDES@", includes)
    return insert(source, "@FRAGMENT@", ['#line %d "%s"' % (line, readme)] + body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compiler", required=True)
    parser.add_argument("--readme", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("-I", dest="include", action="append", default=[])
    args, flags = parser.parse_known_args()

    readme = os.path.abspath(args.readme)
    template = open(TEMPLATE).read()
    os.makedirs(args.work_dir, exist_ok=True)
    common = ["-std=c++17", "-Wall", "-Wextra", "-Werror"] + flags
    common += ["-I" + path for path in args.include]

    failed, programs, fragments = [], 0, 0
    for line, code in blocks(open(readme).read()):
        stem = os.path.join(args.work_dir, "readme_line%d" % line)
        if MAIN.search(code):
            programs += 1
            kind = "whole program"
            source = '#line %d "%s"\n%s' % (line, readme, code)
            command = common + ["-c", stem + ".cpp", "-o", stem + ".o"]
        else:
            fragments += 1
            kind = "fragment"
            source = fragment_source(template, readme, line, code)
            command = common + ["-fsyntax-only", stem + ".cpp"]
        with open(stem + ".cpp", "w") as out:
            out.write(source)
        run = subprocess.run([args.compiler] + command, capture_output=True, text=True)
        if run.returncode == 0:
            print("README.md:%d: %s compiles" % (line, kind), flush=True)
        else:
            failed.append(line)
            errors = run.stderr.splitlines()
            if len(errors) > 60:
                errors = errors[:60] + ["... (%d lines more)" % (len(errors) - 60)]
            print("README.md:%d: %s does not compile (%s):\n%s" % (
                line, kind, stem + ".cpp", "\n".join(errors)), flush=True)

    if programs == 0 or fragments == 0:
        print("%s: expected whole programs and fragments among its ```cpp blocks, found %d and %d"
              % (readme, programs, fragments))
        return 2
    if failed:
        print("README.md: %d of %d C++ blocks do not compile (lines %s)" % (
            len(failed), programs + fragments, ", ".join(map(str, failed))))
        return 1
    print("README.md: all %d C++ blocks compile (whole programs: %d, fragments: %d)" % (
        programs + fragments, programs, fragments))
    return 0


if __name__ == "__main__":
    sys.exit(main())
