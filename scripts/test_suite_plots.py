#!/usr/bin/env python3
"""Test of scripts/suite_plots.py on a small synthetic suite run directory.

Builds, in a temporary folder, a run directory as `gdp suite run` writes it (docs/formats.md,
"Suite run directory"): results.json with 2 workloads x 3 methods (one one-shot, two with
curves) x 2 seeds and one invalid cell, and traces/<graph>.json with a few Chrome trace
events. Runs suite_plots.py on it and checks that every expected file exists and is
non-empty, that the PNGs start with the PNG signature and that the SVGs parse as XML. Then
checks the strict input: a missing results.json and a record missing a field each exit 1
with a message naming the file and the field.

Runs suite_plots.py with the first of this interpreter and /usr/bin/python3 that has
matplotlib. Exit 0: passed; 77: skipped (no matplotlib); anything else: failed.
"""

import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "suite_plots.py")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SKIP = 77


def find_python():
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe):
            r = subprocess.run([exe, "-c", "import matplotlib"], capture_output=True)
            if r.returncode == 0:
                return exe
    return None


def record(graph, method, seed, step, lb, curve, validity="valid", samples=0, wall=0.0):
    valid = validity == "valid"
    return {
        "graph": graph, "cluster": "v100x2-nvlink", "method": method, "seed": seed,
        "ops": 100, "validity": validity, "valid": valid,
        "step_time_s": step if valid else None, "lower_bound_s": lb,
        "gap_to_bound": step / lb if valid else None,
        "reason": "" if valid else "device gpu1 over its memory", "samples": samples,
        "wall_s": wall, "peak_memory_bytes": [1000, 2000], "options": {}, "note": "",
        "curve": curve, "samples_to_5pct": curve[0][0] if curve else None,
        "cell": f"{graph}.{method}.s{seed}",
    }


def make_run(d):
    methods = [{"label": "human", "method": "human", "options": {}},
               {"label": "anneal", "method": "anneal", "options": {}},
               {"label": "hdp", "method": "hdp", "options": {}}]
    run = {"format": "gdp-suite-run", "version": 1, "suite": "suite.json", "profile": "",
           "methods": methods, "seeds": [1, 2], "budget": {"samples": 200, "seconds": 0}}
    recs = []
    for graph, scale in (("rnnlm_2layer", 0.16), ("inception_v3", 0.05)):
        lb = scale * 0.6
        for seed in (1, 2):
            recs.append(record(graph, "human", seed, scale, lb, [] if seed == 1 else
                               [[1, 0.0, scale]], samples=1, wall=0.001))
        for method, gain in (("anneal", 0.85), ("hdp", 0.75)):
            for seed in (1, 2):
                f = gain + 0.02 * seed
                curve = [[1, 0.0, scale * 1.3], [10, 0.05 * seed, scale * 1.05],
                         [80 + seed, 0.4 * seed, scale * f]]
                invalid = graph == "inception_v3" and method == "anneal" and seed == 2
                recs.append(record(graph, method, seed, scale * f, lb, curve,
                                   "out_of_memory" if invalid else "valid", samples=200,
                                   wall=1.0 * seed))
    # One cell with no valid seed at all (both seeds out of memory).
    for r in recs:
        if r["graph"] == "rnnlm_2layer" and r["method"] == "anneal":
            r.update(validity="out_of_memory", valid=False, step_time_s=None, gap_to_bound=None)
    results = {"format": "gdp-suite-results", "version": 1, "run": run, "records": recs}
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump(run, f)
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump(results, f)

    events = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
               "args": {"name": "v100x2-nvlink"}}]
    for row, name in enumerate(["gpu0", "gpu1", "link gpu0->gpu1", "link gpu1->gpu0"]):
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": row,
                       "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": row,
                       "args": {"sort_index": row}})
    ops = [("layer_0/matmul", 0, 0, 500), ("layer_1/matmul", 1, 520, 400),
           ("gradients/layer_1/matmul_grad", 1, 950, 700),
           ("gradients/layer_0/matmul_grad", 0, 1700, 900),
           ("layer_0/kernel/Adam/ApplyAdam", 0, 2650, 50)]
    for name, row, ts, dur in ops:
        events.append({"name": name, "cat": "op", "ph": "X", "pid": 0, "tid": row, "ts": ts,
                       "dur": dur})
    events.append({"name": "layer_0/matmul:0 -> gpu1", "cat": "transfer", "ph": "X", "pid": 0,
                   "tid": 2, "ts": 500, "dur": 20})
    events.append({"name": "gradients/layer_1/matmul_grad:0 -> gpu0", "cat": "transfer",
                   "ph": "X", "pid": 0, "tid": 3, "ts": 1650, "dur": 30})
    trace = {"traceEvents": events, "displayTimeUnit": "ms",
             "otherData": {"step_time_s": 0.0027, "valid": True, "reason": ""}}
    os.makedirs(os.path.join(d, "traces"))
    with open(os.path.join(d, "traces", "rnnlm_2layer.json"), "w") as f:
        json.dump(trace, f)


