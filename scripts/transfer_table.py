#!/usr/bin/env python3
"""Tables of docs/results.md, "Transfer", from zero-shot evaluations and pre-training runs.

  transfer_table.py zeroshot [--methods M1,M2,...] SUITE LABEL=EVAL[,EVAL...] [LABEL=...]
      Zero-shot step times (ms) on one suite. Each EVAL is a directory holding SUITE.json, the
      `gdp compare --records` output of human and the zero-shot columns
      (scripts/transfer_eval.sh writes them: zsg, zsgb, own, zs);
      several EVALs under one label are seeds: the cells are mean +- sd over them. A column per
      label and method (default zs, the best of 64 candidates, then zsg, the greedy placement
      alone); the last row is the geomean speed-up over human (mean +- sd of the seeds'
      geomeans).
  transfer_table.py learning RUN [RUN ...]
      Whether each pre-training run learned: per run, the first and the last iteration's
      entropy, reward spread, gradient norm, approximate KL and signal t (means over the
      suite's graphs, from log.csv), its samples and its samples per second.

Invalid placements (out of memory) are left out of the means and geomeans, as `gdp compare`
leaves them out, and counted ("oom").
"""
import csv
import json
import math
import os
import sys


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def mean_sd(xs):
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def fmt(xs, digits=2):
    if not xs:
        return "oom"
    m, sd = mean_sd(xs)
    return ("%.*f" % (digits, m)) + (" ± %.*f" % (digits, sd) if len(xs) > 1 else "")


def read_eval(path):
    """{(graph, method): step ms or None}, graph order."""
    recs = json.load(open(path))
    if isinstance(recs, dict):
        recs = recs["records"]
    out, graphs = {}, []
    for r in recs:
        if r["graph"] not in graphs:
            graphs.append(r["graph"])
        out[(r["graph"], r["method"])] = r["step_time_s"] * 1e3 if r["valid"] else None
    return out, graphs


def zeroshot(suite, specs, methods=("zs", "zsg")):
    columns = []  # (label, [eval dicts])
    graphs = []
    for spec in specs:
        label, _, dirs = spec.partition("=")
        if not dirs:
            sys.exit("transfer_table: expected LABEL=EVAL[,EVAL...], got '%s'" % spec)
        evals = []
        for d in dirs.split(","):
            path = os.path.join(d, suite + ".json")
            if not os.path.exists(path):
                sys.exit("transfer_table: %s: missing (run the zero-shot evaluation first)" % path)
            e, gs = read_eval(path)
            evals.append(e)
            graphs += [g for g in gs if g not in graphs]
        columns.append((label, evals))
    human = {}
    for _, evals in columns:
        for e in evals:
            for g in graphs:
                if e.get((g, "human")) is not None:
                    human[g] = e[(g, "human")]
    heads = ["%s %s" % (l, m) for m in methods for l, _ in columns]
    print("| graph | human | " + " | ".join(heads) + " |")
    print("|---|---|" + "---|" * len(heads))
    for g in graphs:
        cells = []
        for m in methods:
            for l, evals in columns:
                xs = [e[(g, m)] for e in evals if e.get((g, m)) is not None]
                oom = len(evals) - len(xs)
                cells.append(fmt(xs) + (" (%d oom)" % oom if oom and xs else ""))
        print("| %s | %.2f | %s |" % (g, human.get(g, float("nan")), " | ".join(cells)))
    gm = []
    for m in methods:
        for l, evals in columns:
            per_seed = []
            for e in evals:
                xs = [human[g] / e[(g, m)] for g in graphs
                      if e.get((g, m)) is not None and g in human]
                per_seed.append(geomean(xs))
            # As `gdp compare` (eval::geomean_speedup): over the valid cells; "oom" says
            # how many were not.
            oom = sum(1 for e in evals for g in graphs if e.get((g, m)) is None)
            gm.append(fmt(per_seed, 3) + "x" + (" (%d oom)" % oom if oom else ""))
    print("| geomean over human | 1.000x | " + " | ".join(gm) + " |")


def learning(runs):
    print("| run | samples | samples/s | entropy first → last | reward std | grad norm | "
          "approx KL | signal t |")
    print("|---|---|---|---|---|---|---|---|")
    for run in runs:
        rows = list(csv.DictReader(open(os.path.join(run, "log.csv"))))
        if not rows:
            sys.exit("transfer_table: %s/log.csv: no rows" % run)
        its = sorted({int(r["iteration"]) for r in rows})

        def avg(it, key):
            xs = [float(r[key]) for r in rows if int(r["iteration"]) == it]
            xs = [x for x in xs if math.isfinite(x)]
            return sum(xs) / len(xs) if xs else float("nan")

        last = [r for r in rows if int(r["iteration"]) == its[-1]]
        samples = sum(int(r["samples"]) for r in last)
        wall = float(last[0]["wall_s"])

        def pair(key, f="%.3f"):
            return (f + " → " + f) % (avg(its[0], key), avg(its[-1], key))

        print("| %s | %d (%d it.) | %.1f | %s | %s | %s | %s | %s |" % (
            run, samples, its[-1], samples / wall if wall > 0 else float("nan"),
            pair("entropy"), pair("reward_std", "%.4f"), pair("grad_norm"),
            pair("approx_kl", "%.4f"), pair("signal_t", "%.2f")))


def main(argv):
    if len(argv) >= 3 and argv[0] == "zeroshot":
        methods = ("zs", "zsg")
        if argv[1] == "--methods":
            methods = tuple(argv[2].split(","))
            argv = argv[:1] + argv[3:]
        if len(argv) < 3:
            sys.exit(__doc__)
        zeroshot(argv[1], argv[2:], methods)
    elif len(argv) >= 2 and argv[0] == "learning":
        learning(argv[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
