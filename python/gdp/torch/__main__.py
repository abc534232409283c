"""`python3 -m gdp.torch MODEL -o OUT.json`: a PyTorch model's training step as a gdp graph
(docs/python.md, "Importing PyTorch models"). Exit status: 0 ok; 1 bad input or a model
that does not trace (no file is written); 2 bad usage."""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

NATIVE_SIZE = {"inception_v3": 299}

EPILOG = """examples:
  python3 -m gdp.torch torchvision:resnet18 --batch 8 --image-size 64 -o r18.json
  python3 -m gdp.torch torchvision:vit_b_16 --optimizer sgd -o vit.json
  python3 -m gdp.torch mymodels:make_net -o net.json --unknown-ops memory
  python3 -m gdp.torch torchvision:resnet18 --batch 8 --image-size 64 --measure -o r18m.json
then: build/gdp place --method anneal --graph r18.json --cluster v100x2-nvlink -o p.json

module:function: function() returns (model, example_inputs[, loss[, target]]); the
module is imported from the current directory or PYTHONPATH."""


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m gdp.torch", description=(
            "Traces one training step (forward, backward, optimizer update) of a PyTorch "
            "model at the level of aten ops and writes it as a gdp graph (gdp-graph v2)."),
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="torchvision:NAME (e.g. torchvision:resnet18) or module:function")
    p.add_argument("-o", "--out", required=True, help="output graph JSON (written atomically)")
    p.add_argument("--batch", type=int, default=32, help="torchvision: batch size (default 32)")
    p.add_argument("--image-size", type=int, default=None,
                   help="torchvision: input side in pixels (default 224; inception_v3 299)")
    p.add_argument("--optimizer", choices=("adam", "sgd"), default="adam",
                   help="update step traced: adam (m and v per parameter) or sgd (default adam)")
    p.add_argument("--unknown-ops", choices=("error", "memory"), default="error",
                   help="an aten op without a cost rule: error (default) or price it as "
                        "memory-bound with a warning")
    p.add_argument("--name", default=None, help="graph name (default from the model)")
    p.add_argument("--seed", type=int, default=0, help="seed of weights, inputs and labels")
    p.add_argument("--tracing", choices=("fake", "real"), default="fake",
                   help="trace on fake tensors (shapes only, default) or run the step once")
    p.add_argument("--measure", action="store_true",
                   help="time every op on this machine and store it as the op's measured time "
                        "of this device kind (cpu, or the GPU's kind); also times the eager "
                        "PyTorch step")
    p.add_argument("--device", default="cpu", help="--measure: cpu (default) or cuda[:N]")
    p.add_argument("--runs", type=int, default=3, help="--measure: timed runs (default 3)")
    p.add_argument("--threads", type=int, default=1,
                   help="--measure on cpu: torch threads (default 1: one gdp cpu device)")
    p.add_argument("--clock", choices=("auto", "thread", "wall"), default="auto",
                   help="--measure: the thread's CPU time (auto with one CPU thread: immune "
                        "to other processes) or wall time (auto otherwise)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch  # noqa: F401  (present, before anything else imports it)
    except ImportError:
        print("gdp.torch: PyTorch is not installed (Debian: python3-torch)", file=sys.stderr)
        return 1
    from . import timing as measure_mod
    from .export import ExportError, export_full, save
    from .models import ModelSpecError, resolve
    from .trace import TraceError

    try:
        if args.model.startswith("torchvision:"):
            name = args.model.split(":", 1)[1]
            size = args.image_size or NATIVE_SIZE.get(name, 224)
        else:
            size = args.image_size or 224
        case = resolve(args.model, args.batch, size, args.seed)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ex = export_full(case.model, case.example_inputs, case.loss, case.target,
                             args.optimizer, None, args.unknown_ops, args.name or case.name,
                             args.tracing)
        for w in caught:
            if "gdp" in str(w.filename) or "priced" in str(w.message):
                print(f"gdp.torch: warning: {w.message}", file=sys.stderr)
        export_s = time.perf_counter() - t0
        summary = summarize(ex.graph)
        summary["export_s"] = round(export_s, 3)
        summary["unknown_ops"] = ex.unknown
        summary["tied"] = ex.traced.aliases
        if args.measure:
            m = measure_mod.measure(ex, device=args.device, runs=args.runs,
                                    threads=args.threads, clock=args.clock)
            eager = measure_mod.eager_step_time(case.model, case.example_inputs, case.target,
                                                case.loss, args.optimizer, args.device,
                                                threads=args.threads, clock=args.clock)
            summary["measured"] = {"device_kind": m["device_kind"], "clock": m["clock"],
                                   "ops_sum_s": m["ops_s"],
                                   "eager_step_s": eager,
                                   "ops_sum_over_eager": m["ops_s"] / eager}
        save(ex.graph, args.out)
    except (ModelSpecError, TraceError, ExportError, ValueError) as e:
        print(f"gdp.torch: {args.model}: {e}", file=sys.stderr)
        return 1
    summary["file"] = args.out
    if args.json:
        print(json.dumps(summary))
    else:
        print_summary(summary)
    return 0


def summarize(graph) -> dict:
    phases = {"forward": [0, 0], "backward": [0, 0], "update": [0, 0]}
    for op in graph["ops"]:
        phases[op["phase"]][0] += 1
        phases[op["phase"]][1] += op["flops"]
    params = sum(op.get("param_bytes", 0) for op in graph["ops"]) // 4
    return {"graph": graph["name"], "ops": len(graph["ops"]), "edges": len(graph["edges"]),
            "parameters": params,
            "ops_by_phase": {k: v[0] for k, v in phases.items()},
            "flops_by_phase": {k: v[1] for k, v in phases.items()}}


def print_summary(s: dict) -> None:
    f = s["flops_by_phase"]
    total = sum(f.values())
    print(f"graph       {s['graph']} -> {s['file']}")
    print(f"ops         {s['ops']} (forward {s['ops_by_phase']['forward']}, backward "
          f"{s['ops_by_phase']['backward']}, update {s['ops_by_phase']['update']}); "
          f"edges {s['edges']}")
    tied = s.get("tied") or {}
    shared = "; ".join(f"{' = '.join(others)} = {first}" for first, others in tied.items())
    print(f"parameters  {s['parameters']}" + (f" (shared: {shared})" if shared else ""))
    ratio = total / f["forward"] if f["forward"] else float("nan")
    print(f"flops       {total:.4g} (forward {f['forward']:.4g}, backward {f['backward']:.4g}, "
          f"update {f['update']:.4g}; step / forward {ratio:.2f})")
    if s["unknown_ops"]:
        print(f"unknown ops priced as memory-bound: {s['unknown_ops']}")
    if "measured" in s:
        m = s["measured"]
        print(f"measured    {m['device_kind']} ({m['clock']} clock): sum of op times "
              f"{m['ops_sum_s']:.6g} s; eager PyTorch step {m['eager_step_s']:.6g} s "
              f"(ratio {m['ops_sum_over_eager']:.3f})")
    print(f"traced in   {s['export_s']} s")


if __name__ == "__main__":
    sys.exit(main())