def main():
    py = find_python()
    if py is None:
        print("test_suite_plots: skipped: matplotlib is not installed "
              "(apt-get install python3-matplotlib)")
        return SKIP
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print(f"FAIL: {what}")

    with tempfile.TemporaryDirectory(prefix="gdp_suite_plots_") as d:
        make_run(d)
        r = subprocess.run([py, SCRIPT, d], capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, f"suite_plots.py exit {r.returncode}: {r.stderr.strip()}")
        plots = os.path.join(d, "plots")
        stems = ["step_times", "convergence_samples", "convergence_wall",
                 "gantt_rnnlm_2layer"]
        printed = set(r.stdout.split())
        for stem in stems:
            for ext in ("png", "svg"):
                path = os.path.join(plots, f"{stem}.{ext}")
                if not os.path.isfile(path):
                    check(False, f"{path}: missing")
                    continue
                check(path in printed, f"{path}: not in the list printed")
                with open(path, "rb") as f:
                    data = f.read()
                check(len(data) > 0, f"{path}: empty")
                if ext == "png":
                    check(data.startswith(PNG_SIGNATURE), f"{path}: no PNG signature")
                else:
                    try:
                        root = ET.fromstring(data)
                        check(root.tag.endswith("svg"), f"{path}: root element {root.tag}")
                    except ET.ParseError as e:
                        check(False, f"{path}: not XML: {e}")
        left = [f for f in os.listdir(plots) if f.startswith(".") or f.endswith(".tmp")]
        check(not left, f"temporary files left in {plots}: {left}")

        # --formats and --out.
        out2 = os.path.join(d, "only_png")
        r = subprocess.run([py, SCRIPT, d, "--out", out2, "--formats", "png"],
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, f"--formats png: exit {r.returncode}: {r.stderr.strip()}")
        if os.path.isdir(out2):
            check(sorted(os.listdir(out2)) == sorted(f"{s}.png" for s in stems),
                  f"--formats png wrote {sorted(os.listdir(out2))}")

        # Strict input: a record missing a field, then no results.json at all.
        bad = os.path.join(d, "bad")
        os.makedirs(bad)
        with open(os.path.join(d, "results.json")) as f:
            doc = json.load(f)
        del doc["records"][3]["lower_bound_s"]
        with open(os.path.join(bad, "results.json"), "w") as f:
            json.dump(doc, f)
        r = subprocess.run([py, SCRIPT, bad], capture_output=True, text=True, timeout=120)
        check(r.returncode == 1, f"missing field: exit {r.returncode}, expected 1")
        check("results.json" in r.stderr and "records[3].lower_bound_s" in r.stderr,
              f"missing field: message does not name file and field: {r.stderr.strip()}")
        os.remove(os.path.join(bad, "results.json"))
        r = subprocess.run([py, SCRIPT, bad], capture_output=True, text=True, timeout=120)
        check(r.returncode == 1, f"no results.json: exit {r.returncode}, expected 1")
        check("results.json" in r.stderr,
              f"no results.json: message does not name the file: {r.stderr.strip()}")

    if failures:
        print(f"test_suite_plots: {len(failures)} failure(s)")
        return 1
    print("test_suite_plots: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
