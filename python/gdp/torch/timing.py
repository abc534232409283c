"""Times every op of an exported training step on this machine with real tensors, and the
same step run eagerly by PyTorch (forward, backward, torch.optim) for comparison.

Each run executes the traced aten graph node by node (views and getitems untimed, values
freed after their last use); an op's time is its median over the timed runs. Clocks: on the
CPU with one torch thread, the thread's CPU time (all the work is on the calling thread, and
other processes preempting it on a shared machine do not count); with more threads, wall
time; CUDA: CUDA events around the call on the current stream. The eager step is timed with
the same clock.
"""

from __future__ import annotations

import operator
import statistics
import time
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.fx as fx

from .export import Exported

# gdp's device kinds for GPUs (as `gdp calibrate --backend cuda` names them).
_CUDA_KINDS = ("H200", "H100", "A100", "V100", "P100", "K80")
CPU_KIND = "cpu"  # the device kind of `gdp calibrate --backend cpu --cluster-out`


def device_kind(device: torch.device) -> str:
    if device.type == "cpu":
        return CPU_KIND
    name = torch.cuda.get_device_name(device)
    for k in _CUDA_KINDS:
        if k in name.upper():
            return k
    return name


CLOCKS = ("auto", "thread", "wall")


def pick_clock(clock: str, device: torch.device, threads: Optional[int]) -> Callable[[], float]:
    """auto: the thread's CPU time on a one-thread CPU run, else wall time."""
    if clock not in CLOCKS:
        raise ValueError(f"clock: expected one of {', '.join(CLOCKS)}, got {clock!r}")
    if clock == "auto":
        clock = "thread" if device.type == "cpu" and threads == 1 else "wall"
    if clock == "thread" and (device.type != "cpu" or threads != 1):
        raise ValueError("clock 'thread' measures a one-thread CPU run only (threads=1, cpu)")
    return time.thread_time if clock == "thread" else time.perf_counter


def _to(x: Any, device: torch.device) -> Any:
    return x.detach().clone().to(device) if isinstance(x, torch.Tensor) else x


def _last_uses(nodes: List[fx.Node]) -> Dict[fx.Node, List[fx.Node]]:
    """node -> values whose last use it is (freed after it runs)."""
    last: Dict[fx.Node, fx.Node] = {}
    for n in nodes:
        for a in n.all_input_nodes:
            last[a] = n
    out: Dict[fx.Node, List[fx.Node]] = {}
    for v, n in last.items():
        out.setdefault(n, []).append(v)
    return out


def _run_once(gm: fx.GraphModule, args: List[torch.Tensor], timed: Dict[str, List[float]],
              device: torch.device, record: bool, now: Callable[[], float]) -> None:
    nodes = list(gm.graph.nodes)
    frees = _last_uses(nodes)
    env: Dict[fx.Node, Any] = {}
    it = iter(args)
    cuda = device.type == "cuda"

    def load(a):
        return fx.node.map_arg(a, lambda n: env[n])

    for n in nodes:
        if n.op == "placeholder":
            env[n] = next(it)
        elif n.op == "get_attr":
            env[n] = _to(getattr(gm, n.target), device)
        elif n.op == "call_function":
            a, k = load(n.args), load(n.kwargs)
            if n.target is operator.getitem or n.name not in timed:
                env[n] = n.target(*a, **k)
            elif cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                env[n] = n.target(*a, **k)
                end.record()
                if record:
                    timed[n.name].append((start, end))
            else:
                t0 = now()
                env[n] = n.target(*a, **k)
                t1 = now()
                if record:
                    timed[n.name].append(t1 - t0)
        for v in frees.get(n, ()):
            env.pop(v, None)
    if cuda:
        torch.cuda.synchronize(device)
        for name, samples in timed.items():
            timed[name] = [s if isinstance(s, float) else s[0].elapsed_time(s[1]) / 1e3
                           for s in samples]


