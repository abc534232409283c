// The CUDA backend's whole public surface: float32 kernels on raw device pointers, a
// device buffer, and a cuBLAS GEMM. Plain C++ (no CUDA types) so any .cpp can include it.
//
// Glossary: N = rows (flattened leading dims), C = columns (the last dim), V = vocabulary
// rows of an embedding table, M = gathered rows, R = segments (CSR rows), E = CSR entries,
// BH = batch*heads, Tq = queries, Tk = keys (= Tm memory + Tq current), D = head size.
//
// Conventions (llm.c style):
// - every pointer is a DEVICE pointer; tensors are dense, row-major, contiguous;
// - arguments are outputs, then inputs, then sizes, then options;
// - forward kernels OVERWRITE their outputs; backward kernels ACCUMULATE (+=) into the
//   gradient buffers, so gradients of a tensor used twice add up (zero them first);
//   a gradient pointer may be nullptr where documented, to skip it;
// - index arrays are int32 and must be in range (not checked on the device);
// - kernels run on the default stream and return before they finish; copy_to_host and
//   synchronize() wait. Errors (launch or runtime) throw std::runtime_error.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace gdp::cuda {

// ---------------------------------------------------------------- device and memory
int cuda_device_count();                   // 0 on any error (no driver, no device)
std::string cuda_device_name(int device);  // "" on error
std::string cuda_last_error_string();      // why cuda_device_count() said 0, if it did
void synchronize();                        // waits for all queued work; throws on errors

void* device_alloc(std::size_t bytes);  // throws on failure; 0 bytes -> nullptr
void device_free(void* ptr) noexcept;
void copy_to_device(float* dst, const float* src_host, std::size_t n);
void copy_to_device(int* dst, const int* src_host, std::size_t n);
void copy_to_host(float* dst_host, const float* src, std::size_t n);
void copy_to_host(int* dst_host, const int* src, std::size_t n);
void fill_zero(void* dst, std::size_t bytes);

// Owning, move-only device array of n elements (uninitialised until written).
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n) : ptr_(static_cast<T*>(device_alloc(n * sizeof(T)))), n_(n) {}
  ~DeviceArray() { device_free(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      device_free(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return n_; }
  void zero() { fill_zero(ptr_, n_ * sizeof(T)); }
  void upload(const T* host) { copy_to_device(ptr_, host, n_); }  // n elements
  void download(T* host) const { copy_to_host(host, ptr_, n_); }  // n elements

 private:
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};
using DeviceBuffer = DeviceArray<float>;
using DeviceIndexBuffer = DeviceArray<int>;

// ---------------------------------------------------------------- element-wise
// Binary ops: out(N,C) = a(N,C) op b, where b is (N,C), or (C) when b_is_row (a bias
// vector broadcast over the rows). Backward: da (N,C) and db (N,C or C) may be nullptr;
// a row-broadcast db receives the column sums of its gradient.
void add_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row);
void sub_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row);
void mul_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row);
void div_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row);
void add_backward(float* da, float* db, const float* dout, int N, int C, bool b_is_row);
void sub_backward(float* da, float* db, const float* dout, int N, int C, bool b_is_row);
void mul_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                  int C, bool b_is_row);
void div_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                  int C, bool b_is_row);

// Unary ops on n elements: out = f(x). Backward dx += f'(x) * dout, argument order as in
// nn/kernels.h: relu, gelu and log take the forward INPUT x; tanh, sigmoid and exp take
// the forward OUTPUT y. gelu is the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
void relu_forward(float* out, const float* x, std::size_t n);
void gelu_forward(float* out, const float* x, std::size_t n);
void tanh_forward(float* out, const float* x, std::size_t n);
void sigmoid_forward(float* out, const float* x, std::size_t n);
void exp_forward(float* out, const float* x, std::size_t n);
void log_forward(float* out, const float* x, std::size_t n);
void relu_backward(float* dx, const float* x, const float* dout, std::size_t n);  // f'(0) = 0
void gelu_backward(float* dx, const float* x, const float* dout, std::size_t n);
void log_backward(float* dx, const float* x, const float* dout, std::size_t n);
void tanh_backward(float* dx, const float* y, const float* dout, std::size_t n);     // 1 - y^2
void sigmoid_backward(float* dx, const float* y, const float* dout, std::size_t n);  // y (1 - y)
void exp_backward(float* dx, const float* y, const float* dout, std::size_t n);      // y
void scale_forward(float* out, const float* x, float s, std::size_t n);              // out = s * x
void scale_backward(float* dx, const float* dout, float s, std::size_t n);

