#!/usr/bin/env python3
"""Copies the run records of one 784 x 200 MNIST 0/1 model into records/ (standard library only).

    python3 scripts/paper000_784x200_records.py DIR pretrained|scratch SEED [RECORDS]

DIR is the directory of scripts/paper000_mnist_784x200.sh (the training, in slices
START-seedSEED-K.json) and of scripts/paper000_fig4_mnist_784x200.sh (fig4-START-seedSEED/*.json).
Writes RECORDS/START-seedSEED/ (RECORDS defaults to records/paper000-mnist01-784x200):

- train.json: the record of the training's last slice, with `slices` added: every slice's
  command line, elapsed seconds, commit (when recorded) and last update;
- NAME.json for NAME in gibbs, gibbs-every-k, pt, pt-ref, ptt, ptt-deo and reference: the
  sampling records as written, except that the per-step curves of the mode jumps (`steps`,
  `gibbs_sweeps`, `cumulative_mean_jumps`) keep every 50th point and the last, to keep the
  repository small. Such a copy says so in `copied` and drops its `checksum`, which was of
  the whole record.

tests/reproductions.rs renders REPRODUCTIONS.md's tables from these copies.
"""

import json
import os
import sys

SAMPLERS = ["gibbs", "gibbs-every-k", "pt", "pt-ref", "ptt", "ptt-deo", "reference"]
CURVES = ["steps", "gibbs_sweeps", "cumulative_mean_jumps"]
KEEP_EVERY = 50


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def thin(values):
    kept = values[::KEEP_EVERY]
    if (len(values) - 1) % KEEP_EVERY:
        kept.append(values[-1])
    return kept


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__)
    runs, start, seed = argv[1], argv[2], argv[3]
    if start not in ("pretrained", "scratch"):
        sys.exit(f"the start is pretrained or scratch, not {start}")
    records = argv[4] if len(argv) == 5 else "records/paper000-mnist01-784x200"
    stem = os.path.join(runs, f"{start}-seed{seed}")
    slices = []
    while os.path.exists(f"{stem}-{len(slices) + 1}.json"):
        slices.append(load(f"{stem}-{len(slices) + 1}.json"))
    if not slices:
        sys.exit(f"no training records {stem}-K.json")
    last = slices[-1]
    if last["results"]["updates"] < 10000:
        sys.exit(f"{stem}-{len(slices)}.json: the training is at update "
                 f"{last['results']['updates']} of 10000")
    out = os.path.join(records, f"{start}-seed{seed}")
    os.makedirs(out, exist_ok=True)
    train = dict(last)
    train.pop("checksum", None)
    train["copied"] = (f"the record of the last of {len(slices)} slices of the training, "
                       "with the slices listed")
    train["slices"] = [
        {
            "arguments": s["arguments"],
            "elapsed_seconds": s["elapsed_seconds"],
            "commit": s["versions"].get("commit"),
            "updates": s["results"]["updates"],
        }
        for s in slices
    ]
    write(os.path.join(out, "train.json"), train)
    fig4 = os.path.join(runs, f"fig4-{start}-seed{seed}")
    for name in SAMPLERS:
        record = load(os.path.join(fig4, f"{name}.json"))
        record.pop("checksum", None)
        jumps = record["results"]["mode_jumps"]
        for key in CURVES:
            jumps[key] = thin(jumps[key])
        record["copied"] = (f"the per-step mode-jump curves keep every {KEEP_EVERY}th point "
                            "and the last")
        write(os.path.join(out, f"{name}.json"), record)
    print(out)


if __name__ == "__main__":
    main(sys.argv)
