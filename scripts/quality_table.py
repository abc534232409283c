#!/usr/bin/python3
"""Markdown table of a `gdp compare --records F` run: step time per method, the learned (or
searched) method against human and against random at the same budget, and how the search got
there (samples and wall time used, samples to within 5% of its final best).

  ./build/gdp compare --suite datasets/suites/pipedream.json \\
      --methods single,round-robin,human,random,gdp --samples 2000 --records /tmp/pd.json
  python3 scripts/quality_table.py /tmp/pd.json [more.json ...] [--method gdp] [--against random]

Checks printed under the table (docs/results.md, issue targets): the geometric mean of the
method's speed-up over human, every graph where it is worse than human by more than 1%, and
every graph where it is not better than `--against` (random) at the same budget.
"""
import argparse
import json
import math
import sys


def fmt_ms(r):
    if r is None:
        return "-"
    if not r["valid"]:
        return {"out_of_memory": "OOM", "split_colocation": "split"}.get(r["validity"],
                                                                         r["validity"])
    return f"{r['step_time_s'] * 1e3:.2f}"


def samples_to_within(curve, frac):
    """Samples at which the best-so-far first came within frac of the final best."""
    if not curve:
        return None
    final = curve[-1][2]
    for samples, _wall, best in curve:
        if best <= final * (1 + frac):
            return samples
    return curve[-1][0]


def first_within(curve, target):
    """(samples, wall_s) at which the best-so-far first reached target, or None."""
    for samples, wall, best in curve or []:
        if best <= target:
            return samples, wall
    return None


def search_time(cell, graphs, base, other, tol):
    """Search time of `other` (e.g. fine-tuning) against `base` (GDP-one from scratch): the
    samples and seconds each needs to come within tol of base's final best."""
    print(f"\nsearch time to within {tol:.0%} of {base}'s final best:\n")
    print(f"| graph | {base} final ms | {base} samples | {base} s | {other} samples | "
          f"{other} s | time saved |")
    print("|---|---|---|---|---|---|---|")
    for g in graphs:
        b, o = cell.get((g, base)), cell.get((g, other))
        if not (b and o and b["valid"]):
            continue
        target = b["step_time_s"] * (1 + tol)
        tb, to = first_within(b["curve"], target), first_within(o["curve"], target)
        row = [g, f"{b['step_time_s'] * 1e3:.2f}", str(tb[0]), f"{tb[1]:.1f}"]
        if to:
            row += [str(to[0]), f"{to[1]:.1f}", f"{1 - to[1] / tb[1]:.0%}" if tb[1] > 0 else "-"]
        else:
            row += ["not reached", f"({o['wall_s']:.1f})", "-"]
        print("| " + " | ".join(row) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+", help="one or more --records files (columns merged)")
    ap.add_argument("--method", default="gdp")
    ap.add_argument("--against", default="random")
    ap.add_argument("--reference", default="human")
    ap.add_argument("--search-time", nargs=2, metavar=("BASE", "OTHER"),
                    help="also the search time of OTHER against BASE (e.g. gdp finetune)")
    ap.add_argument("--tolerance", type=float, default=0.01, help="for --search-time")
    args = ap.parse_args()
    records = []
    for path in args.records:
        with open(path) as f:
            records += json.load(f)
    graphs, methods, cell = [], [], {}
    for r in records:
        if r["graph"] not in graphs:
            graphs.append(r["graph"])
        if r["method"] not in methods:
            methods.append(r["method"])
        cell[(r["graph"], r["method"])] = r
    m, ref, vs = args.method, args.reference, args.against
    if m not in methods:
        sys.exit(f"{', '.join(args.records)}: no records of method '{m}' (methods: {', '.join(methods)})")
    head = (["graph", "ops"] + [f"{x} ms" for x in methods] +
            [f"{m} / {ref}", f"{m} / {vs}", "samples", "wall s", "samples to 5%"])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    logs, worse, not_better = [], [], []
    for g in graphs:
        r = cell.get((g, m))
        row = [g, str(next(x for x in records if x["graph"] == g)["ops"])]
        row += [fmt_ms(cell.get((g, x))) for x in methods]
        for other, out in ((ref, True), (vs, False)):
            o = cell.get((g, other))
            if r and o and r["valid"] and o["valid"]:
                s = o["step_time_s"] / r["step_time_s"]
                row.append(f"{s:.3f}x")
                if out:
                    logs.append(math.log(s))
                    if s < 1 / 1.01:
                        worse.append(f"{g} ({s:.3f}x)")
                elif s <= 1.0:
                    not_better.append(f"{g} ({s:.3f}x)")
            else:
                row.append("-")
        if r:
            row += [str(r["samples"]), f"{r['wall_s']:.1f}",
                    str(samples_to_within(r["curve"], 0.05) or "-")]
        else:
            row += ["-", "-", "-"]
        print("| " + " | ".join(row) + " |")
    print()
    if logs:
        print(f"geomean speed-up of {m} over {ref}: {math.exp(sum(logs) / len(logs)):.3f}x "
              f"over {len(logs)} graphs valid under both")
    print(f"worse than {ref} by more than 1%: {', '.join(worse) if worse else 'none'}")
    print(f"not better than {vs}: {', '.join(not_better) if not_better else 'none'}")
    if args.search_time:
        search_time(cell, graphs, *args.search_time, args.tolerance)


if __name__ == "__main__":
    main()
