"""Turns a traced training step (trace.py) into a gdp graph (`gdp-graph` v2, a Python dict):
one op per computing aten node, an op per parameter holding its weights and optimizer
state, an op per model input; views are folded into their consumers' edges."""

from __future__ import annotations

import json
import operator
import os
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.fx as fx

from . import costs
from .costs import FREE, VIEW, OpCall, TensorInfo
from .trace import BUFFER, PARAM, STATE, TracedStep, trace_training_step


class ExportError(ValueError):
    """The traced graph cannot be written as a gdp graph (the message names the op)."""


class UnknownOpError(ExportError):
    """An aten op without a cost rule (unknown_ops="error")."""


UNKNOWN_OPS = ("error", "memory")

_DTYPES = {
    torch.float32: ("f32", 4),
    torch.float16: ("f16", 2),
    torch.bfloat16: ("bf16", 2),
    torch.float64: ("f64", 8),
    torch.int32: ("i32", 4),
    torch.int64: ("i64", 8),
    torch.uint8: ("u8", 1),
    torch.bool: ("bool", 1),
}


def tensor_info(shape, dtype, where: str) -> TensorInfo:
    if dtype not in _DTYPES:
        raise ExportError(
            f"{where}: dtype {dtype} has no gdp dtype (expected one of "
            f"{', '.join(str(d) for d in _DTYPES)})")
    name, size = _DTYPES[dtype]
    shape = tuple(int(s) for s in shape)
    n = 1
    for s in shape:
        n *= s
    return TensorInfo(shape, name, n * size)


def _node_info(node: fx.Node) -> Optional[TensorInfo]:
    tm = node.meta.get("tensor_meta")
    if tm is None or not hasattr(tm, "shape"):
        return None
    return tensor_info(tm.shape, tm.dtype, f"node {node.name}")


def aten_name(node: fx.Node) -> str:
    t = node.target
    packet = getattr(t, "overloadpacket", None)
    if packet is not None:
        return packet.__name__
    return getattr(t, "__name__", str(t))


def _is_aten(node: fx.Node) -> bool:
    return node.op == "call_function" and hasattr(node.target, "overloadpacket")


def gdp_type(name: str) -> str:
    """aten.<name>, in-place variants written as the op they compute (relu_ -> aten.relu)."""
    return "aten." + (name[:-1] if name.endswith("_") and not name.endswith("__") else name)


def scope_of(module: str) -> str:
    """Module path -> gdp name scope: `layer3.1.conv2` -> `layer3/1/conv2`, so that scope
    prefixes (`layer3`, `layer3/1`) group a stage or a block."""
    return module.replace(".", "/")


@dataclass
class _Ref:
    """Where a traced value comes from: the gdp op and output producing it (op None: no op,
    e.g. optimizer state or an allocation), its tensor as seen here (a view's shape) and the
    bytes of the tensor it views."""

    op: Optional[int]
    output: int
    info: Optional[TensorInfo]
    source_bytes: int
    base: Optional[Tuple[str, int]] = None  # a view's: the key of the tensor it views

    @property
    def read_bytes(self) -> int:
        b = self.info.bytes if self.info is not None else 0
        return min(b, self.source_bytes) if self.source_bytes else b


@dataclass
class Exported:
    graph: Dict[str, Any]
    node_op: Dict[str, int]  # fx node name -> index into graph["ops"] (computing nodes)
    unknown: Dict[str, int]  # aten ops priced as memory-bound -> count
    traced: TracedStep


def _module_path(node: fx.Node) -> str:
    return node.meta.get("gdp_module", "")


