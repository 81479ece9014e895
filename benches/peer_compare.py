#!/usr/bin/env python3
"""Side-by-side comparison of ebm with the `rbms` PyTorch library, in one command.

Usage (from the repository root):

    python3 benches/peer_compare.py [--rounds N] [--venv DIR] [--skip-train] [--quick]
    python3 benches/peer_compare.py --products [--rounds N] [--venv DIR] [--quick]

What it does:
1. creates the peer's Python environment from the package registry if DIR has none
   (`python3 -m venv DIR && DIR/bin/pip install torch rbms==0.5.0 numpy`, a few GB once);
2. builds the criterion benches of ebm once;
3. runs N interleaved rounds; in each round, back to back on the same machine:
   - ebm: the Bernoulli 784 x 200 Gibbs sweep and its bare GEMM pair, 2000 chains, f32,
     2 threads (`benches/gibbs.rs`), then the peer's sweep on the same shape
     (`../shared/bench/rbms_gibbs_bench.py`, or `benches/` if the shared folder is absent);
   - unless --skip-train: one PCD-10 update of ebm (`crates/ebm-train/benches/train.rs`) and
     the peer's (`benches/rbms_train_bench.py`), same configuration;
4. prints a table of ratios per round (ebm / peer throughput, sweep / GEMM pair) and the
   processor it ran on.

With --products it compares the products alone instead: in each round, ebm's bare GEMM pair
(`benches/gibbs.rs`, the `gemm` crate as the sampler calls it) in f32 and f64 on 1 and 2
threads, then the same pair in PyTorch and in numpy's BLAS (OpenBLAS for the registry's wheels)
with the same shapes, dtypes and threads (`benches/blas_pair_bench.py`), and prints ebm's time
over each library's (above 1: ebm is slower) with the best of the two.

Only ratios measured in the same round are meaningful: the machine's speed drifts between
rounds. Run it on a quiet machine; nothing in the test suite depends on these numbers.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
SWEEP = "gibbs/bernoulli/784x200/chains=2000/f32/sweep/threads=2"
GEMM = "gemm-pair/784x200/chains=2000/f32/two-gemms/threads=2"
UPDATE = "train/bernoulli/784x200/batch=2000/chains=2000/pcd-10 update"


def processor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def criterion_medians(text):
    """Median times (seconds) by benchmark id, parsed from criterion's console output."""
    medians, current = {}, None
    for line in text.splitlines():
        m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
        head = line.split("time:")[0].strip()
        if m:
            name = head or current
            medians[name] = float(m.group(1)) * UNITS[m.group(2)]
        elif line and not line[0].isspace() and not line.startswith(("Benchmarking", "Found", "Gnuplot", "Warning")):
            current = line.strip()
    return medians


