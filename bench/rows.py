"""The rows benchmark scripts collect, one line per run: "NAME KEY {json figures}"; and their
medians per (NAME, KEY) over the rounds."""

import json
import statistics


def load(path):
    rows = {}
    for line in open(path):
        name, key, data = line.split(" ", 2)
        rows.setdefault((name, key), []).append(json.loads(data))
    return rows


def median(rows, name, key, figure):
    return statistics.median(r[figure] for r in rows[(name, key)])


def medians(path):
    """med(name, key, figure) over the rows in `path`, and the rows themselves."""
    rows = load(path)
    return (lambda name, key, figure: median(rows, name, key, figure)), rows
