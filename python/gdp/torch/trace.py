"""Traces one training step of a PyTorch model (forward, backward, optimizer update) into an
aten-level torch.fx graph whose nodes carry the module path and the phase they belong to.

make_fx (torch.fx.experimental.proxy_tensor) over functorch's grad_and_value gives the joint
graph; the optimizer's update is written here op for op as torch.optim's single-tensor rule
(in place on the parameter and its state) so that its ops are traced too. make_fx in
PyTorch 1.13 records no module path, so module hooks and autograd-node hooks tag each node
as it is created (docs/python.md, "Importing PyTorch models").
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.fx as fx
from torch.fx.experimental import proxy_tensor

try:  # PyTorch >= 2.0 ships functorch inside torch
    from torch.func import functional_call as _functional_call
    from torch.func import grad_and_value as _grad_and_value
except ImportError:  # PyTorch 1.13 (Debian 12): the separate functorch package
    from functorch import grad_and_value as _grad_and_value
    from torch.nn.utils.stateless import functional_call as _functional_call


class TraceError(RuntimeError):
    """The model's training step could not be traced. The message says where (the model, the
    module path, the aten op, the source line) and why in a few lines, never a tensor's
    values; `original` is PyTorch's exception, when there is one."""

    def __init__(self, message: str, original: Optional[BaseException] = None):
        super().__init__(message)
        self.original = original


# Placeholder roles, in the order of the traced function's flat arguments.
PARAM, STATE, BUFFER, INPUT, TARGET = "param", "state", "buffer", "input", "target"

ADAM_DEFAULTS = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
SGD_DEFAULTS = {"lr": 0.1}
OPTIMIZERS = ("adam", "sgd")


@dataclass
class Placeholder:
    role: str  # PARAM, STATE, BUFFER, INPUT or TARGET
    name: str  # parameter / buffer path ("layer1.0.conv1.weight"), "input0", "target"
    param: str = ""  # STATE: the parameter it belongs to ("layer1.0.conv1.weight")


@dataclass
class TracedStep:
    graph_module: fx.GraphModule
    placeholders: List[Placeholder]  # one per placeholder node, in graph order
    args: List[torch.Tensor]  # real tensors for the placeholders (for --measure)
    optimizer: str
    param_module: Dict[str, str] = field(default_factory=dict)  # parameter -> module path
    # Tied parameters: the first name of a tensor -> its other names ("embed.weight" ->
    # ["head.weight"]); every name reads the one traced tensor (docs/python.md, "Models with
    # shared weights"). Only tensors with more than one name are listed.
    aliases: Dict[str, List[str]] = field(default_factory=dict)
    model_name: str = ""


