#!/usr/bin/python3
"""Markdown tables of the algorithmic baselines from `gdp compare --records F` runs: per graph,
the step-time lower bound, each method's step time with its gap to the bound (step / bound) and
validity, each method's placement time, and for searches the best step time after given
sample counts (read from the convergence curve).

  ./build/gdp compare --suite datasets/suites/paper.json \\
      --methods human,metis,m-topo,m-etf,m-sct,anneal --samples 10000 --records /tmp/paper.json
  python3 scripts/baseline_table.py /tmp/paper.json [more.json ...] [--at anneal=1000,10000]
"""
import argparse
import json
import math


def cell(r):
    if r is None:
        return "-"
    if not r["valid"]:
        return {"out_of_memory": "OOM", "method_failed": "failed"}.get(r["validity"], r["validity"])
    return f"{r['step_time_s'] * 1e3:.1f} ({r['gap_to_bound']:.2f})"


def best_at(curve, samples):
    best = None
    for s, _wall, b in curve:
        if s <= samples:
            best = b
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", nargs="+")
    ap.add_argument("--at", default="", help="METHOD=N1,N2: best of a search after N samples")
    a = ap.parse_args()
    records = []
    for f in a.records:
        records += json.load(open(f))
    graphs, methods, by = [], [], {}
    for r in records:
        if r["graph"] not in graphs:
            graphs.append(r["graph"])
        if r["method"] not in methods:
            methods.append(r["method"])
        by[(r["graph"], r["method"])] = r
    at_method, at_samples = None, []
    if a.at:
        at_method, ns = a.at.split("=")
        at_samples = [int(x) for x in ns.split(",")]

    head = ["graph", "ops", "bound ms"] + methods + [f"{at_method}@{n}" for n in at_samples]
    print("Step time in ms (step / lower bound); OOM: out of memory\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    logs = {m: [] for m in methods}
    for g in graphs:
        any_r = next(by[(g, m)] for m in methods if (g, m) in by)
        bound = any_r["lower_bound_s"]
        row = [g, str(any_r["ops"]), f"{bound * 1e3:.1f}"]
        for m in methods:
            r = by.get((g, m))
            row.append(cell(r))
            if r is not None and r["valid"]:
                logs[m].append(math.log(r["gap_to_bound"]))
        for n in at_samples:
            r = by.get((g, at_method))
            b = best_at(r["curve"], n) if r else None
            row.append(f"{b * 1e3:.1f} ({b / bound:.2f})" if b and math.isfinite(b) else "-")
        best = min((by[(g, m)]["step_time_s"] for m in methods
                    if (g, m) in by and by[(g, m)]["valid"]), default=None)
        if best is not None:
            row = [c if not c.startswith(f"{best * 1e3:.1f} (") else f"**{c}**" for c in row]
        print("| " + " | ".join(row) + " |")
    gm = ["geomean step / bound", "", ""]
    for m in methods:
        gm.append(f"{math.exp(sum(logs[m]) / len(logs[m])):.3f} ({len(logs[m])})" if logs[m] else "-")
    gm += [""] * len(at_samples)
    print("| " + " | ".join(gm) + " |")

    print("\nPlacement wall time in s (samples simulated)\n")
    head = ["graph"] + methods
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for g in graphs:
        row = [g]
        for m in methods:
            r = by.get((g, m))
            row.append("-" if r is None else f"{r['wall_s']:.3g} ({r['samples']})")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
