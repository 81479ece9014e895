#!/usr/bin/env python3
"""Compares two directories written by scripts/golden-outputs.sh (the program before and after
a change): every file byte for byte, except what is measured rather than computed.

    python3 scripts/golden-compare.py BEFORE AFTER

Left out of the comparison, and only these:
- in run records (`*.json`): `elapsed_seconds`, `versions.commit`, the program's path (the
  first of the `arguments`) and `checksum` (which covers them), and every key whose name says
  it is a time (`*seconds*`, `*_per_second`, `wall_clock*`);
- in the captured console output (`out-*.txt`) and in `*.md` reports: numbers followed by `s`,
  `ms`, `min` or `/s` (durations and rates), and progress lines;
- in CSV logs, columns whose header says they are times (`seconds`, `wall_clock`, ...);
- the demo's runs at equal wall-clock time (`demo/*-time.*`), whose lengths are set by a
  measured time, and so the demo's record, report and console output that list them.
Everything else (samples, models, trajectories, figures, estimates, warnings) must be equal.
Exits 1 and lists the differences otherwise.
"""
import csv
import io
import json
import os
import re
import sys

TIME_KEY = re.compile(r"(seconds|per_second|wall_clock|elapsed|sweeps_per_s)", re.I)
DURATION = re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?\s?(s|ms|min|µs|/s)\b")


def strip_times(value):
    if isinstance(value, dict):
        return {
            k: strip_times(v)
            for k, v in value.items()
            if not TIME_KEY.search(k) and k not in ("checksum", "commit")
        }
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


def normalise(path, data):
    name = os.path.basename(path)
    if name.endswith(".json"):
        try:
            record = json.loads(data)
            if isinstance(record, dict) and record.get("arguments"):
                record["arguments"][0] = "ebm"
            return json.dumps(strip_times(record), sort_keys=True).encode()
        except ValueError:
            return data
    if name.endswith((".txt", ".md")):
        text = data.decode("utf-8", "replace")
        return DURATION.sub("<time>", text).encode()
    if name.endswith(".csv"):
        rows = list(csv.reader(io.StringIO(data.decode("utf-8", "replace"))))
        if rows:
            keep = [i for i, h in enumerate(rows[0]) if not TIME_KEY.search(h)]
            return "\n".join(",".join(r[i] for i in keep if i < len(r)) for r in rows).encode()
    return data


MEASURED = re.compile(r"^demo/(.*-time\.[^/]*|demo\.json|report\.md)$")


def demo_output(root):
    """The console output file of the `ebm demo` command, which lists its equal-time runs."""
    lines = open(os.path.join(root, "commands.txt")).read().splitlines()
    return {f"out-{i + 1}.txt" for i, line in enumerate(lines) if line.startswith("$ ebm demo")}


def files(root):
    out = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = sys.argv[1:]
    skip = demo_output(a) | demo_output(b)
    fa = {f for f in files(a) if not MEASURED.match(f) and f not in skip}
    fb = {f for f in files(b) if not MEASURED.match(f) and f not in skip}
    bad = [f"only in {a}: {f}" for f in sorted(fa - fb)]
    bad += [f"only in {b}: {f}" for f in sorted(fb - fa)]
    same = 0
    for f in sorted(fa & fb):
        x = normalise(f, open(os.path.join(a, f), "rb").read())
        y = normalise(f, open(os.path.join(b, f), "rb").read())
        if x == y:
            same += 1
        else:
            bad.append(f"differs: {f}")
    for line in bad:
        print(line)
    print(f"{same} files equal, {len(bad)} differences")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