def _module_of(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else ""


class _NodeTagger:
    """Tags every fx node created while active with meta["gdp_module"] and meta["gdp_phase"].

    Forward: module pre/post hooks keep a stack of module paths. Backward: each autograd node
    made by a module's forward gets that module's path in its metadata and a post-hook; the fx
    nodes created since the previous hook fired belong to the autograd node whose hook fires.
    """

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.created: List[fx.Node] = []
        self.mark = 0
        self.phase = "forward"
        self.stack = [""]
        self.handles: List[Any] = []
        self.names = {m: n for n, m in model.named_modules()}
        self.backward_module = ""  # the module whose backward ran last

    def where(self) -> str:
        """The module path the trace is in now, and the phase: "head (forward)"."""
        module = self.stack[-1] if self.phase == "forward" else self.backward_module
        return f"module {module or '<root>'} ({self.phase})"

    def tag_pending(self, module: str, param: str = "") -> None:
        for n in self.created[self.mark :]:
            n.meta.setdefault("gdp_module", module)
            n.meta.setdefault("gdp_phase", self.phase)
            if param:
                n.meta["gdp_param"] = param
        self.mark = len(self.created)

    def adopt_autograd(self, outputs: Any, module: str) -> None:
        """Give the autograd nodes behind `outputs` not yet claimed the module path `module`."""
        todo = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
        while todo:
            f = todo.pop()
            if f is None or "gdp_module" in f.metadata:
                continue
            f.metadata["gdp_module"] = module
            f.register_hook(self._backward_hook(module))
            if hasattr(f, "register_prehook"):  # for where(): the module whose backward runs
                f.register_prehook(self._backward_prehook(module))
            todo.extend(nf for nf, _ in f.next_functions)

    def _backward_hook(self, module: str) -> Callable:
        def hook(grad_inputs, grad_outputs):
            self.tag_pending(module)

        return hook

    def _backward_prehook(self, module: str) -> Callable:
        def prehook(grad_outputs):
            self.backward_module = module

        return prehook

    def _pre(self, mod, inputs):
        self.tag_pending(self.stack[-1])
        self.stack.append(self.names.get(mod, self.stack[-1]))

    def _post(self, mod, inputs, output):
        self.tag_pending(self.stack[-1])
        module = self.stack.pop()
        self.adopt_autograd(output, module)

    @contextlib.contextmanager
    def active(self):
        original = proxy_tensor.PythonKeyTracer.create_node
        created = self.created

        def create_node(tracer, *args, **kwargs):
            node = original(tracer, *args, **kwargs)
            created.append(node)
            return node

        proxy_tensor.PythonKeyTracer.create_node = create_node
        for mod in self.model.modules():
            self.handles.append(mod.register_forward_pre_hook(self._pre))
            self.handles.append(mod.register_forward_hook(self._post))
        try:
            yield self
        finally:
            proxy_tensor.PythonKeyTracer.create_node = original
            for h in self.handles:
                h.remove()
            self.handles.clear()


def _tensors(x: Any) -> List[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors(v)]
    return []


_META_LIBRARY = None  # keeps the Meta kernels below registered for the process


def _convolution_backward_meta(grad_output, input, weight, bias_sizes, stride, padding,
                               dilation, transposed, output_padding, groups, output_mask):
    """Shapes of aten.convolution_backward: the gradients are shaped as input, weight, bias."""
    gi = input.new_empty(input.shape) if output_mask[0] else None
    gw = weight.new_empty(weight.shape) if output_mask[1] else None
    gb = grad_output.new_empty(bias_sizes) if output_mask[2] and bias_sizes is not None else None
    return gi, gw, gb


def ensure_meta_kernels() -> None:
    """PyTorch 1.13 has no Meta kernel for aten.convolution_backward, so fake-tensor tracing
    ran every convolution's backward for real on zeros (ResNet-50 at batch 64: 25 s instead
    of 1 s). Registers one that only computes the shapes, where none exists."""
    global _META_LIBRARY
    if _META_LIBRARY is not None:
        return
    has = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    if has is None or has("aten::convolution_backward", "Meta"):
        _META_LIBRARY = False
        return
    lib = torch.library.Library("aten", "IMPL", "Meta")
    lib.impl("convolution_backward", _convolution_backward_meta)
    _META_LIBRARY = lib


def default_loss(output: Any, target: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Cross-entropy of the (first) output against `target`; without a target the mean of
    squares of every floating-point output (a stand-in that keeps the backward complete)."""
    outs = [t for t in _tensors(output) if t.is_floating_point()]
    if not outs:
        raise TraceError("the model returned no floating-point tensor to take a loss of")
    if target is not None:
        return torch.nn.functional.cross_entropy(outs[0], target)
    total = outs[0].square().mean()
    for t in outs[1:]:
        total = total + t.square().mean()
    return total


def _as_tuple(example_inputs: Any) -> Tuple[torch.Tensor, ...]:
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (tuple, list)) and all(
        isinstance(t, torch.Tensor) for t in example_inputs
    ):
        return tuple(example_inputs)
    raise TraceError(
        "example_inputs: expected a tensor or a tuple of tensors (the model's positional "
        f"arguments), got {type(example_inputs).__name__}"
    )


def trace_training_step(
    model: torch.nn.Module,
    example_inputs: Any,
    loss: Optional[Callable] = None,
    target: Optional[torch.Tensor] = None,
    optimizer: str = "adam",
    optimizer_options: Optional[Dict[str, float]] = None,
    tracing_mode: str = "fake",
) -> TracedStep:
    """The training step of `model` on `example_inputs` as an fx graph of aten ops.

    loss(output, target) (or loss(output) when target is None) gives the scalar loss;
    default: default_loss. optimizer: "adam" (m, v per parameter) or "sgd" (no state).
    tracing_mode: "fake" (shapes only, no compute) or "real" (runs the step once)."""
    if optimizer not in OPTIMIZERS:
        raise TraceError(f"optimizer: expected one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    defaults = ADAM_DEFAULTS if optimizer == "adam" else SGD_DEFAULTS
    opts = dict(defaults)
    for k, v in (optimizer_options or {}).items():
        if k not in defaults:
            raise TraceError(
                f"optimizer option {k!r} is not an option of {optimizer} "
                f"(options: {', '.join(defaults)})"
            )
        opts[k] = float(v)
    if not isinstance(model, torch.nn.Module):
        raise TraceError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    inputs = _as_tuple(example_inputs)
    loss_fn = loss if loss is not None else default_loss

    model_name = type(model).__name__
    # One entry per distinct tensor, under its first name (named_parameters' order); every
    # other name of a tied tensor reads the same traced argument.
    aliases = _tensor_names(model)
    named_params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not named_params:
        raise TraceError(f"{model_name}: the model has no trainable parameters (requires_grad)")
    frozen = [(n, p) for n, p in model.named_parameters() if not p.requires_grad]
    named_buffers = list(model.named_buffers()) + frozen
    n_state = 2 if optimizer == "adam" else 0

    placeholders: List[Placeholder] = []
    args: List[torch.Tensor] = []
    for n, p in named_params:
        placeholders.append(Placeholder(PARAM, n))
        args.append(p.detach())
    for n, p in named_params:
        for s in ("exp_avg", "exp_avg_sq")[:n_state]:
            placeholders.append(Placeholder(STATE, f"{n}.{s}", param=n))
            args.append(torch.zeros_like(p.detach()))
    for n, b in named_buffers:
        placeholders.append(Placeholder(BUFFER, n))
        args.append(b.detach())
    for i, t in enumerate(inputs):
        placeholders.append(Placeholder(INPUT, f"input{i}" if len(inputs) > 1 else "input"))
        args.append(t)
    if target is not None:
        placeholders.append(Placeholder(TARGET, "target"))
        args.append(target)

    P, B, I = len(named_params), len(named_buffers), len(inputs)
    param_names = [n for n, _ in named_params]
    buffer_names = [n for n, _ in named_buffers]
    tagger = _NodeTagger(model)

    def loss_of(params, buffers, xs, tgt):
        state = {}
        for n, t in zip(param_names + buffer_names, list(params) + list(buffers)):
            for alias in aliases.get(n, [n]):
                state[alias] = t
        output = _functional_call(model, state, tuple(xs))
        tagger.tag_pending("")
        value = loss_fn(output, tgt) if tgt is not None else loss_fn(output)
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            raise TraceError("loss: expected a scalar tensor")
        tagger.tag_pending("loss")
        tagger.adopt_autograd(value, "loss")
        tagger.phase = "backward"
        return value.reshape(())

    def step(*flat):
        params = list(flat[:P])
        states = list(flat[P : P + n_state * P])
        buffers = list(flat[P + n_state * P : P + n_state * P + B])
        rest = flat[P + n_state * P + B :]
        xs, tgt = list(rest[:I]), (rest[I] if target is not None else None)
        grads, value = _grad_and_value(loss_of)(params, buffers, xs, tgt)
        tagger.tag_pending("")
        tagger.phase = "update"
        for i, (name, p, g) in enumerate(zip(param_names, params, grads)):
            if optimizer == "adam":
                _adam_update(p, g, states[2 * i], states[2 * i + 1], opts, step=1)
            else:
                p.add_(g, alpha=-opts["lr"])  # torch.optim.SGD without momentum
            tagger.tag_pending(_module_of(name), param=name)
        return (*params, *states, value)

    if tracing_mode == "fake":
        ensure_meta_kernels()
    # A real trace runs the step: on copies, so that the model's weights, buffers and the
    # caller's tensors are left as they were (the update writes in place).
    trace_args = [a.clone() for a in args] if tracing_mode == "real" else args
    was_training = model.training
    model.train()
    try:
        with tagger.active():
            gm = proxy_tensor.make_fx(step, tracing_mode=tracing_mode)(*trace_args)
            tagger.tag_pending("")
    except TraceError:
        raise
    except Exception as e:  # the model's own code failed under tracing
        # from None: the original message may hold a tensor's values (kept as .original).
        raise TraceError(_trace_failure(model_name, tagger, e), original=e) from None
    finally:
        model.train(was_training)
    tied = {n: names[1:] for n, names in aliases.items() if len(names) > 1}
    return TracedStep(gm, placeholders, args, optimizer,
                      {n: _module_of(n) for n in param_names}, tied, model_name)


def _tensor_names(model: torch.nn.Module) -> Dict[str, List[str]]:
    """Every name of each parameter and buffer, keyed by its first name: a tensor shared by
    two modules (tied embeddings: `head.weight = embed.weight`), or a module reached by two
    paths, has several. named_parameters() and named_buffers() give the first name only."""
    names: Dict[int, List[str]] = {}
    for prefix, mod in model.named_modules(remove_duplicate=False):
        for table in (mod._parameters, mod._buffers):
            for local, t in table.items():
                if t is not None:
                    full = f"{prefix}.{local}" if prefix else local
                    group = names.setdefault(id(t), [])
                    if full not in group:
                        group.append(full)
    return {group[0]: group for group in names.values()}


_TENSOR_TEXT = ("Found in", "Parameter containing", "tensor(", "FakeTensor(", "\n")


def _trace_failure(model_name: str, tagger: "_NodeTagger", e: Exception) -> str:
    """A short message for a model that does not trace: the model, the aten op being
    dispatched, the module path and phase, the model's own source line, and the first line
    of PyTorch's reason with anything that would print a tensor's values cut off."""
    op, line = _failure_site(e.__traceback__)
    reason = str(e)
    for marker in _TENSOR_TEXT:
        cut = reason.find(marker)
        if cut >= 0:
            reason = reason[:cut]
    reason = reason.strip().rstrip(".:") or "(no message; see TraceError.original)"
    if len(reason) > 240:
        reason = reason[:237] + "..."
    where = tagger.where() + (f", in {op}" if op else "") + (f", at {line}" if line else "")
    hint = ""
    if "non-Fake Tensor" in str(e):
        hint = ("\n  a real tensor reached the fake trace: is a tensor the model uses neither a "
                "parameter nor a buffer (register_buffer), or is it created outside forward?")
    return (f"the training step of {model_name} does not trace: {where}: "
            f"{type(e).__name__}: {reason}{hint}")


def _failure_site(tb) -> Tuple[str, str]:
    """The aten op being dispatched where the trace failed ("aten.t.default") and the last
    source line outside torch and gdp.torch ("model.py:42 in forward"), from a traceback."""
    op, line = "", ""
    torch_dir = os.path.dirname(torch.__file__)
    here = os.path.dirname(os.path.abspath(__file__))
    while tb is not None:
        frame = tb.tb_frame
        func = frame.f_locals.get("func")
        if isinstance(func, torch._ops.OpOverload):
            op = str(func)
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(torch_dir) or path.startswith(here) or "functorch" in path
                or frame.f_code.co_filename.startswith("<frozen")):
            line = f"{os.path.basename(path)}:{tb.tb_lineno} in {frame.f_code.co_name}"
        tb = tb.tb_next
    return op, line


def _adam_update(p, g, m, v, o, step: int) -> None:
    """One Adam step in place, op for op torch.optim.Adam's single-tensor rule (so that the
    traced update allocates and moves what the eager optimizer does): m, v, then p."""
    b1, b2 = o["beta1"], o["beta2"]
    m.mul_(b1).add_(g, alpha=1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    bias1 = 1 - b1**step
    bias2 = 1 - b2**step
    denom = (v.sqrt() / math.sqrt(bias2)).add_(o["eps"])
    p.addcdiv_(m, denom, value=-o["lr"] / bias1)