def from_traced(traced: TracedStep, name: str, unknown_ops: str = "error") -> Exported:
    if unknown_ops not in UNKNOWN_OPS:
        raise ExportError(f"unknown_ops: expected one of {', '.join(UNKNOWN_OPS)}, "
                          f"got {unknown_ops!r}")
    gm = traced.graph_module
    nodes = list(gm.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    if len(placeholders) != len(traced.placeholders):
        raise ExportError(f"traced graph has {len(placeholders)} placeholders, expected "
                          f"{len(traced.placeholders)}")

    # Unknown ops first: all of them in one message.
    unknown: Dict[str, List[fx.Node]] = {}
    for n in nodes:
        if n.op == "call_function" and n.target is not operator.getitem:
            if not _is_aten(n) or costs.rule_for(aten_name(n)) is None:
                unknown.setdefault(aten_name(n), []).append(n)
    if unknown and unknown_ops == "error":
        parts = []
        for op, ns in sorted(unknown.items()):
            mods = sorted({_module_path(x) or "<root>" for x in ns})
            more = f" and {len(mods) - 1} more" if len(mods) > 1 else ""
            parts.append(f"aten.{op} (x{len(ns)}, in module {mods[0]}{more})")
        raise UnknownOpError(
            f"{name}: no cost rule for {len(unknown)} aten op type(s): {'; '.join(parts)}. "
            "Add a rule in gdp/torch/costs.py, or pass unknown_ops='memory' "
            "(--unknown-ops memory) to price them as memory-bound")

    ops: List[Dict[str, Any]] = []
    names: Dict[str, int] = {}
    node_op: Dict[str, int] = {}
    refs: Dict[Tuple[str, int], _Ref] = {}  # (node name, tuple index or -1) -> _Ref
    edges: Dict[Tuple[int, int, int], int] = {}

    def add_op(op: Dict[str, Any]) -> int:
        if op["name"] in names:
            raise ExportError(f"{name}: two ops named {op['name']!r}")
        op["id"] = len(ops)
        names[op["name"]] = op["id"]
        ops.append(op)
        return op["id"]

    def resolve(a: Any) -> Any:
        """fx argument -> rule argument (tensors as TensorInfo); records the refs read."""
        if isinstance(a, fx.Node):
            r = ref_of(a)
            reads.append(r)
            return r.info
        if isinstance(a, (list, tuple)):
            return type(a)(resolve(x) for x in a)
        return a

    def ref_key(n: fx.Node) -> Tuple[str, int]:
        if n.op == "call_function" and n.target is operator.getitem:
            return (n.args[0].name, int(n.args[1]))
        return (n.name, -1)

    def ref_of(n: fx.Node) -> _Ref:
        key = ref_key(n)
        if key not in refs:
            raise ExportError(f"{name}: node {n.name} is used before it is defined")
        return refs[key]

    for ph, n in zip(traced.placeholders, placeholders):
        info = _node_info(n)
        if info is None:
            raise ExportError(f"{name}: placeholder {ph.name} has no tensor metadata")
        if ph.role in (STATE, BUFFER):
            refs[(n.name, -1)] = _Ref(None, 0, info, info.bytes)
            continue
        op = {"name": ph.name, "type": "Parameter" if ph.role == PARAM else "Input",
              "scope": scope_of(traced.param_module.get(ph.name, "")) if ph.role == PARAM else "",
              "phase": "forward",
              "outputs": [{"shape": list(info.shape), "dtype": info.dtype, "bytes": info.bytes}],
              "flops": 0, "bytes_accessed": info.bytes}
        if ph.role == PARAM:
            op["param_bytes"] = info.bytes
            op["optimizer_bytes"] = 2 * info.bytes if traced.optimizer == "adam" else 0
            if info.dtype != "f32":
                op["param_dtype"] = info.dtype
            op["colocation"] = ph.name
        i = add_op(op)
        node_op[n.name] = i
        refs[(n.name, -1)] = _Ref(i, 0, info, info.bytes)

    # Tuple outputs of a node: the getitem users, in index order.
    tuple_users: Dict[str, Dict[int, fx.Node]] = {}
    for n in nodes:
        if n.op == "call_function" and n.target is operator.getitem:
            tuple_users.setdefault(n.args[0].name, {})[int(n.args[1])] = n

    for n in nodes:
        if n.op in ("placeholder", "output"):
            continue
        if n.op == "get_attr":  # a constant captured by the trace: no op, no edge
            refs[(n.name, -1)] = _Ref(None, 0, _node_info(n), 0)
            continue
        if n.target is operator.getitem:
            continue  # resolved through tuple_users / ref_of
        aname = aten_name(n)
        rule = costs.rule_for(aname) if _is_aten(n) else None
        if rule is None:
            rule = costs.memory_rule()
        module = _module_path(n)
        where = f"aten.{aname} (node {n.name}, module {module or '<root>'})"
        users = tuple_users.get(n.name)
        if users is None:
            infos = {-1: _node_info(n)}
        else:
            infos = {i: _node_info(u) for i, u in users.items()}

        if rule.kind in (VIEW, FREE):
            src_ref = None
            if rule.kind == VIEW:
                src = n.args[0] if n.args and isinstance(n.args[0], fx.Node) else None
                src_ref = ref_of(src) if src is not None else None
            for idx, info in infos.items():
                if src_ref is None:
                    refs[(n.name, idx)] = _Ref(None, 0, info, 0)
                else:
                    refs[(n.name, idx)] = _Ref(src_ref.op, src_ref.output, info,
                                               src_ref.source_bytes,
                                               src_ref.base or ref_key(src))
            continue

        reads: List[_Ref] = []
        args = [resolve(a) for a in n.args]
        kwargs = {k: resolve(v) for k, v in n.kwargs.items()}
        order = sorted(infos)
        out_infos = [infos[i] for i in order if infos[i] is not None]
        call = OpCall(aname, args, kwargs, out_infos)
        try:
            flops = int(rule.flops(call))
        except Exception as e:
            raise ExportError(f"{name}: {where}: cannot count flops ({rule.note}): "
                              f"{type(e).__name__}: {e}") from e
        seen = set()
        read_bytes = 0
        for r in reads:
            key = (id(r.info), r.op, r.output)
            if r.info is None or key in seen:
                continue
            seen.add(key)
            read_bytes += r.read_bytes
        phase = n.meta.get("gdp_phase", "forward")
        scope = scope_of(module)
        op = {"name": f"{scope}/{n.name}" if scope else n.name, "type": gdp_type(aname),
              "scope": scope, "phase": phase,
              "outputs": [{"shape": list(o.shape), "dtype": o.dtype, "bytes": o.bytes}
                          for o in out_infos],
              "flops": flops,
              "bytes_accessed": read_bytes + sum(o.bytes for o in out_infos)}
        if phase == "update":
            param = n.meta.get("gdp_param")
            if not param:
                raise ExportError(f"{name}: update op {where} belongs to no parameter")
            op["colocation"] = param
        i = add_op(op)
        node_op[n.name] = i
        pos = 0
        for idx in order:
            if infos[idx] is None:
                continue
            refs[(n.name, idx)] = _Ref(i, pos, infos[idx], infos[idx].bytes)
            pos += 1
        for r in reads:
            if r.op is None or r.op == i:
                continue
            k = (r.op, r.output, i)
            edges[k] = max(edges.get(k, 0), r.read_bytes)
        # An in-place write through a view (x[a:b].fill_(v), copy_ into a slice) changes the
        # viewed tensor: its later readers depend on this op (make_fx keeps them on the
        # tensor's earlier producer).
        if aname.endswith("_") and n.args and isinstance(n.args[0], fx.Node):
            base = ref_of(n.args[0]).base
            if base is not None and base in refs and out_infos:
                b = refs[base]
                refs[base] = _Ref(i, 0, b.info, b.source_bytes)

    edge_order = sorted(edges.items(), key=lambda e: (e[0][2], e[0][0], e[0][1]))  # by dst
    graph = {"format": "gdp-graph", "version": 2, "name": name, "ops": [],
             "edges": [{"src": s, "dst": d, "output": o, "bytes": b}
                       for (s, o, d), b in edge_order]}
    key_order = ["id", "name", "type", "scope", "phase", "outputs", "flops", "bytes_accessed",
                 "param_bytes", "optimizer_bytes", "param_dtype", "colocation"]
    graph["ops"] = [{k: op[k] for k in key_order if k in op} for op in ops]
    counts = {k: len(v) for k, v in unknown.items()}
    if counts:
        total = sum(counts.values())
        listing = ", ".join(f"aten.{k} x{v}" for k, v in sorted(counts.items()))
        warnings.warn(f"{name}: priced {total} op(s) of {len(counts)} aten type(s) without a "
                      f"cost rule as memory-bound (bytes only, no flops): {listing}",
                      stacklevel=3)
    return Exported(graph, node_op, counts, traced)


def export(model: torch.nn.Module, example_inputs: Any, loss: Optional[Callable] = None,
           target: Optional[torch.Tensor] = None, optimizer: str = "adam",
           optimizer_options: Optional[Dict[str, float]] = None, unknown_ops: str = "error",
           name: Optional[str] = None, tracing_mode: str = "fake") -> Dict[str, Any]:
    """The training step of `model` as a gdp graph dict (docs/python.md).

    loss(output, target), or loss(output) without a target; default: cross-entropy against
    `target`, or the mean of squares of the outputs without one. optimizer: "adam" or "sgd".
    unknown_ops: "error" (an aten op without a cost rule is an UnknownOpError naming it and
    its module) or "memory" (priced as memory-bound, with a warning counting them)."""
    return export_full(model, example_inputs, loss, target, optimizer, optimizer_options,
                       unknown_ops, name, tracing_mode).graph


def export_full(model, example_inputs, loss=None, target=None, optimizer="adam",
                optimizer_options=None, unknown_ops="error", name=None,
                tracing_mode="fake") -> Exported:
    """export(), also returning the trace and the node -> op map (for measure())."""
    if unknown_ops not in UNKNOWN_OPS:
        raise ExportError(f"unknown_ops: expected one of {', '.join(UNKNOWN_OPS)}, "
                          f"got {unknown_ops!r}")
    traced = trace_training_step(model, example_inputs, loss, target, optimizer,
                                 optimizer_options, tracing_mode)
    return from_traced(traced, name or type(model).__name__.lower(), unknown_ops)


def save(graph: Dict[str, Any], path: str) -> None:
    """Writes the graph as JSON atomically: a temporary file beside `path`, then a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(graph, f, separators=(",", ":"))
            f.write("\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a plain open() would not
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
