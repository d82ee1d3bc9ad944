#!/usr/bin/env python3
"""Checks docs/architecture.md against the source tree, and says exactly what to change.

  tests/docs/check_architecture.py [REPOSITORY_ROOT]

Two parts of the document are checked (the format each must keep is in its section):

* The file map ("### Files"): every source file (.hpp .cpp .h .c .py) under the directories in
  MAPPED_ROOTS must be named there, and every name there must be a file. A line at column 0
  ending in "/" is a directory, relative to the root; a line indented by two spaces starts with
  the names of files in it, separated by single spaces, before two spaces and their description
  ("name.*" is the name's header and source, "*" and "?" match within a name, "dir/" is
  everything under dir). Deeper-indented lines continue a description.
* The request path ("## One request"): a table whose rows name functions (in backticks) and
  the files they are in (in backticks; "path.*" is the path's header and source): every
  backticked name in the function column is a function (write options and types there plain).
  Each must be in one of its row's files: its last name followed by "(" (defined or declared
  there, or called where the step hands over to another file), its class's name too. The
  sentence "crosses N files" must count the table's distinct files.

Exits 1 listing every finding, one per line; 0 with a one-line summary.
"""
import fnmatch
import os
import re
import subprocess
import sys

DOC = "docs/architecture.md"
MAPPED_ROOTS = ["include", "src", "server", "transports", "tools", "bindings", "repository",
                "backends"]
SOURCE_SUFFIXES = (".hpp", ".cpp", ".h", ".c", ".py")


def source_files(root):
    """The source files under MAPPED_ROOTS: in a git checkout, those git tracks or would add
    (not the ignored build outputs, such as pip's bindings/python/build/); elsewhere, every
    file but those under build directories."""
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                                 "--exclude-standard", "--", *MAPPED_ROOTS],
                                capture_output=True, text=True, check=True).stdout.split("\n")
        return {path for path in listed if path.endswith(SOURCE_SUFFIXES) and
                os.path.isfile(os.path.join(root, path))}
    except (OSError, subprocess.CalledProcessError):
        pass
    found = set()
    for top in MAPPED_ROOTS:
        for directory, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith("build") and
                       not d.endswith(".egg-info")]
            for name in files:
                if name.endswith(SOURCE_SUFFIXES):
                    found.add(os.path.relpath(os.path.join(directory, name), root))
    return found


def section(lines, heading):
    """(first line number, lines) of the section under `heading`, up to the next heading."""
    for i, line in enumerate(lines):
        if line.strip() == heading:
            end = next((j for j in range(i + 1, len(lines))
                        if lines[j].startswith("#") and
                        len(lines[j]) - len(lines[j].lstrip("#")) <= heading.count("#")),
                       len(lines))
            return i + 1, lines[i + 1:end]
    return None, []


def matches(name, files):
    """The files a map name or a request path's file stands for."""
    if name.endswith("/"):
        return {f for f in files if f.startswith(name)}
    if name.endswith(".*"):
        stem = name[:-2]
        return {f for f in files if f.rsplit(".", 1)[0] == stem}
    if any(c in name for c in "*?["):
        return {f for f in files if fnmatch.fnmatchcase(f, name) and
                f.count("/") == name.count("/")}
    return {name} & files


