#!/usr/bin/python3
"""How close gdp's simulated training step, built from --measure's per-op times, comes to the
eager PyTorch step on this machine (docs/python.md, "Measured times"). A benchmark, not a
test: both times depend on the machine's load, so python/torch-measure checks only that the
times are there and add up.

Each repetition traces torchvision's resnet18 (batch 8, 64x64, Adam), times every op of the
traced step (`gdp.torch.measure`, one CPU thread, thread clock by default) and the eager
PyTorch step (zero_grad, forward, loss, backward, torch.optim.Adam), then simulates the graph
on a one-device CPU cluster from `gdp calibrate` (the step is the sum of the op times there)
and prints simulated / eager, with the load average.

    PYTHONPATH=python /usr/bin/python3 bench/torch_measure.py [--reps 4] [--clock wall] [--json]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import gdp.torch as gt  # noqa: E402
from gdp.torch import timing  # noqa: E402


def gdp_run(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"torch_measure: gdp {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet18", help="torchvision model (default resnet18)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5, help="timed runs per measurement")
    ap.add_argument("--reps", type=int, default=4, help="repetitions (each a full measurement)")
    ap.add_argument("--clock", choices=("auto", "thread", "wall"), default="auto")
    ap.add_argument("--gdp", default=os.environ.get("GDP_BIN", os.path.join(ROOT, "build", "gdp")),
                    help="the gdp binary (default build/gdp or $GDP_BIN)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    if not os.path.isfile(args.gdp):
        sys.exit(f"torch_measure: the gdp binary {args.gdp} does not exist (build it, or --gdp)")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        profile, cluster = os.path.join(tmp, "cpu.json"), os.path.join(tmp, "cpu1.json")
        gdp_run(args.gdp, "calibrate", "--backend", "cpu", "--size", "tiny", "--devices", "1",
                "--out", profile, "--cluster-out", cluster)
        for rep in range(args.reps):
            case = gt.torchvision_case(args.model, args.batch, args.image_size, seed=0)
            ex = gt.export_full(case.model, case.example_inputs, case.loss, case.target)
            m = timing.measure(ex, runs=args.runs, clock=args.clock)
            eager = timing.eager_step_time(case.model, case.example_inputs, case.target,
                                           case.loss, clock=args.clock)
            graph = os.path.join(tmp, f"g{rep}.json")
            gt.save(ex.graph, graph)
            sim = json.loads(gdp_run(args.gdp, "simulate", "--graph", graph, "--cluster",
                                     cluster, "--placement", "single", "--profile", profile,
                                     "--json"))
            row = {"rep": rep, "clock": m["clock"], "simulated_s": sim["step_time_s"],
                   "ops_sum_s": m["ops_s"], "eager_s": eager,
                   "simulated_over_eager": sim["step_time_s"] / eager,
                   "load_average_1min": os.getloadavg()[0]}
            rows.append(row)
            if not args.json:
                print(f"{args.model} batch {args.batch} {args.image_size}x{args.image_size} "
                      f"({row['clock']} clock): simulated {row['simulated_s']:.4f} s, eager "
                      f"{eager:.4f} s, simulated / eager {row['simulated_over_eager']:.3f} "
                      f"(load {row['load_average_1min']:.1f})", flush=True)
    if args.json:
        print(json.dumps({"model": args.model, "batch": args.batch,
                          "image_size": args.image_size, "rows": rows}))


if __name__ == "__main__":
    main()
