"""Cost rules of aten ops: which ops are views (no op in the gdp graph), which are free, and
the flops of every op that computes. Bytes accessed are the same for every op (inputs read
plus outputs written); the table and the conventions are in docs/formats.md ("PyTorch
training graphs: the aten mapping").

Conventions: a multiply-add is 2 flops (mm: 2*m*k*n); an element-wise op counts one flop
per output element whatever it computes; normalizations, softmax and pooling count the
passes over their elements named beside each rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Callable, Dict, List, Optional, Sequence

VIEW = "view"  # no data moved: dropped, consumers read the viewed tensor
FREE = "free"  # allocation without writes (empty): dropped, no edge
COMPUTE = "compute"  # an op of the graph: flops by rule, bytes read + written


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple
    dtype: str  # gdp dtype (f32, i64, ...)
    bytes: int

    @property
    def numel(self) -> int:
        return prod(self.shape)


@dataclass
class OpCall:
    """What a rule sees: the aten op name, its arguments (tensors as TensorInfo, other
    values as traced: ints, lists, bools, None) and its outputs."""

    name: str
    args: Sequence[Any]
    kwargs: Dict[str, Any]
    outputs: List[TensorInfo]

    def t(self, i: int) -> TensorInfo:
        a = self.args[i]
        if not isinstance(a, TensorInfo):
            raise ValueError(f"aten.{self.name}: argument {i} is not a tensor")
        return a

    def arg(self, i: int, name: str, default: Any = None) -> Any:
        if i < len(self.args):
            return self.args[i]
        return self.kwargs.get(name, default)

    @property
    def out_numel(self) -> int:
        return sum(o.numel for o in self.outputs)


@dataclass(frozen=True)
class Rule:
    kind: str
    flops: Optional[Callable[[OpCall], int]] = None
    note: str = ""  # the convention, for docs and error messages


def _per_out(k: int = 1) -> Callable[[OpCall], int]:
    return lambda c: k * (c.outputs[0].numel if c.outputs else 0)


def _per_in(k: int = 1) -> Callable[[OpCall], int]:
    return lambda c: k * c.t(0).numel


def _zero(c: OpCall) -> int:
    return 0


def _mm(c: OpCall) -> int:  # (m, k) @ (k, n)
    m, k = c.t(0).shape
    n = c.t(1).shape[1]
    return 2 * m * k * n


def _addmm(c: OpCall) -> int:  # bias (n) or (m, n) + (m, k) @ (k, n)
    m, k = c.t(1).shape
    n = c.t(2).shape[1]
    return 2 * m * k * n + m * n


def _bmm(c: OpCall) -> int:  # (b, m, k) @ (b, k, n)
    b, m, k = c.t(0).shape
    n = c.t(1).shape[2]
    return 2 * b * m * k * n


def _baddbmm(c: OpCall) -> int:
    b, m, k = c.t(1).shape
    n = c.t(2).shape[2]
    return 2 * b * m * k * n + b * m * n


def _conv_forward_flops(x: tuple, w: tuple, out: tuple, transposed: bool, groups: int) -> int:
    """2 flops per multiply-add: N x out-spatial x Cout x Cin/groups x kernel (forward);
    transposed convolutions swap the roles of input and output."""
    kernel = prod(w[2:])
    if transposed:  # w: (Cin, Cout/groups, k...)
        return 2 * x[0] * prod(x[2:]) * w[0] * w[1] * kernel
    return 2 * out[0] * prod(out[2:]) * w[0] * w[1] * kernel  # w: (Cout, Cin/groups, k...)


def _convolution(c: OpCall) -> int:
    x, w = c.t(0), c.t(1)
    out = c.outputs[0].shape
    bias = c.arg(2, "bias")
    transposed = bool(c.arg(6, "transposed", False))
    f = _conv_forward_flops(x.shape, w.shape, out, transposed, int(c.arg(8, "groups", 1)))
    if isinstance(bias, TensorInfo):
        f += prod(out)
    return f


def _convolution_backward(c: OpCall) -> int:
    """grad_input and grad_weight each cost the forward's flops; grad_bias a sum over the
    output gradient. Args: grad_output, input, weight, bias_sizes, stride, padding,
    dilation, transposed, output_padding, groups, output_mask."""
    gy, x, w = c.t(0), c.t(1), c.t(2)
    transposed = bool(c.arg(7, "transposed", False))
    groups = int(c.arg(9, "groups", 1))
    mask = c.arg(10, "output_mask", [True, True, True])
    fwd = _conv_forward_flops(x.shape, w.shape, gy.shape, transposed, groups)
    return fwd * (int(bool(mask[0])) + int(bool(mask[1]))) + (gy.numel if mask[2] else 0)


def _batch_norm(c: OpCall) -> int:
    # training: mean (1 pass) + variance (3: sub, square, add) + normalize and affine (4);
    # inference: normalize and affine only.
    training = bool(c.arg(5, "training", True))
    return (8 if training else 4) * c.t(0).numel


def _pool(c: OpCall) -> int:  # a comparison or add per window element per output
    kernel = c.arg(1, "kernel_size")
    k = prod(kernel) if isinstance(kernel, (list, tuple)) else int(kernel) ** 2
    return k * c.outputs[0].numel


def _pool_backward(c: OpCall) -> int:  # args: grad_output, input, kernel_size, ...
    kernel = c.arg(2, "kernel_size")
    k = prod(kernel) if isinstance(kernel, (list, tuple)) else int(kernel) ** 2
    return k * c.t(0).numel


def _nll_loss(c: OpCall) -> int:  # a pick and an add per sample
    return 2 * (c.t(0).shape[0] if len(c.t(0).shape) > 1 else 1)


def _nll_loss_backward(c: OpCall) -> int:  # writes a row of the input gradient per sample
    return c.outputs[0].numel


def _index_put(c: OpCall) -> int:  # accumulate: an add per value written
    values = c.t(2)
    return values.numel if bool(c.arg(3, "accumulate", False)) else 0


def _embedding_backward(c: OpCall) -> int:  # an add per gradient element
    return c.t(0).numel


def _cumsum(c: OpCall) -> int:
    return c.t(0).numel


# View and metadata ops: no data moves; the gdp graph has no op for them.
_VIEWS = """
    _reshape_alias _unsafe_view alias as_strided as_strided_ detach expand expand_as
    diagonal narrow permute reshape select slice split split_with_sizes squeeze squeeze_
    t transpose transpose_ unbind unfold unsqueeze unsqueeze_ view view_as chunk
    _unsafe_split lift lift_fresh movedim swapaxes numpy_T real conj _conj _neg_view
    unflatten flatten
