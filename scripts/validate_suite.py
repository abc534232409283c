#!/usr/bin/python3
"""`gdp validate --backend cpu` on every graph of a suite: generates each entry's graph with
`gdp gen` (its model and options), places it round-robin with `gdp place`, runs `gdp validate
--json`, and prints Markdown tables of the measured against the predicted step per graph and
the error per op class (median over the graphs), with the median and p90 of |error|.
Error = (predicted - measured median) / measured median, as `gdp validate` prints it.

  build-dev/gdp calibrate --backend cpu --out /tmp/cal/cpu.json \\
      --cluster-out /tmp/cal/cpu_cluster.json --devices 2
  python3 scripts/validate_suite.py datasets/suites/smoke.json --out /tmp/vs \\
      --cluster /tmp/cal/cpu_cluster.json --profile /tmp/cal/cpu.json   # calibrated
  python3 scripts/validate_suite.py datasets/suites/smoke.json --out /tmp/vs   # nominal

Without --cluster, `gdp validate` uses --devices nominal CPU devices and the built-in profile
(unless --profile); round-robin placement depends on the device count only, so it is computed
on the preset v100x<N>-nvlink then. The raw reports are kept under --out/<label>/.

The measured work does not depend on the cluster or profile (same kernels, same placement),
only the prediction does; --pool compares the predictions of several report folders against
the median of all their timed steps per graph (no run):

  python3 scripts/validate_suite.py datasets/suites/smoke.json \
      --pool /tmp/vs1/calibrated /tmp/vs1/nominal /tmp/vs2/calibrated /tmp/vs2/nominal
"""
import argparse
import json
import math
import os
import subprocess
import sys


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("validate_suite: command failed (exit %d): %s\n%s" %
                 (r.returncode, " ".join(cmd), r.stderr.strip()))
    return r.stdout


