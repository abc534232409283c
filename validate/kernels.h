// The real CPU kernel an op of the graph runs during `gdp validate`: a float GEMM whose flops
// equal the op's (matmul, conv), or a streaming pass over the op's bytes (the memory-bound
// classes). Only the amount of work is reproduced, not the op's arithmetic.
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "sim/cost_model.h"

namespace gdp::validate {

enum class KernelKind : uint8_t {
  none,       // nothing to do (an op with neither flops nor bytes)
  gemm,       // C(m,n) = A(m,k) * B(k,n), float
  scale_add,  // out[i] = a * in[i] + b
  copy,       // out = in (memcpy)
  reduce,     // out[j] = sum of in[j*kReduceWidth .. (j+1)*kReduceWidth)
};
const char* kernel_kind_name(KernelKind k);

constexpr int64_t kReduceWidth = 64;  // inputs summed into one output of a reduce kernel

// M = rows, N = columns, K = inner dimension of the GEMM; in/out = floats read and written
// by a streaming kernel.
struct KernelPlan {
  KernelKind kind = KernelKind::none;
  int64_t m = 0, n = 0, k = 0;            // gemm
  int64_t in_floats = 0, out_floats = 0;  // streaming kernels
  double flops() const;                   // 2*m*n*k for gemm, else 0
  double bytes() const;                   // floats read + written, times 4
  int64_t workspace_floats() const;       // m*k + k*n + m*n, or in + out
};

// The kernel for an op of class `c` with `flops` floating point operations and `bytes` bytes
// moved (Op::bytes_accessed, else its output bytes: the cost model's rule). matmul and conv
// run a GEMM of a near-square shape (M = N = floor(cbrt(flops/2)), K = round(flops/(2MN)),
// each at least 1); the other classes stream over `bytes` (elementwise and other: scale_add;
// memory: copy; reduction: reduce); a memory-bound op without bytes but with flops runs the
// GEMM, a matmul without flops streams its bytes.
KernelPlan plan_kernel(OpClass c, double flops, double bytes);
KernelPlan plan_kernel(const Op& op);  // classify_op(op.type), op.flops, the op's bytes

// Fills a workspace of plan.workspace_floats() floats with small finite values (touching
// every page, so that the timed runs do not fault).
void init_workspace(float* ws, int64_t floats);
// Runs the kernel on `ws` (plan.workspace_floats() floats, initialized). Single-threaded
// (the caller's thread is the device).
void run_kernel(const KernelPlan& plan, float* ws);

}  // namespace gdp::validate