"""
# Allocations that write nothing (their contents are written by a later op).
_FREE = "empty empty_like new_empty empty_strided new_empty_strided"
# Element-wise ops: one flop per output element (docs/formats.md).
_ELEMENTWISE = """
    abs add addcdiv addcmul bernoulli bitwise_and bitwise_not bitwise_or ceil clamp clamp_max
    clamp_min cos div elu elu_backward eq erf exp expm1 floor fmod ge gelu gelu_backward gt
    hardsigmoid hardsigmoid_backward hardswish hardswish_backward hardtanh hardtanh_backward
    le leaky_relu leaky_relu_backward lerp log log1p log_sigmoid_backward logical_and
    logical_not logical_or lt masked_fill maximum minimum mish mul native_dropout
    native_dropout_backward ne neg pow reciprocal relu relu6 remainder round rsqrt rsub
    sigmoid sigmoid_backward sign silu silu_backward sin softplus softplus_backward sqrt
    square sub tanh tanh_backward threshold threshold_backward trunc where xlogy uniform
    normal rand_like randn_like _masked_scale dropout prelu
"""
# Copies, concatenations, fills, gathers and scatters: bytes only.
_MEMORY = """
    _to_copy cat clone constant_pad_nd contiguous copy copy_ embedding fill full full_like
    gather index index_select lift_fresh_copy new_full new_ones new_zeros ones ones_like
    reflection_pad2d replication_pad2d repeat roll scalar_tensor scatter select_backward
    slice_backward stack tril triu upsample_nearest2d zero zeros zeros_like flip
    index_select_backward diagonal_backward as_strided_scatter select_scatter slice_scatter
    _unsafe_index masked_select nonzero arange tensor _local_scalar_dense
