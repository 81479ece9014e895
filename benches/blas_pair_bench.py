#!/usr/bin/env python3
"""The bare GEMM pair of a Gibbs sweep (V W and H W^T), timed in a Python BLAS.

Usage: python blas_pair_bench.py LIBRARY DTYPE THREADS [NV NH CHAINS REPEATS]

LIBRARY is `torch` (PyTorch's CPU products, `torch.matmul` with `out=`) or `numpy` (the BLAS
numpy was built with, OpenBLAS for the wheels of the package registry); DTYPE is f32 or f64;
THREADS is the number of threads the library may use. numpy's BLAS reads its thread count from
the environment when it loads, so this script sets OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and
MKL_NUM_THREADS before importing anything; torch is also told with `torch.set_num_threads`.

The shapes and values are those of `benches/gibbs.rs`'s `gemm-pair` group: binary V (CHAINS x
NV) and H (CHAINS x NH), weights W (NV x NH); one repetition computes both products into
preallocated outputs. Prints one JSON line: the median and best seconds per pair and the
effective GFLOP/s (2 x 2 x CHAINS x NV x NH flops per pair), with the library's version and BLAS.
"""
import json
import os
import sys
import time

if not 4 <= len(sys.argv) <= 8:
    sys.exit(__doc__)
LIBRARY, DTYPE, THREADS = sys.argv[1], sys.argv[2], int(sys.argv[3])
NV, NH, CHAINS, REPEATS = (int(a) for a in (sys.argv[4:] + ["784", "200", "2000", "200"][len(sys.argv) - 4:]))
if LIBRARY not in ("torch", "numpy") or DTYPE not in ("f32", "f64") or THREADS < 1:
    sys.exit(__doc__)
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(THREADS)

import numpy as np  # noqa: E402

rng = np.random.default_rng(0)
dtype = np.float32 if DTYPE == "f32" else np.float64
v = (rng.random((CHAINS, NV)) < 0.5).astype(dtype)
h = (rng.random((CHAINS, NH)) < 0.5).astype(dtype)
w = (0.05 * rng.uniform(-1.0, 1.0, (NV, NH))).astype(dtype)

if LIBRARY == "torch":
    import torch

    torch.set_num_threads(THREADS)
    v, h, w = (torch.from_numpy(x) for x in (v, h, w))
    out_h, out_v = torch.empty(CHAINS, NH, dtype=w.dtype), torch.empty(CHAINS, NV, dtype=w.dtype)
    wt = w.T

    def pair():
        torch.matmul(v, w, out=out_h)
        torch.matmul(h, wt, out=out_v)

    version = f"torch {torch.__version__}"
    blas = "mkl" if torch.backends.mkl.is_available() else "other"
else:
    out_h, out_v = np.empty((CHAINS, NH), dtype), np.empty((CHAINS, NV), dtype)
    wt = w.T

    def pair():
        np.matmul(v, w, out=out_h)
        np.matmul(h, wt, out=out_v)

    version = f"numpy {np.__version__}"
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:  # older numpy: no dict mode
        blas = "unknown"

for _ in range(max(10, REPEATS // 10)):
    pair()
times = []
for _ in range(REPEATS):
    t = time.perf_counter()
    pair()
    times.append(time.perf_counter() - t)
times.sort()
median = times[len(times) // 2]
flops = 2 * 2 * CHAINS * NV * NH
print(json.dumps({"library": version, "blas": blas, "dtype": DTYPE, "threads": THREADS,
                  "median_s": median, "best_s": times[0], "gflops": flops / median / 1e9}))