def measure(exported: Exported, device: str = "cpu", runs: int = 3, warmup: int = 1,
            threads: Optional[int] = 1, clock: str = "auto") -> Dict[str, Any]:
    """Runs the traced step `warmup + runs` times on `device` and writes each op's median
    time into exported.graph as `measured` [{device_kind, time_s}] (parameter and input ops:
    0 s, they execute nothing). threads: torch's CPU threads during the runs (1: one gdp
    "cpu" device is one thread). clock: see the module's doc. Returns {"device_kind",
    "ops_s" (the sum), "runs", "clock"}."""
    if runs < 1 or warmup < 0:
        raise ValueError(f"measure: expected runs >= 1 and warmup >= 0, got {runs}, {warmup}")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("measure: device cuda requested but torch.cuda.is_available() is false")
    kind = device_kind(dev)
    now = pick_clock(clock, dev, threads)
    gm = exported.traced.graph_module
    computing = {n.name for n in gm.graph.nodes
                 if n.op == "call_function" and n.name in exported.node_op}
    old_threads = torch.get_num_threads()
    if threads is not None and dev.type == "cpu":
        torch.set_num_threads(threads)
    try:
        args = [_to(a, dev) for a in exported.traced.args]
        torch.manual_seed(0)
        for r in range(warmup + runs):
            timed = {name: [] for name in computing}
            _run_once(gm, args, timed, dev, record=True, now=now)
            if r == 0:
                samples = {name: [] for name in computing}
            if r >= warmup:
                for name, ts in timed.items():
                    samples[name].extend(ts)
    finally:
        torch.set_num_threads(old_threads)
    total = 0.0
    ops = exported.graph["ops"]
    timed_ids = set()
    for name, ts in samples.items():
        i = exported.node_op[name]
        t = statistics.median(ts) if ts else 0.0
        _set_measured(ops[i], kind, t)
        timed_ids.add(i)
        total += t
    for op in ops:
        if op["id"] not in timed_ids:  # Parameter, Input: no work
            _set_measured(op, kind, 0.0)
    return {"device_kind": kind, "ops_s": total, "runs": runs,
            "clock": "thread" if now is time.thread_time else "wall"}


def _set_measured(op: Dict[str, Any], kind: str, t: float) -> None:
    entries = [m for m in op.get("measured", []) if m["device_kind"] != kind]
    entries.append({"device_kind": kind, "time_s": float(t)})
    op["measured"] = entries


def eager_step_time(model: torch.nn.Module, example_inputs: Any, target=None,
                    loss: Optional[Callable] = None, optimizer: str = "adam",
                    device: str = "cpu", runs: int = 5, warmup: int = 2,
                    threads: Optional[int] = 1, clock: str = "auto") -> float:
    """Median time of one eager PyTorch training step (zero_grad, forward, loss, backward,
    torch.optim step) of a copy of `model`, as a user's training loop runs it; the clock as
    measure()'s."""
    import copy

    from .trace import ADAM_DEFAULTS, SGD_DEFAULTS, _as_tuple, default_loss

    dev = torch.device(device)
    now = pick_clock(clock, dev, threads)
    m = copy.deepcopy(model).to(dev).train()
    xs = tuple(_to(x, dev) for x in _as_tuple(example_inputs))
    tgt = _to(target, dev) if target is not None else None
    loss_fn = loss if loss is not None else default_loss
    params = [p for p in m.parameters() if p.requires_grad]
    if optimizer == "adam":
        o = ADAM_DEFAULTS
        opt = torch.optim.Adam(params, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    else:
        opt = torch.optim.SGD(params, lr=SGD_DEFAULTS["lr"])
    old_threads = torch.get_num_threads()
    if threads is not None and dev.type == "cpu":
        torch.set_num_threads(threads)
    times = []
    torch.manual_seed(0)  # dropout and other random ops of the model
    try:
        for r in range(warmup + runs):
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            t0 = now()
            opt.zero_grad(set_to_none=True)
            out = m(*xs)
            value = loss_fn(out, tgt) if tgt is not None else loss_fn(out)
            value.backward()
            opt.step()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            if r >= warmup:
                times.append(now() - t0)
    finally:
        torch.set_num_threads(old_threads)
    return statistics.median(times)
