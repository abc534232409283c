#!/usr/bin/env python3
"""Tables of docs/results.md, "Search and learning together", from `gdp suite run` directories.

  search_learning_table.py quality RUN [RUN ...]   step time per graph and column (mean +- sd over
      seeds, ms), the lower bound, speed-ups over human and anneal, geomeans; whether each
      guided column beats `anneal` on every graph anneal leaves above its bound
  search_learning_table.py finetune RUN [RUN ...] [--base LABEL] [--tuned LABEL]
      for each graph and seed: GDP-one's final best (label gdp_one), the search seconds and
      samples fine-tuning (label finetune) needs to reach it, as shares of GDP-one's seconds
      and samples (the samples share is the fair one when the runs did not share a machine's
      load)

Columns are the runs' labels (records' "method"); a label in several runs is an error.
"""
import json
import math
import os
import sys


def records(run_dirs):
    out = {}
    for d in run_dirs:
        for r in json.load(open(os.path.join(d, "results.json")))["records"]:
            key = (r["graph"], r["method"], r["seed"])
            if key in out:
                sys.exit("%s: %s/%s/s%d appears twice" % (d, *key))
            out[key] = r
    return out


def mean_sd(xs):
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def quality(run_dirs):
    rec = records(run_dirs)
    graphs = list(dict.fromkeys(g for g, _, _ in rec))
    labels = list(dict.fromkeys(m for _, m, _ in rec))
    step = {}
    bound = {}
    for (g, m, s), r in rec.items():
        bound[g] = r["lower_bound_s"] * 1e3
        if r["valid"]:
            step.setdefault((g, m), []).append(r["step_time_s"] * 1e3)
    print("| graph | bound | " + " | ".join(labels) + " |")
    print("|---|---|" + "---|" * len(labels))
    for g in graphs:
        cells = []
        for m in labels:
            xs = step.get((g, m), [])
            if not xs:
                cells.append("-")
                continue
            mu, sd = mean_sd(xs)
            cells.append("%.2f ± %.2f" % (mu, sd) if len(xs) > 1 else "%.2f" % mu)
        print("| %s | %.2f | %s |" % (g, bound[g], " | ".join(cells)))
    mean = {k: mean_sd(v)[0] for k, v in step.items()}
    for base in ("human", "anneal"):
        if base not in labels:
            continue
        row = []
        for m in labels:
            ratios = [mean[(g, base)] / mean[(g, m)] for g in graphs
                      if (g, base) in mean and (g, m) in mean]
            row.append("%.3fx" % geomean(ratios))
        print("| geomean speed-up over %s | | %s |" % (base, " | ".join(row)))
    if "anneal" in labels:
        for m in labels:
            if m in ("anneal", "human") or m.startswith("anneal"):
                continue
            better, equal, worse = [], [], []
            for g in graphs:
                if (g, m) not in mean or (g, "anneal") not in mean:
                    continue
                a, x = mean[(g, "anneal")], mean[(g, m)]
                at_bound = a <= bound[g] * 1.0001
                (better if x < a * (1 - 1e-9) else equal if x <= a * (1 + 1e-9) else worse).append(
                    "%s%s" % (g, " (anneal at its bound)" if at_bound else ""))
            print("\n%s against anneal (mean over seeds): better on %d (%s); equal on %d; worse on "
                  "%d (%s)" % (m, len(better), ", ".join(better), len(equal), len(worse),
                               ", ".join(worse)))


def finetune(run_dirs, base="gdp_one", tuned="finetune"):
    rec = records(run_dirs)
    print("| graph | seed | GDP-one final ms | GDP-one s (samples) | fine-tune reaches it at s "
          "(samples) | share of seconds | share of samples |")
    print("|---|---|---|---|---|---|---|")
    shares, sample_shares = [], []
    for (g, m, s), r in sorted(rec.items()):
        if m != base or not r["valid"]:
            continue
        t = rec.get((g, tuned, s))
        if t is None:
            continue
        target = r["step_time_s"]
        hit = next((p for p in sorted(t["curve"], key=lambda p: p[0]) if p[2] <= target), None)
        if hit is None:
            share = sample_share = float("inf")
            reach = "not reached (final %.2f ms)" % (t["step_time_s"] * 1e3)
        else:
            share = hit[1] / r["wall_s"]
            sample_share = hit[0] / r["samples"]
            reach = "%.1f (%d)" % (hit[1], hit[0])
        shares.append(share)
        sample_shares.append(sample_share)
        pct = lambda x: "%.1f%%" % (100 * x) if math.isfinite(x) else "-"
        print("| %s | %d | %.2f | %.1f (%d) | %s | %s | %s |" % (
            g, s, target * 1e3, r["wall_s"], r["samples"], reach, pct(share), pct(sample_share)))
    for name, xs in (("seconds", shares), ("samples", sample_shares)):
        fin = sorted(xs)
        if fin:
            med = fin[len(fin) // 2]
            print("\n%s: reached in %d of %d cells; median share %s" % (
                name, sum(math.isfinite(x) for x in fin), len(fin),
                "%.1f%%" % (100 * med) if math.isfinite(med) else "not reached"))


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("quality", "finetune"):
        sys.exit(__doc__)
    if sys.argv[1] == "quality":
        quality(sys.argv[2:])
    else:
        args, labels = [], {}
        it = iter(sys.argv[2:])
        for a in it:
            if a in ("--base", "--tuned"):
                labels[a[2:]] = next(it, None) or sys.exit("%s: needs a label" % a)
            else:
                args.append(a)
        finetune(args, **labels)
