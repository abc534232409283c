#!/usr/bin/python3
"""Markdown tables of learned placers from a `gdp suite run` directory (its cells/): per graph,
each method's best step time (mean over seeds), the speed-up of one method (default `gdp`) over
each other, and the samples and wall seconds each method took to come within 5% of its own
final best (read from its convergence curve), with the ratio of those to a reference method's
(default `hdp`; the GDP paper reports 15x fewer samples than HDP).

  ./build/gdp suite run datasets/suites/paper.json --methods gdp,hdp,placeto --seeds 1 \\
      --budget samples=2000 --out runs/learned
  python3 scripts/learned_table.py runs/learned [--main gdp] [--versus hdp]
"""
import argparse
import glob
import json
import math
import os
import sys


def within(curve, frac):
    """(samples, wall_s) at which the best first came within frac of the final best."""
    if not curve:
        return None, None
    final = curve[-1][2]
    for s, w, b in curve:
        if b <= final * (1 + frac):
            return s, w
    return curve[-1][0], curve[-1][1]


def reach(curve, target):
    """Samples at which the best first reached target (None: never)."""
    for smp, _w, b in curve:
        if b <= target:
            return smp
    return None


def mean(xs):
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return sum(xs) / len(xs) if xs else None


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a gdp suite run directory")
    ap.add_argument("--main", default="gdp", help="the method whose speed-up is shown")
    ap.add_argument("--versus", default="hdp", help="the method samples/wall are compared to")
    a = ap.parse_args()
    cells = sorted(glob.glob(os.path.join(a.run, "cells", "*.json")))
    if not cells:
        sys.exit(f"learned_table.py: {a.run}/cells: no cell files (is it a gdp suite run?)")
    by = {}  # (graph, method) -> [records]
    graphs, methods = [], []
    for f in cells:
        try:
            r = json.load(open(f))["record"]
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"learned_table.py: {f}: not a suite cell ({e})")
        by.setdefault((r["graph"], r["method"]), []).append(r)
        if r["graph"] not in graphs:
            graphs.append(r["graph"])
        if r["method"] not in methods:
            methods.append(r["method"])
    others = [m for m in methods if m != a.main]

    def stat(g, m):
        rs = [r for r in by.get((g, m), []) if r["valid"]]
        if not rs:
            return None
        w = [within(r["curve"], 0.05) for r in rs]
        return {
            "step_ms": mean([r["step_time_s"] * 1e3 for r in rs]),
            "samples": mean([r["samples"] for r in rs]),
            "wall": mean([r["wall_s"] for r in rs]),
            "s5": mean([x[0] for x in w]),
            "w5": mean([x[1] for x in w]),
        }

    head = ["graph"] + [f"{m} ms" for m in methods] + [f"{a.main} / {m}" for m in others]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    speedups = {m: [] for m in others}
    for g in graphs:
        st = {m: stat(g, m) for m in methods}
        row = [g] + [fmt(st[m] and st[m]["step_ms"], ".2f") for m in methods]
        for m in others:
            s = None
            if st[m] and st[a.main]:
                s = st[m]["step_ms"] / st[a.main]["step_ms"]
                speedups[m].append(s)
            row.append(fmt(s, ".3f") + ("x" if s else ""))
        print("| " + " | ".join(row) + " |")
    print("| geomean | " + " | ".join([""] * len(methods)) + " | " +
          " | ".join(fmt(geomean(speedups[m]), ".3f") + "x" for m in others) + " |")
    print()
    head = ["graph"] + [f"{m} samples to 5%" for m in methods] + [f"{m} s to 5%" for m in methods]
    if a.versus in methods and a.main in methods:
        head += [f"samples {a.main} / {a.versus}", f"s {a.main} / {a.versus}"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    ratios_s, ratios_w = [], []
    for g in graphs:
        st = {m: stat(g, m) for m in methods}
        row = [g] + [fmt(st[m] and st[m]["s5"], ".0f") for m in methods] + \
              [fmt(st[m] and st[m]["w5"], ".1f") for m in methods]
        if a.versus in methods and a.main in methods:
            rs = rw = None
            if st[a.main] and st[a.versus]:
                rs = st[a.main]["s5"] / max(1, st[a.versus]["s5"])
                rw = st[a.main]["w5"] / st[a.versus]["w5"] if st[a.versus]["w5"] > 0 else None
                ratios_s.append(rs)
                ratios_w.append(rw)
            row += [fmt(rs, ".2f"), fmt(rw, ".2f")]
        print("| " + " | ".join(row) + " |")
    if ratios_s:
        print(f"\ngeomean ratio of samples to within 5% ({a.main} / {a.versus}): "
              f"{fmt(geomean(ratios_s), '.2f')}; of seconds: {fmt(geomean(ratios_w), '.2f')}")
    if a.versus not in methods or a.main not in methods:
        return
    # Convergence on a common target: the samples each needed to reach the versus method's final
    # best (seed by seed: the main method's curve against the versus method's final step).
    print(f"\n| graph | {a.versus} final ms | {a.versus} samples to its best | "
          f"{a.main} samples to reach it | ratio {a.versus} / {a.main} |")
    print("|---|---|---|---|---|")
    ratios = []
    for g in graphs:
        v = [r for r in by.get((g, a.versus), []) if r["valid"]]
        m = {r["seed"]: r for r in by.get((g, a.main), []) if r["valid"]}
        vs, ms = [], []
        for r in v:
            if r["seed"] not in m or not r["curve"]:
                continue
            vs.append(r["curve"][-1][0])
            ms.append(reach(m[r["seed"]]["curve"], r["step_time_s"]))
        if not vs:
            continue
        never = any(x is None for x in ms)
        mv = mean(vs)
        mm = None if never else mean(ms)
        ratio = mv / mm if mm else None
        if ratio:
            ratios.append(ratio)
        print(f"| {g} | {fmt(mean([r['step_time_s'] * 1e3 for r in v]), '.2f')} | {fmt(mv, '.0f')} | "
              f"{'never' if never else fmt(mm, '.0f')} | {fmt(ratio, '.2f')} |")
    print(f"\ngeomean ratio ({a.versus} samples to its best / {a.main} samples to reach it), over "
          f"{len(ratios)} graphs where {a.main} reached it: {fmt(geomean(ratios), '.2f')}")


if __name__ == "__main__":
    main()