def check_file_map(lines, files, findings):
    first, body = section(lines, "### Files")
    if first is None:
        findings.append(f"{DOC}: no '### Files' section")
        return
    fence = [i for i, line in enumerate(body) if line.startswith("```")]
    if len(fence) < 2:
        findings.append(f"{DOC}:{first + 1}: the file map is not in a ``` block")
        return
    mapped = set()
    directory = None
    for i in range(fence[0] + 1, fence[1]):
        line, number = body[i], first + i + 1
        if not line.strip():
            continue
        if not line.startswith(" "):
            directory = line.split()[0]
            if not directory.endswith("/") or len(line.split()) > 1:
                findings.append(f"{DOC}:{number}: a directory line is a path ending in '/' "
                                f"alone: {line.strip()!r}")
                directory = None
            elif not os.path.isdir(os.path.join(ROOT, directory)):
                findings.append(f"{DOC}:{number}: no such directory: {directory}")
            continue
        if not line.startswith("  ") or line.startswith("   "):
            continue  # a description's continuation
        if directory is None:
            findings.append(f"{DOC}:{number}: names before any directory line")
            continue
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0].split(" ")
        for name in names:
            if not re.fullmatch(r"[\w./*?\-\[\]]+", name) or not re.search(r"[./*]", name):
                findings.append(f"{DOC}:{number}: {name!r} is not a file name (names are "
                                f"separated by one space, their description by two)")
                continue
            found = matches(directory + name, files)
            if not found:
                findings.append(f"{DOC}:{number}: the map names {directory}{name}, "
                                f"which is no source file")
            mapped |= found
    by_directory = {}
    for path in sorted(files - mapped):
        by_directory.setdefault(os.path.dirname(path) + "/", []).append(os.path.basename(path))
    for directory, names in sorted(by_directory.items()):
        findings.append(f"{DOC}: the file map misses, under {directory}: {' '.join(names)}")


def check_request_path(lines, files, findings):
    first, body = section(lines, "## One request")
    if first is None:
        findings.append(f"{DOC}: no '## One request' section")
        return 0
    rows = [(first + i + 1, line) for i, line in enumerate(body) if line.startswith("|")]
    if len(rows) < 3:
        findings.append(f"{DOC}:{first}: the request path is no table (| ... | rows)")
        return 0
    header = [cell.strip().lower() for cell in rows[0][1].strip().strip("|").split("|")]
    try:
        function_column, file_column = header.index("function"), header.index("file")
    except ValueError:
        findings.append(f"{DOC}:{rows[0][0]}: the request path's table needs the columns "
                        f"'function' and 'file'")
        return 0
    crossed = set()
    for number, line in rows[2:]:
        cells = line.strip().strip("|").split("|")
        if len(cells) != len(header):
            findings.append(f"{DOC}:{number}: {len(cells)} cells, the header has {len(header)}")
            continue
        functions = re.findall(r"`([^`]+)`", cells[function_column])
        paths = re.findall(r"`([^`]+)`", cells[file_column])
        row_files = set()
        for path in paths:
            found = matches(path, files)
            if not found:
                findings.append(f"{DOC}:{number}: the request path names {path}, which is no "
                                f"source file")
            row_files |= found
        if not paths:
            findings.append(f"{DOC}:{number}: a request path step without a file")
        crossed |= {path for path in paths if matches(path, files)}
        text = ""
        for path in sorted(row_files):
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                text += f.read() + "\n"
        for function in functions:
            parts = function.replace("()", "").split("::")
            name_found = re.search(r"(?<![\w])" + re.escape(parts[-1]) + r"\s*\(", text)
            class_found = all(re.search(r"\b" + re.escape(p) + r"\b", text) for p in parts[:-1])
            if not (name_found and class_found):
                findings.append(f"{DOC}:{number}: the request path attaches {function} to "
                                f"{', '.join(paths)}, which {'do' if len(paths) > 1 else 'does'} "
                                f"not define it")
    said = [(first + i + 1, int(m.group(1))) for i, line in enumerate(body)
            for m in re.finditer(r"crosses (\d+) files", line)]
    if not said:
        findings.append(f"{DOC}:{first}: the request path says nowhere 'crosses N files'")
    for number, count in said:
        if count != len(crossed):
            findings.append(f"{DOC}:{number}: says the request crosses {count} files; its table "
                            f"names {len(crossed)}")
    return len(crossed)


def main():
    global ROOT
    ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..",
                                                               "..")
    with open(os.path.join(ROOT, DOC), encoding="utf-8") as f:
        lines = f.read().split("\n")
    files = source_files(ROOT)
    findings = []
    check_file_map(lines, files, findings)
    crossed = check_request_path(lines, files, findings)
    for finding in findings:
        print(finding)
    if findings:
        print(f"{len(findings)} findings: update {DOC} (its format is in this script's docstring)")
        return 1
    print(f"{DOC}: the file map names all {len(files)} source files; the request path's "
          f"functions are where it says, across {crossed} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
