#!/usr/bin/env python3
"""Makes the torchvision suite: eight torchvision 0.14 models exported by gdp.torch as
training graphs (Adam) into runs/torchvision/ (generated, not committed: the largest are tens
of MB) and the suite file datasets/suites/torchvision.json that names them.

    PYTHONPATH=python /usr/bin/python3 scripts/make_torchvision_suite.py
    build/gdp suite run datasets/suites/torchvision.json --methods human,metis,anneal ...

Options: --models a,b (a subset; the suite file is written only for all eight), --out-dir,
--suite, --gdp BIN (check each graph: `gdp info` and a human placement's simulated step).
Each model is traced on fake tensors (shapes only): the whole suite takes about 20 s on 2 cores.
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (model, batch, image side, cluster): the paper's V100 clusters (16 GiB each). Batches are
# the models' usual per-step sizes on V100s; the cluster is the smallest NVLink V100 machine
# of the paper (2, 4 or 8 GPUs) whose human placement fits: one GPU when the model fits,
# contiguous stages otherwise (docs/workloads.md, human placements).
ENTRIES = [
    ("resnet18", 64, 224, "v100x2-nvlink"),
    ("resnet50", 64, 224, "v100x4-nvlink"),
    ("inception_v3", 32, 299, "v100x2-nvlink"),
    ("vgg16", 32, 224, "v100x2-nvlink"),
    ("densenet121", 32, 224, "v100x2-nvlink"),
    ("mobilenet_v3_large", 64, 224, "v100x2-nvlink"),
    ("vit_b_16", 32, 224, "v100x4-nvlink"),
    ("swin_t", 32, 224, "v100x4-nvlink"),
]
SUITE_DESCRIPTION = (
    "Eight torchvision 0.14 models as aten-level training graphs (forward, backward, Adam), "
    "exported by gdp.torch. The graph files are generated, not committed: run "
    "`PYTHONPATH=python /usr/bin/python3 scripts/make_torchvision_suite.py` first "
    "(writes runs/torchvision/). Costs: the built-in cost model from each op's flops and "
    "bytes (no measured times).")


def graph_file(model, batch, size):
    return f"{model}_b{batch}_s{size}.json"


def suite_json(out_dir, suite_path):
    rel = os.path.relpath(out_dir, os.path.dirname(os.path.abspath(suite_path)))
    entries = [{"name": f"tv_{m}_b{b}", "graph": f"{rel}/{graph_file(m, b, s)}", "cluster": c}
               for m, b, s, c in ENTRIES]
    return {"format": "gdp-suite", "version": 1, "name": "torchvision",
            "description": SUITE_DESCRIPTION, "entries": entries}


def write_suite(suite, path):
    lines = ["{"]
    lines.append('  "format": "gdp-suite",\n  "version": 1,')
    lines.append(f'  "name": {json.dumps(suite["name"])},')
    lines.append(f'  "description": {json.dumps(suite["description"])},')
    lines.append('  "entries": [')
    rows = [f"    {json.dumps(e)}" for e in suite["entries"]]
    lines.append(",\n".join(rows))
    lines.append("  ]\n}")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def check(gdp_bin, path, cluster):
    info = subprocess.run([gdp_bin, "info", path], capture_output=True, text=True)
    if info.returncode != 0:
        raise SystemExit(f"{path}: gdp info failed: {info.stderr.strip()}")
    sim = subprocess.run([gdp_bin, "simulate", "--graph", path, "--cluster", cluster,
                          "--placement", "human", "--json"], capture_output=True, text=True)
    if sim.returncode != 0:
        raise SystemExit(f"{path}: gdp simulate failed: {sim.stderr.strip()}")
    r = json.loads(sim.stdout)
    return r.get("step_time_s"), r.get("valid"), r.get("reason", "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="", help="comma-separated subset (default: all eight)")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "runs", "torchvision"))
    ap.add_argument("--suite",
                    default=os.path.join(ROOT, "datasets", "suites", "torchvision.json"))
    ap.add_argument("--gdp", default="",
                    help="gdp binary: check every graph with info and simulate")
    args = ap.parse_args(argv)

    sys.path.insert(0, os.path.join(ROOT, "python"))
    import gdp.torch as gt

    wanted = [m for m in args.models.split(",") if m] or [e[0] for e in ENTRIES]
    known = {e[0] for e in ENTRIES}
    for m in wanted:
        if m not in known:
            ap.error(f"--models: {m!r} is not in the suite ({', '.join(sorted(known))})")
    os.makedirs(args.out_dir, exist_ok=True)
    for m, b, s, cluster in ENTRIES:
        if m not in wanted:
            continue
        t0 = time.perf_counter()
        case = gt.torchvision_case(m, b, s, seed=0)
        graph = gt.export(case.model, case.example_inputs, case.loss, case.target,
                          optimizer="adam", name=f"tv_{m}_b{b}")
        path = os.path.join(args.out_dir, graph_file(m, b, s))
        gt.save(graph, path)
        params = sum(op.get("param_bytes", 0) for op in graph["ops"]) // 4
        line = (f"{m:20s} batch {b:3d} {s}x{s}: {len(graph['ops']):5d} ops, "
                f"{params / 1e6:6.2f}M parameters, {time.perf_counter() - t0:5.1f} s -> {path}")
        if args.gdp:
            step, valid, reason = check(args.gdp, path, cluster)
            line += f"; human on {cluster}: "
            line += f"{step:.4f} s" if valid else f"invalid ({reason})"
        print(line, flush=True)
    if len(wanted) == len(ENTRIES):
        write_suite(suite_json(args.out_dir, args.suite), args.suite)
        print(f"wrote {args.suite}")


if __name__ == "__main__":
    main()