def run(cmd, **kw):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        sys.exit(f"command failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return out.stdout


def ebm_bench(args, package, bench, filter_):
    cmd = ["cargo", "bench"] + (["-p", package] if package else []) + ["--bench", bench, "--",
           "--noplot", "--warm-up-time", "1", "--measurement-time", "2" if args.quick else "5", filter_]
    return criterion_medians(run(cmd))


def peer(args, script, *argv):
    python = os.path.join(args.venv, "bin", "python")
    return json.loads(run([python, script, *map(str, argv)]).strip().splitlines()[-1])


def find_script(name):
    for folder in (os.path.join(ROOT, "..", "shared", "bench"), os.path.join(ROOT, "benches")):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    sys.exit(f"peer script {name} not found in ../shared/bench or benches/")


def products(args):
    """Rounds of the bare GEMM pair in ebm, PyTorch and numpy's BLAS; prints the table."""
    script = os.path.join(ROOT, "benches", "blas_pair_bench.py")
    repeats = 60 if args.quick else 200
    rows = []
    for r in range(1, args.rounds + 1):
        m = ebm_bench(args, None, "gibbs", "gemm-pair/784x200/")
        for dtype in ("f32", "f64"):
            for threads in (1, 2):
                ebm = m[f"gemm-pair/784x200/chains=2000/{dtype}/two-gemms/threads={threads}"]
                torch = peer(args, script, "torch", dtype, threads, 784, 200, 2000, repeats)
                blas = peer(args, script, "numpy", dtype, threads, 784, 200, 2000, repeats)
                rows.append({"round": r, "dtype": dtype, "threads": threads, "ebm_s": ebm,
                             "torch_s": torch["median_s"], "torch": torch["library"],
                             "numpy_s": blas["median_s"], "numpy": f"{blas['library']} ({blas['blas']})"})
    print(f"\nProcessor: {processor()}; {os.cpu_count()} logical cores; {rows[0]['torch']}; "
          f"{rows[0]['numpy']}\n")
    print("| round | dtype | threads | ebm GEMM pair | PyTorch | numpy's BLAS | ebm / PyTorch | ebm / BLAS | ebm / best |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        best = min(row["torch_s"], row["numpy_s"])
        print(f"| {row['round']} | {row['dtype']} | {row['threads']} | {row['ebm_s'] * 1e3:.2f} ms | "
              f"{row['torch_s'] * 1e3:.2f} ms | {row['numpy_s'] * 1e3:.2f} ms | "
              f"{row['ebm_s'] / row['torch_s']:.2f}x | {row['ebm_s'] / row['numpy_s']:.2f}x | "
              f"{row['ebm_s'] / best:.2f}x |")
    print("\n" + json.dumps(rows))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--venv", default=os.path.join(ROOT, ".venv-peer"))
    p.add_argument("--skip-train", action="store_true", help="compare Gibbs sweeps only")
    p.add_argument("--quick", action="store_true", help="shorter measurements (noisier)")
    p.add_argument("--products", action="store_true",
                   help="compare the bare GEMM pairs (ebm, PyTorch, numpy's BLAS) instead")
    args = p.parse_args()
    if args.rounds < 1:
        sys.exit("--rounds must be at least 1")

    if not os.path.exists(os.path.join(args.venv, "bin", "python")):
        run([sys.executable, "-m", "venv", args.venv])
        run([os.path.join(args.venv, "bin", "pip"), "install", "torch", "rbms==0.5.0", "numpy"])
    run(["cargo", "bench", "--bench", "gibbs", "--no-run"])
    if args.products:
        return products(args)
    if not args.skip_train:
        run(["cargo", "bench", "-p", "ebm-train", "--bench", "train", "--no-run"])

    gibbs_script = find_script("rbms_gibbs_bench.py")
    train_script = os.path.join(ROOT, "benches", "rbms_train_bench.py")
    rows = []
    for r in range(1, args.rounds + 1):
        m = ebm_bench(args, None, "gibbs", "784x200/chains=2000/f32/(sweep|two-gemms)/threads=2")
        sweep, gemm = m[SWEEP], m[GEMM]
        g = peer(args, gibbs_script, 784, 200, 2000, 20 if args.quick else 50, "f32")
        row = {"round": r, "ebm_sweep_s": sweep, "gemm_pair_s": gemm,
               "ebm_chain_sweeps_per_s": 2000 / sweep, "peer_chain_sweeps_per_s": g["chain_sweeps_per_s"],
               "peer": g["peer"]}
        if not args.skip_train:
            t = ebm_bench(args, "ebm-train", "train", "pcd-10 update")
            q = peer(args, train_script, 3 if args.quick else 10)
            row.update(ebm_update_s=t[UPDATE], peer_update_s=q["seconds_per_update"],
                       peer_best_update_s=q["best_seconds_per_update"])
        rows.append(row)

    print(f"\nProcessor: {processor()}; {os.cpu_count()} logical cores; peer {rows[0]['peer']}\n")
    head = "| round | ebm sweep | GEMM pair | sweep / GEMM pair | ebm chain-sweeps/s | peer chain-sweeps/s | ebm / peer |"
    if not args.skip_train:
        head += " ebm PCD-10 update | peer update (mean) | peer / ebm |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for row in rows:
        line = (f"| {row['round']} | {row['ebm_sweep_s'] * 1e3:.2f} ms | {row['gemm_pair_s'] * 1e3:.2f} ms | "
                f"{row['ebm_sweep_s'] / row['gemm_pair_s']:.2f}x | {row['ebm_chain_sweeps_per_s'] / 1e3:.1f} k | "
                f"{row['peer_chain_sweeps_per_s'] / 1e3:.1f} k | "
                f"{row['ebm_chain_sweeps_per_s'] / row['peer_chain_sweeps_per_s']:.2f}x |")
        if not args.skip_train:
            line += (f" {row['ebm_update_s'] * 1e3:.1f} ms | {row['peer_update_s'] * 1e3:.1f} ms | "
                     f"{row['peer_update_s'] / row['ebm_update_s']:.2f}x |")
        print(line)
    print("\n" + json.dumps(rows))


if __name__ == "__main__":
    main()
