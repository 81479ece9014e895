#!/usr/bin/env python3
"""The GPU benchmark table of the book and benches/README.md, generated from the records of one
run of scripts/gpu-check.sh (gpu.txt, bench.jsonl, peer.json in DIR): issue 40's targets beside
what was measured, every ratio between two numbers of the same run on the same GPU.

Usage: python3 scripts/gpu_table.py DIR > DIR/table.md
"""
import json
import sys
from pathlib import Path

d = Path(sys.argv[1])
gpu = (d / "gpu.txt").read_text().splitlines()[1].split(",")[0].strip()
rows = [json.loads(l) for l in (d / "bench.jsonl").read_text().splitlines() if l.startswith("{")]
peer = json.loads((d / "peer.json").read_text())
sweeps = {(r["precision"], r["chains"]): r for r in rows if r.get("bench") == "gibbs_sweep"}
by = {r["bench"]: r for r in rows if "bench" in r}


def m(x):
    return f"{x / 1e6:.1f} M"


def verdict(ok):
    return "**met**" if ok else "not met"


out = [
    f"Measured on one {gpu} (driver and clocks in `gpu.txt`), ebm and the peer (rbms 0.5.0 on "
    f"PyTorch {peer['torch']}) in the same run of `scripts/gpu-check.sh`; 784 x 200 Bernoulli "
    "RBM, chain-sweeps per second.",
    "",
    "| workload | ebm | reference in the same run | ratio | target |",
    "|---|---|---|---|---|",
]
for prec, n in [("f32", 2000), ("f32", 20000), ("f32", 200000), ("f64", 2000), ("f64", 20000)]:
    r = sweeps[(prec, n)]
    p = peer[f"cuda_rbms_{prec}_b{n}"]
    ratio = r["chain_sweeps_per_s"] / p
    target = f"≥ 1.5x: {verdict(ratio >= 1.5)}" if (prec, n) == ("f32", 2000) else ""
    out.append(f"| Gibbs sweep, {prec}, {n} chains | {m(r['chain_sweeps_per_s'])} | "
               f"rbms {m(p)} | {ratio:.2f}x rbms | {target} |")
for n in [2000, 20000, 200000]:
    r = sweeps[("f32", n)]
    g = peer[f"cuda_gemm_pair_f32_b{n}"]
    ratio = r["chain_sweeps_per_s"] / g
    target = f"≥ 0.8x: {verdict(ratio >= 0.8)}" if n == 200000 else ""
    out.append(f"| Gibbs sweep against the bare GEMM pair (PyTorch), f32, {n} chains | "
               f"{m(r['chain_sweeps_per_s'])} | GEMM pair {m(g)} (ebm's own cuBLAS pair "
               f"{m(r['gemm_pair_chain_sweeps_per_s'])}) | {ratio:.2f}x | {target} |")
pt = by["deo_pt_round"]
out.append(f"| DEO PT round, 10 rungs x 1000 chains, f32 | {pt['round_s'] * 1e3:.3f} ms | its sweep "
           f"{pt['sweep_s'] * 1e3:.3f} ms | {pt['round_over_sweep']:.2f}x | ≤ 1.3x: "
           f"{verdict(pt['round_over_sweep'] <= 1.3)} |")
lib = by.get("paper000_mnist01_training")
if lib:
    per = lib["seconds"] / lib["updates"]
    out.append(f"| paper 000 MNIST 0/1 training (SI Table 3), library, {lib['updates']} updates | "
               f"{lib['seconds']:.1f} s ({per * 1e4:.0f} s per 10 000) | | | |")
for start in ["scratch", "pretrained"]:
    c = by.get(f"cli_train_{start}")
    if c:
        ok = c["seconds"] <= 60 if c["updates"] >= 10000 else None
        target = (f"≤ 60 s: {verdict(ok)}" if ok is not None else "") if start == "scratch" else ""
        note = " (RCM fit on the host's cores included)" if start == "pretrained" else ""
        out.append(f"| paper 000 MNIST 0/1 training, `ebm train --device cuda`, {start}, "
                   f"{c['updates']} updates, end to end{note} | {c['seconds']:.1f} s | | | {target} |")
s32, s64 = sweeps[("f32", 2000)], sweeps[("f64", 2000)]
sweep_us = 2000 / s32["chain_sweeps_per_s"] * 1e6
pair_us = 2000 / s32["gemm_pair_chain_sweeps_per_s"] * 1e6
out.append("")
out.append(f"- At 2000 chains (f32) a sweep takes {sweep_us:.0f} µs, its two products "
           f"{pair_us:.0f} µs: the two sampling passes cost about {sweep_us - pair_us:.0f} µs.")
out.append(f"- ebm's cuBLAS pair in f64 runs at {m(s64['gemm_pair_chain_sweeps_per_s'])} chain-sweeps "
           f"per second at 2000 chains, against {m(s32['gemm_pair_chain_sweeps_per_s'])} in f32.")
if lib:
    out.append(f"- Paper 000's training costs {lib['seconds'] / lib['updates'] * 1e3:.2f} ms per "
               f"update (100 sweeps and the update).")
out.append(f"- On the same machine's CPU the peer ran {peer['cpu_rbms_f32_b2000'] / 1e3:.0f} k "
           f"chain-sweeps per second at 2000 chains ({peer['cpu_threads']} threads).")
print("\n".join(out))