def percentile(xs, q):
    """Nearest-rank percentile of xs (q in [0, 100])."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, math.ceil(q / 100.0 * len(xs)) - 1))
    return xs[k]


def median(xs):
    xs = sorted(x for x in xs if x is not None and math.isfinite(x))
    if not xs:
        return float("nan")
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def ms(s):
    v = s * 1e3
    return "%.3g" % v if v < 1000 else "%.0f" % v


def pct(x):
    return "-" if x is None or not math.isfinite(x) else "%+.0f%%" % (100 * x)


def gen_args(entry):
    args = [entry["model"]]
    for k, v in entry.get("options", {}).items():
        args += ["--" + k.replace("_", "-"), str(v)]
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("suite", help="gdp-suite JSON (e.g. datasets/suites/smoke.json)")
    ap.add_argument("--gdp", default="build-dev/gdp", help="the gdp binary")
    ap.add_argument("--out", help="folder for graphs, placements and reports")
    ap.add_argument("--cluster", help="cluster JSON (gdp calibrate --cluster-out)")
    ap.add_argument("--profile", help="device profile JSON (gdp calibrate --out)")
    ap.add_argument("--devices", type=int, default=2, help="nominal devices without --cluster")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--label", help="sub-folder of --out for the reports "
                    "(default: calibrated or nominal)")
    ap.add_argument("--entries", help="comma-separated entry names (default: all)")
    ap.add_argument("--pool", nargs="+", metavar="DIR",
                    help="no run: pool the timed steps of these report folders")
    a = ap.parse_args()
    if not a.pool and not a.out:
        ap.error("--out is required (or --pool)")

    with open(a.suite) as f:
        suite = json.load(f)
    entries = suite["entries"]
    if a.entries:
        want = a.entries.split(",")
        unknown = [w for w in want if w not in {e["name"] for e in entries}]
        if unknown:
            sys.exit("validate_suite: no entry %s in %s" % (", ".join(unknown), a.suite))
        entries = [e for e in entries if e["name"] in want]
    if a.pool:
        return pool(entries, a.pool)
    label = a.label or ("calibrated" if a.cluster else "nominal")
    graphs = os.path.join(a.out, "graphs")
    reports = os.path.join(a.out, label)
    os.makedirs(graphs, exist_ok=True)
    os.makedirs(reports, exist_ok=True)
    place_cluster = a.cluster or "v100x%d-nvlink" % a.devices

    rows = []
    for e in entries:
        name = e["name"]
        g = os.path.join(graphs, name + ".json")
        p = os.path.join(reports, name + ".placement.json")
        run([a.gdp, "gen"] + gen_args(e) + ["-o", g])
        run([a.gdp, "place", "--method", "round-robin", "--graph", g, "--cluster", place_cluster,
             "-o", p])
        cmd = [a.gdp, "validate", "--backend", "cpu", "--graph", g, "--placement", p,
               "--runs", str(a.runs), "--warmup", str(a.warmup), "--json"]
        cmd += ["--cluster", a.cluster] if a.cluster else ["--devices", str(a.devices)]
        if a.profile:
            cmd += ["--profile", a.profile]
        rep = json.loads(run(cmd))
        with open(os.path.join(reports, name + ".json"), "w") as f:
            json.dump(rep, f, indent=2)
        rows.append((name, rep))
        print("validate_suite: %s done" % name, file=sys.stderr)

    load = os.getloadavg()
    print("suite %s, %s (cluster %s, profile %s), --runs %d --warmup %d; load average %.2f %.2f "
          "%.2f at the end, %d hardware threads\n" %
          (suite.get("name", a.suite), label, a.cluster or "nominal x%d" % a.devices,
           a.profile or "built-in", a.runs, a.warmup, load[0], load[1], load[2],
           os.cpu_count()))
    print("| graph | ops | transfers | measured (ms) median [min, max] | predicted (ms) | error |")
    print("|---|---:|---:|---:|---:|---:|")
    errs = []
    for name, r in rows:
        m = r["measured_step_s"]
        err = r["rel_error"]
        if err is not None:
            errs.append(abs(err))
        print("| %s | %d | %d | %s [%s, %s] | %s | %s |" %
              (name, r["ops"], r["transfers"], ms(m["median"]), ms(m["min"]), ms(m["max"]),
               ms(r["predicted_step_s"]), pct(err)))
    print("\nmedian |error| %.0f%%, p90 |error| %.0f%% (nearest rank), max %.0f%% over %d graphs\n" %
          (100 * median(errs), 100 * percentile(errs, 90), 100 * max(errs or [float("nan")]),
           len(errs)))

    classes = []
    for _, r in rows:
        for c in r["classes"]:
            if c["class"] not in classes:
                classes.append(c["class"])
    print("| class | graphs | error: median | median \\|error\\| | p90 \\|error\\| |")
    print("|---|---:|---:|---:|---:|")
    for cls in classes:
        es = [c["rel_error"] for _, r in rows for c in r["classes"]
              if c["class"] == cls and c["rel_error"] is not None]
        print("| %s | %d | %s | %.0f%% | %.0f%% |" %
              (cls, len(es), pct(median(es)), 100 * median([abs(x) for x in es]),
               100 * percentile([abs(x) for x in es], 90)))


def pool(entries, dirs):
    """Each folder's prediction against the median of every timed step of every folder."""
    labels = sorted(set(os.path.basename(os.path.normpath(d)) for d in dirs))
    print("| graph | steps | measured, pooled (ms) median [min, max] | " +
          " | ".join("%s: predicted (ms) | error" % lab for lab in labels) + " |")
    print("|---|---:|---:|" + "---:|---:|" * len(labels))
    errs = {lab: [] for lab in labels}
    for e in entries:
        steps, pred = [], {}
        for d in dirs:
            with open(os.path.join(d, e["name"] + ".json")) as f:
                r = json.load(f)
            steps += r["measured_step_s"]["runs"]
            pred.setdefault(os.path.basename(os.path.normpath(d)), r["predicted_step_s"])
        m = median(steps)
        cells = []
        for lab in labels:
            err = (pred[lab] - m) / m
            errs[lab].append(abs(err))
            cells.append("%s | %s" % (ms(pred[lab]), pct(err)))
        print("| %s | %d | %s [%s, %s] | %s |" % (e["name"], len(steps), ms(m), ms(min(steps)),
                                                 ms(max(steps)), " | ".join(cells)))
    print()
    for lab in labels:
        print("%s: median |error| %.0f%%, p90 %.0f%% (nearest rank)" %
              (lab, 100 * median(errs[lab]), 100 * percentile(errs[lab], 90)))


if __name__ == "__main__":
    main()
