#!/usr/bin/env python3
"""Table and plot of the Gibbs size sweep: time per sweep / (chains x N_v x N_h).

Run the sweep first (on a quiet machine), then this script:

    cargo bench --bench gibbs -- --noplot size-sweep
    python3 benches/size_sweep.py [--out size-sweep.svg]

It reads criterion's results (`target/criterion/size-sweep_*/*/new/`), prints a markdown table
per line of the sweep (chains 250 -> 8000 at N_h = 200; N_h 50 -> 800 at 2000 chains; N_v = 784)
with the time per unit relative to the 2000 x 200 point, and writes an SVG of time per unit
against the size on a log axis. A flat line means the cost is linear in chains x N_v x N_h;
a rise shows where caches or the 128-chain chunking stop paying.
"""
import argparse
import glob
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(criterion_dir):
    lines = {}
    for path in glob.glob(os.path.join(criterion_dir, "size-sweep_*", "*", "new", "benchmark.json")):
        with open(path) as f:
            bench = json.load(f)
        with open(os.path.join(os.path.dirname(path), "estimates.json")) as f:
            median_ns = json.load(f)["median"]["point_estimate"]
        units = bench["throughput"]["Elements"]
        line = bench["group_id"].split("/", 1)[1]
        lines.setdefault(line, []).append((int(bench["value_str"]), median_ns, median_ns / units))
    for points in lines.values():
        points.sort()
    return lines


def svg(lines, path):
    w, h, m = 640, 360, 60
    colours = {"chains": "#1f77b4", "hidden": "#d62728"}
    per_unit = [p[2] for pts in lines.values() for p in pts]
    lo, hi = 0.0, max(per_unit) * 1.15
    xs = [p[0] for pts in lines.values() for p in pts]
    xlo, xhi = math.log2(min(xs)), math.log2(max(xs))

    def px(x):
        return m + (math.log2(x) - xlo) / (xhi - xlo) * (w - 2 * m)

    def py(y):
        return h - m + (lo - y) / (hi - lo) * (h - 2 * m)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle">Gibbs sweep, f32, 2 threads: time / (chains x N_v x N_h)</text>',
           f'<line x1="{m}" y1="{h - m}" x2="{w - m}" y2="{h - m}" stroke="black"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>',
           f'<text x="{w / 2}" y="{h - 15}" text-anchor="middle">chains (N_h = 200) or N_h (2000 chains), log scale</text>',
           f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle">ps per unit</text>']
    for tick in sorted(set(xs)):
        out.append(f'<text x="{px(tick):.1f}" y="{h - m + 15}" text-anchor="middle">{tick}</text>')
    for k in range(5):
        y = hi * k / 4
        out.append(f'<text x="{m - 5}" y="{py(y) + 4:.1f}" text-anchor="end">{y * 1e3:.1f}</text>')
    for i, (line, pts) in enumerate(sorted(lines.items())):
        colour = colours.get(line, "black")
        poly = " ".join(f"{px(x):.1f},{py(u):.1f}" for x, _, u in pts)
        out.append(f'<polyline points="{poly}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.extend(f'<circle cx="{px(x):.1f}" cy="{py(u):.1f}" r="3" fill="{colour}"/>' for x, _, u in pts)
        out.append(f'<text x="{w - m - 150}" y="{m + 15 * i}" fill="{colour}">varying {line}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--criterion", default=os.path.join(ROOT, "target", "criterion"))
    p.add_argument("--out", default="size-sweep.svg")
    args = p.parse_args()
    lines = load(args.criterion)
    if not lines:
        sys.exit(f"no size-sweep results under {args.criterion}: run `cargo bench --bench gibbs -- --noplot size-sweep` first")
    ref = next((u for x, _, u in lines.get("chains", []) if x == 2000), None)
    for line, pts in sorted(lines.items()):
        print(f"\n| {line} | median time per sweep | ps per chain x N_v x N_h | relative to 2000 x 200 |")
        print("|---|---|---|---|")
        for x, ns, u in pts:
            rel = f"{u / ref:.2f}" if ref else "-"
            print(f"| {x} | {ns / 1e6:.2f} ms | {u * 1e3:.2f} | {rel} |")
    svg(lines, args.out)
    print(f"\nplot written to {args.out}")


if __name__ == "__main__":
    main()