// Parametrised maps on n elements, out = f(x; p0, p1), backward dx += f'(x) * dout (taking the
// forward INPUT x), as the CPU ops add_scalar/scale/neg/square/sqrt/clamp of nn/ops.h:
//   affine: p0 * x + p1           f' = p0
//   square: x * x                 f' = 2x
//   sqrt:   sqrt(x)               f' = 0.5 / sqrt(x)
//   clamp:  min(max(x, p0), p1)   f' = 1 where p0 <= x <= p1, else 0
enum class MapOp { affine, square, sqrt, clamp };
void map_forward(float* out, const float* x, MapOp op, float p0, float p1, std::size_t n);
void map_backward(float* dx, const float* x, const float* dout, MapOp op, float p0, float p1,
                  std::size_t n);

// Element-wise minimum / maximum, shapes as the binary ops above (b (N,C) or a row (C)).
// Backward: the gradient goes to a where a wins or ties (a <= b for min, a >= b for max),
// else to b; da / db may be nullptr; a row-broadcast db receives column sums.
void minmax_forward(float* out, const float* a, const float* b, int N, int C, bool b_is_row,
                    bool is_max);
void minmax_backward(float* da, float* db, const float* dout, const float* a, const float* b, int N,
                     int C, bool b_is_row, bool is_max);

// ---------------------------------------------------------------- layout: copies, broadcast
// Strided 2-D block: dst[r * ld_dst + c] = (or += when accumulate) src[r * ld_src + c] for
// r < rows, c < cols (ld_* >= cols). Slice, concat and their backward passes are such blocks.
void copy_2d(float* dst, int ld_dst, const float* src, int ld_src, int rows, int cols,
             bool accumulate);
// Swap two axes: x viewed as (A, n0, B, n1, C) -> out (A, n1, B, n0, C), i.e.
// out[a][j][b][i][c] = (or +=) x[a][i][b][j][c]. A transpose of two dims of any tensor, and the
// split of (S, H, Dh) into heads (H, S, Dh) and back, are such swaps.
void swap_axes(float* out, const float* x, int A, int n0, int B, int n1, int C, bool accumulate);
// Broadcast ("expand") of x to a shape of ndim <= kMaxBroadcastDims dims: out (dims...) dense,
// out[i_0..i_{d-1}] = x[sum_k i_k * x_strides[k]] with stride 0 on the broadcast dims.
// Backward: dx[sum_k i_k * x_strides[k]] += dout[i...] (atomics: repeated targets add up).
constexpr int kMaxBroadcastDims = 8;
struct BroadcastShape {
  int ndim = 0;
  int dims[kMaxBroadcastDims] = {};
  long long x_strides[kMaxBroadcastDims] = {};
};
void expand_forward(float* out, const float* x, const BroadcastShape& shape);
void expand_backward(float* dx, const float* dout, const BroadcastShape& shape);

// ---------------------------------------------------------------- reductions
// Over the last dim: x (N,C) -> out (N). max also writes argmax (N), the first maximum's
// column. Backward: dx (N,C) += broadcast dout (N) (/C for mean; only at argmax for max).
void sum_forward(float* out, const float* x, int N, int C);
void mean_forward(float* out, const float* x, int N, int C);
void max_forward(float* out, int* argmax, const float* x, int N, int C);
void sum_backward(float* dx, const float* dout, int N, int C);
void mean_backward(float* dx, const float* dout, int N, int C);
void max_backward(float* dx, const float* dout, const int* argmax, int N, int C);
// Full sum: x (n) -> out (1). Backward: dx (n) += dout[0].
void sum_all_forward(float* out, const float* x, std::size_t n);
void sum_all_backward(float* dx, const float* dout, std::size_t n);

// ---------------------------------------------------------------- softmax
// Over the last dim of x (N,C), numerically stable (the row max is subtracted).
// Backward uses the forward OUTPUT out (N,C) (argument order as in nn/kernels.h):
//   softmax:     dx += y * (dout - sum_j dout_j y_j)
//   log_softmax: dx += dout - exp(y) * sum_j dout_j
void softmax_forward(float* out, const float* x, int N, int C);
void softmax_backward(float* dx, const float* out, const float* dout, int N, int C);
void log_softmax_forward(float* out, const float* x, int N, int C);
void log_softmax_backward(float* dx, const float* out, const float* dout, int N, int C);

// ---------------------------------------------------------------- layer norm
// out (N,C) = (x - mean) * rstd * weight (C) + bias (C), rstd = 1/sqrt(var + eps) with the
// biased variance; saves mean (N) and rstd (N) for the backward. Backward: dx (N,C),
// dweight (C), dbias (C) accumulate; dweight/dbias may be nullptr.
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* weight,
                       const float* bias, int N, int C, float eps = 1e-5f);