"""
# Reductions: one flop per input element.
_REDUCTIONS = "sum mean amax amin max min argmax argmin prod all any norm var std"

RULES: Dict[str, Rule] = {}
for _n in _VIEWS.split():
    RULES[_n] = Rule(VIEW, _zero, "view: no op")
for _n in _FREE.split():
    RULES[_n] = Rule(FREE, _zero, "allocation: no op")
for _n in _ELEMENTWISE.split():
    RULES[_n] = Rule(COMPUTE, _per_out(1), "1 per output element")
for _n in _MEMORY.split():
    RULES[_n] = Rule(COMPUTE, _zero, "memory: bytes only")
for _n in _REDUCTIONS.split():
    RULES[_n] = Rule(COMPUTE, _per_in(1), "1 per input element")
RULES.update(
    {
        "mm": Rule(COMPUTE, _mm, "2*m*k*n"),
        "addmm": Rule(COMPUTE, _addmm, "2*m*k*n + m*n"),
        "bmm": Rule(COMPUTE, _bmm, "2*b*m*k*n"),
        "baddbmm": Rule(COMPUTE, _baddbmm, "2*b*m*k*n + b*m*n"),
        "convolution": Rule(COMPUTE, _convolution, "2*N*Ho*Wo*Cout*Cin/g*Kh*Kw (+ bias)"),
        "convolution_backward": Rule(
            COMPUTE, _convolution_backward, "forward flops per gradient (input, weight) + bias sum"
        ),
        "native_batch_norm": Rule(COMPUTE, _batch_norm, "8 per element (training), 4 (eval)"),
        "_native_batch_norm_legit": Rule(COMPUTE, _batch_norm, "8 per element (training)"),
        "native_batch_norm_backward": Rule(COMPUTE, _per_in(9), "9 per element"),
        "native_layer_norm": Rule(COMPUTE, _per_in(8), "8 per element"),
        "native_layer_norm_backward": Rule(COMPUTE, _per_in(9), "9 per element"),
        "native_group_norm": Rule(COMPUTE, _per_in(8), "8 per element"),
        "native_group_norm_backward": Rule(COMPUTE, _per_in(9), "9 per element"),
        "_softmax": Rule(COMPUTE, _per_in(5), "5 per element (max, sub, exp, sum, div)"),
        "_log_softmax": Rule(COMPUTE, _per_in(5), "5 per element (max, sub, exp, sum, log)"),
        "_softmax_backward_data": Rule(COMPUTE, _per_in(4), "4 per element"),
        "_log_softmax_backward_data": Rule(COMPUTE, _per_in(4), "4 per element"),
        "max_pool2d_with_indices": Rule(COMPUTE, _pool, "kernel elements per output"),
        "max_pool2d_with_indices_backward": Rule(COMPUTE, _per_in(1), "1 per output gradient"),
        "avg_pool2d": Rule(COMPUTE, _pool, "kernel elements per output"),
        "avg_pool2d_backward": Rule(COMPUTE, _pool_backward, "kernel elements per gradient"),
        "_adaptive_avg_pool2d": Rule(COMPUTE, _per_in(1), "1 per input element"),
        "_adaptive_avg_pool2d_backward": Rule(COMPUTE, _per_out(1), "1 per input element"),
        "nll_loss_forward": Rule(COMPUTE, _nll_loss, "2 per sample"),
        "nll_loss_backward": Rule(COMPUTE, _nll_loss_backward, "1 per input element"),
        "index_put": Rule(COMPUTE, _index_put, "1 per value accumulated"),
        "index_add": Rule(COMPUTE, _index_put, "1 per value accumulated"),
        "scatter_add": Rule(COMPUTE, lambda c: c.t(3).numel, "1 per value added"),
        "embedding_dense_backward": Rule(COMPUTE, _embedding_backward, "1 per gradient element"),
        "cumsum": Rule(COMPUTE, _cumsum, "1 per element"),
    }
)


def rule_for(aten_name: str) -> Optional[Rule]:
    """The rule of an aten op (overload packet name, "add_" -> "add"); None when none."""
    r = RULES.get(aten_name)
    if r is None and aten_name.endswith("_") and not aten_name.endswith("__"):
        r = RULES.get(aten_name[:-1])
    return r


def memory_rule() -> Rule:
    """What unknown_ops="memory" prices an op without a rule as: its bytes, no flops."""
    return Rule(COMPUTE, _zero, "unknown: priced as memory-bound")