void layernorm_backward(float* dx, float* dweight, float* dbias, const float* dout, const float* x,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

// ---------------------------------------------------------------- rows by index
// Gather: out (M,C) = x[idx[m], :] with idx (M). Scatter-add: out[idx[m], :] += src (M,C)
// (atomics; repeated indices add up). gather's backward is scatter_add_rows.
void gather_rows(float* out, const float* x, const int* idx, int M, int C);
void scatter_add_rows(float* out, const float* src, const int* idx, int M, int C);
// Embedding: out (M,C) = table (V,C) rows idx (M); backward dtable (V,C) += scatter-add.
void embedding_forward(float* out, const float* table, const int* idx, int M, int C);
void embedding_backward(float* dtable, const float* dout, const int* idx, int M, int C);
// One column per row: out (N) = x (N,C) [n, idx[n]] with idx (N) in [0, C); backward
// dx[n, idx[n]] += dout[n] (the log-probability of chosen actions).
void take_along_last_forward(float* out, const float* x, const int* idx, int N, int C);
void take_along_last_backward(float* dx, const float* dout, const int* idx, int N, int C);

// ---------------------------------------------------------------- CSR segments
// Segment r has the neighbours col_idx[row_ptr[r] .. row_ptr[r+1]) (row_ptr (R+1),
// col_idx (E), values in [0, rows of x)). out (R,C) = mean / max over x[neighbour, :];
// an empty segment gives 0 (and argmax -1). argmax (R,C) holds the x ROW of the first
// maximum per column. Backward: dx (rows of x, C) accumulates with atomics.
void segment_mean_forward(float* out, const float* x, const int* row_ptr, const int* col_idx, int R,
                          int C);
void segment_mean_backward(float* dx, const float* dout, const int* row_ptr, const int* col_idx,
                           int R, int C);
void segment_max_forward(float* out, int* argmax, const float* x, const int* row_ptr,
                         const int* col_idx, int R, int C);
void segment_max_backward(float* dx, const float* dout, const int* argmax, int R, int C);

// ---------------------------------------------------------------- optimizer
// One Adam / AdamW step over n flat parameters, in place, with the formula and bias corrections
// of nn::adam_update (nn/kernels.h; results may differ in the last bits where nvcc fuses): g = grad
// (+ weight_decay * p when !decoupled); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr *
// weight_decay * p when decoupled; p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). t >=
// 1 is the step number (bias corrections on the host, double).
void adam_update(float* params, float* m, float* v, const float* grads, std::size_t n, float lr,
                 float beta1, float beta2, float eps, float weight_decay, bool decoupled,
                 long long t);

// ---------------------------------------------------------------- GEMM (cuBLAS)
// Row-major C (M,N) = alpha * op(A) (M,K) * op(B) (K,N) + beta * C, op = transpose when
// trans_* (A is then stored (K,M), B stored (N,K)). Strided batched: `batch` such products,
// matrix i at A + i*stride_a etc. (strides in elements). float32, no TF32 shortcut.
void gemm(float* C, const float* A, const float* B, int M, int N, int K, bool trans_a, bool trans_b,
          float alpha = 1.0f, float beta = 0.0f);
void gemm_strided_batched(float* C, const float* A, const float* B, int batch, int M, int N, int K,
                          bool trans_a, bool trans_b, float alpha, float beta, long long stride_a,
                          long long stride_b, long long stride_c);

// ---------------------------------------------------------------- attention
// Masked multi-head attention of a query block over [memory; current] keys:
//   q (BH,Tq,D); k, v (BH,Tk,D), key j < Tk-Tq from memory, key Tk-Tq+i is query i's own;
//   pos_bias (BH,Tq,Tk) additive score term (relative positions), or nullptr;
//   att (BH,Tq,Tk) saves the probabilities; out (BH,Tq,D).
//   score(i,j) = q_i.k_j / sqrt(D) + pos_bias(i,j); causal masks keys j > (Tk-Tq) + i.
// Backward accumulates dq, dk, dv (same shapes) and dpos_bias (BH,Tq,Tk, may be nullptr);
// scratch (BH,Tq,Tk) is a work buffer. Tk >= Tq required when causal.
void attention_forward(float* out, float* att, const float* q, const float* k, const float* v,
                       const float* pos_bias, int BH, int Tq, int Tk, int D, bool causal);
void attention_backward(float* dq, float* dk, float* dv, float* dpos_bias, float* scratch,
                        const float* dout, const float* q, const float* k, const float* v,
                        const float* att, int BH, int Tq, int Tk, int D);

// Transformer-XL relative shift (nn/attention.h): the position scores bd (BH,S,P) of query i
// against relative-position row p become a score term over keys j:
//   out (BH,S,K) [b,i,j] = scale * bd[b, i, base + i - j]  when 0 <= base + i - j < P, else 0
// (base = M + rel_offset; with a causal mask the 0s fall on masked keys). Backward: dbd
// [b, i, base + i - j] += scale * dout[b,i,j] (each (i,j) has its own p: no atomics).
void rel_shift_forward(float* out, const float* bd, int BH, int S, int K, int P, int base,
                       float scale);
void rel_shift_backward(float* dbd, const float* dout, int BH, int S, int K, int P, int base,
                        float scale);

}  // namespace gdp::cuda
