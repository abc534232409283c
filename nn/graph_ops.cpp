// Autograd wrappers of the graph kernels: forward with the raw kernel, a closure that accumulates
// into the input gradients (nothing is recorded when no input needs a gradient).
#include "nn/graph_ops.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "nn/kernels.h"
#include "nn/ops.h"
#include "nn/ops_internal.h"
#include "nn/sampling.h"

namespace gdp::nn {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

template <typename T>
const BasicTensor<T> contiguous_value(const BasicVar<T>& v) {
  return v.value().contiguous();
}

const Csr& rows_of(const Adjacency& a, EdgeDir dir) { return dir == EdgeDir::in ? a.in : a.out; }
const Csr& transpose_of(const Adjacency& a, EdgeDir dir) {
  return dir == EdgeDir::in ? a.out : a.in;
}

}  // namespace

std::shared_ptr<const Adjacency> make_adjacency(int32_t num_nodes, const std::vector<int32_t>& src,
                                                const std::vector<int32_t>& dst) {
  auto adj = std::make_shared<Adjacency>();
  adj->in = csr_from_edges(num_nodes, src, dst);
  adj->out = csr_transpose(adj->in);
  return adj;
}

template <typename T>
BasicVar<T> segment_mean(const BasicVar<T>& x, const std::shared_ptr<const Adjacency>& adj,
                         EdgeDir dir) {
  require(x.ndim() == 2 && x.dim(0) == adj->num_nodes(),
          "segment_mean: x must be (N, C) with N = " + std::to_string(adj->num_nodes()) + ", got " +
              shape_str(x.shape()));
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) {
      return detail::cuda_ops::segment_mean(x, rows_of(*adj, dir));
    }
#endif
  detail::require_cpu<T>("segment_mean", {&x});
  const int32_t N = static_cast<int32_t>(x.dim(0)), C = static_cast<int32_t>(x.dim(1));
  const BasicTensor<T> xv = contiguous_value(x);
  BasicTensor<T> out = BasicTensor<T>::empty({N, C});  // overwritten by the kernel
  const Csr& a = rows_of(*adj, dir);
  segment_mean_forward(out.data(), xv.data(), a.row_ptr.data(), a.col_idx.data(), N, C);
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> res = make_result(out, rg);
  if (rg) {
    BasicTape<T>::current().record([xn = x.node(), on = res.node(), adj, dir, N, C] {
      if (!on->has_grad()) return;
      const Csr& r = rows_of(*adj, dir);
      const Csr& t = transpose_of(*adj, dir);
      segment_mean_backward(xn->grad_buffer().data(), on->grad.data(), r.row_ptr.data(),
                            t.row_ptr.data(), t.col_idx.data(), N, C);
    });
  }
  return res;
}

template <typename T>
BasicVar<T> segment_max(const BasicVar<T>& x, const std::shared_ptr<const Adjacency>& adj,
                        EdgeDir dir) {
  require(x.ndim() == 2 && x.dim(0) == adj->num_nodes(),
          "segment_max: x must be (N, C) with N = " + std::to_string(adj->num_nodes()) + ", got " +
              shape_str(x.shape()));
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) {
      return detail::cuda_ops::segment_max(x, rows_of(*adj, dir));
    }
#endif
  detail::require_cpu<T>("segment_max", {&x});
  const int32_t N = static_cast<int32_t>(x.dim(0)), C = static_cast<int32_t>(x.dim(1));
  const BasicTensor<T> xv = contiguous_value(x);
  BasicTensor<T> out = BasicTensor<T>::empty({N, C});
  auto argmax = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(N) * C);
  const Csr& a = rows_of(*adj, dir);
  segment_max_forward(out.data(), argmax->data(), xv.data(), a.row_ptr.data(), a.col_idx.data(), N,
                      C);
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> res = make_result(out, rg);
  if (rg) {
    BasicTape<T>::current().record([xn = x.node(), on = res.node(), argmax, N, C] {
      if (!on->has_grad()) return;
      segment_max_backward(xn->grad_buffer().data(), on->grad.data(), argmax->data(), N, C);
    });
  }
  return res;
}

template <typename T>
BasicVar<T> sage_layer(const BasicVar<T>& x, const BasicVar<T>& w, const BasicVar<T>& b,
                       const std::shared_ptr<const Adjacency>& adj, bool relu_act) {
#ifdef GDP_HAVE_CUDA
  // On the device, the layer is its definition written with the device ops.
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x, &w, &b})) {
      require(x.ndim() == 2 && x.dim(0) == adj->num_nodes(),
              "sage_layer: x must be (N, C) with N = " + std::to_string(adj->num_nodes()) +
                  ", got " + shape_str(x.shape()));
      const Var xcat = concat<float>(
          {x, segment_mean(x, adj, EdgeDir::in), segment_mean(x, adj, EdgeDir::out)}, 1);
      const Var z = linear(xcat, w, b);
      return relu_act ? relu(z) : z;
    }
#endif
  detail::require_cpu<T>("sage_layer", {&x, &w, &b});
  require(x.ndim() == 2 && x.dim(0) == adj->num_nodes(),
          "sage_layer: x must be (N, C) with N = " + std::to_string(adj->num_nodes()) + ", got " +
              shape_str(x.shape()));
  const int32_t N = static_cast<int32_t>(x.dim(0)), C = static_cast<int32_t>(x.dim(1));
  require(w.ndim() == 2 && w.dim(1) == 3 * C, "sage_layer: w must be (OUT, 3C) = (OUT, " +
                                                  std::to_string(3 * C) + "), got " +
                                                  shape_str(w.shape()));
  const int32_t OUT = static_cast<int32_t>(w.dim(0));
  require(b.ndim() == 1 && b.dim(0) == OUT,
          "sage_layer: b must be (OUT), got " + shape_str(b.shape()));
  const BasicTensor<T> xv = contiguous_value(x), wv = contiguous_value(w), bv = contiguous_value(b);
  // xcat = [x | mean_in(x) | mean_out(x)] (N, 3C), kept for the weight gradient. The GEMMs go
  // through matmul_forward, which threads by blocks (Eigen's own threading busy-waits).
  const int64_t C3 = 3LL * C;
  // Both are overwritten completely below.
  BasicTensor<T> xcat = BasicTensor<T>::empty({N, C3}), out = BasicTensor<T>::empty({N, OUT});
  {
    const T* xp = xv.data();
    T* cp = xcat.data();
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(N) * C > 32768)
    for (int32_t n = 0; n < N; ++n)
      std::copy(xp + static_cast<int64_t>(n) * C, xp + static_cast<int64_t>(n + 1) * C,
                cp + n * C3);
  }
  segment_mean_forward(xcat.data() + C, xv.data(), adj->in.row_ptr.data(), adj->in.col_idx.data(),
                       N, C, C3, C);
  segment_mean_forward(xcat.data() + 2 * C, xv.data(), adj->out.row_ptr.data(),
                       adj->out.col_idx.data(), N, C, C3, C);
  matmul_forward(out.data(), xcat.data(), wv.data(), N, C3, OUT, false, /*trans_b=*/true);
  {
    const T* bias = bv.data();
    T* op = out.data();
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(N) * OUT > 32768)
    for (int32_t n = 0; n < N; ++n) {
      T* row = op + static_cast<int64_t>(n) * OUT;
      for (int32_t c = 0; c < OUT; ++c) {
        const T z = row[c] + bias[c];
        row[c] = relu_act && z < T(0) ? T(0) : z;
      }
    }
  }
  const bool rg = needs_grad<T>({&x, &w, &b});
  BasicVar<T> res = make_result(out, rg);
  if (rg) {
    BasicTape<T>::current().record([xn = x.node(), wn = w.node(), bn = b.node(), on = res.node(),
                                    wv, xcat, adj, relu_act, N, C, C3, OUT] {
      if (!on->has_grad()) return;
      // g = dout * act'(z), (N, OUT); the output is > 0 exactly where relu passes.
      BasicTensor<T> g = on->grad.clone();
      if (relu_act) {
        const T* o = on->value.data();
        T* gp = g.data();
        const int64_t n = g.numel();
#pragma omp parallel for schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; ++i)
          if (!(o[i] > T(0))) gp[i] = T(0);
      }
      if (bn->requires_grad) sum_rows_accumulate(bn->grad_buffer().data(), g.data(), N, OUT);
      if (wn->requires_grad)  // dW (OUT, 3C) += g^T xcat
        matmul_forward(wn->grad_buffer().data(), g.data(), xcat.data(), OUT, N, C3,
                       /*trans_a=*/true, false, /*accumulate=*/true);
      if (xn->requires_grad) {
        BasicTensor<T> dcat =
            BasicTensor<T>::empty({N, C3});  // g W: gradients of [x | mean_in | mean_out]
        matmul_forward(dcat.data(), g.data(), wv.data(), N, OUT, C3, false, false);
        T* dx = xn->grad_buffer().data();
        const T* dc = dcat.data();
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(N) * C > 32768)
        for (int32_t n = 0; n < N; ++n)
          for (int32_t c = 0; c < C; ++c) dx[static_cast<int64_t>(n) * C + c] += dc[n * C3 + c];
        segment_mean_backward(dx, dc + C, adj->in.row_ptr.data(), adj->out.row_ptr.data(),
                              adj->out.col_idx.data(), N, C, C, C3);
        segment_mean_backward(dx, dc + 2 * C, adj->out.row_ptr.data(), adj->in.row_ptr.data(),
                              adj->in.col_idx.data(), N, C, C, C3);
      }
    });
  }
  return res;
}

template <typename T>
BasicVar<T> rel_attention(const BasicVar<T>& q, const BasicVar<T>& k, const BasicVar<T>& v,
                          const BasicVar<T>& rk, const BasicVar<T>& u, const BasicVar<T>& vb,
                          const RelAttentionDims& d) {
  d.validate();
  auto check = [&](const BasicVar<T>& t, int64_t rows, const char* name) {
    require(t.defined(), std::string("rel_attention: ") + name + " undefined");
    const Shape want = rows < 0 ? Shape{d.D()} : Shape{rows, d.D()};
    require(t.shape() == want, std::string("rel_attention: ") + name + " must be " +
                                   shape_str(want) + ", got " + shape_str(t.shape()));
  };
  check(q, d.S, "q");
  check(k, d.K(), "k");
  check(v, d.K(), "v");
  check(rk, d.P(), "rk");
  check(u, -1, "u");
  check(vb, -1, "vb");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&q, &k, &v, &rk, &u, &vb}))
      return detail::cuda_ops::rel_attention(q, k, v, rk, u, vb, d);
#endif
  detail::require_cpu<T>("rel_attention", {&q, &k, &v, &rk, &u, &vb});
  const BasicTensor<T> qv = contiguous_value(q), kv = contiguous_value(k), vv = contiguous_value(v),
                       rkv = contiguous_value(rk), uv = contiguous_value(u),
                       vbv = contiguous_value(vb);
  // Overwritten completely by the kernel (masked probabilities are written as zeros).
  BasicTensor<T> out = BasicTensor<T>::empty({d.S, d.D()}),
                 probs = BasicTensor<T>::empty({d.H, d.S, d.K()});
  rel_attention_forward(out.data(), probs.data(), qv.data(), kv.data(), vv.data(), rkv.data(),
                        uv.data(), vbv.data(), d);
  const bool rg = needs_grad<T>({&q, &k, &v, &rk, &u, &vb});
  BasicVar<T> res = make_result(out, rg);
  if (rg) {
    BasicTape<T>::current().record([qn = q.node(), kn = k.node(), vn = v.node(), rn = rk.node(),
                                    un = u.node(), bn = vb.node(), on = res.node(), probs, qv, kv,
                                    vv, rkv, uv, vbv, d] {
      if (!on->has_grad()) return;
      auto grad_of = [](const std::shared_ptr<VarNode<T>>& n) -> T* {
        return n->requires_grad ? n->grad_buffer().data() : nullptr;
      };
      rel_attention_backward(grad_of(qn), grad_of(kn), grad_of(vn), grad_of(rn), grad_of(un),
                             grad_of(bn), on->grad.data(), probs.data(), qv.data(), kv.data(),
                             vv.data(), rkv.data(), uv.data(), vbv.data(), d);
    });
  }
  return res;
}

template <typename T>
BasicVar<T> categorical_log_prob(const BasicVar<T>& logits, const std::vector<int32_t>& actions) {
  require(logits.ndim() == 2 && logits.dim(0) == static_cast<int64_t>(actions.size()),
          "categorical_log_prob: logits must be (N, A) with N = actions.size() = " +
              std::to_string(actions.size()) + ", got " + shape_str(logits.shape()));
#ifdef GDP_HAVE_CUDA
  // On the device: log_softmax, then the chosen column of each row.
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&logits}))
      return take_along_last(log_softmax(logits),
                             std::vector<int64_t>(actions.begin(), actions.end()));
#endif
  detail::require_cpu<T>("categorical_log_prob", {&logits});
  const int32_t N = static_cast<int32_t>(logits.dim(0)), A = static_cast<int32_t>(logits.dim(1));
  const BasicTensor<T> lv = contiguous_value(logits);
  BasicTensor<T> out({N});
  categorical_log_prob_forward(out.data(), lv.data(), actions.data(), N, A);
  const bool rg = needs_grad<T>({&logits});
  BasicVar<T> res = make_result(out, rg);
  if (rg) {
    BasicTape<T>::current().record([ln = logits.node(), on = res.node(), lv, actions, N, A] {
      if (!on->has_grad()) return;
      categorical_log_prob_backward(ln->grad_buffer().data(), on->grad.data(), lv.data(),
                                    actions.data(), N, A);
    });
  }
  return res;
}

template <typename T>
BasicVar<T> categorical_entropy(const BasicVar<T>& logits) {
  require(logits.ndim() == 2,
          "categorical_entropy: logits must be (N, A), got " + shape_str(logits.shape()));
#ifdef GDP_HAVE_CUDA
  // On the device: -sum_c p_c log p_c from softmax and log_softmax (finite for finite logits).
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&logits}))
      return neg(sum(mul(softmax(logits), log_softmax(logits)), -1));
#endif
  detail::require_cpu<T>("categorical_entropy", {&logits});
  const int32_t N = static_cast<int32_t>(logits.dim(0)), A = static_cast<int32_t>(logits.dim(1));
  const BasicTensor<T> lv = contiguous_value(logits);
  BasicTensor<T> out({N});
  categorical_entropy_forward(out.data(), lv.data(), N, A);
  const bool rg = needs_grad<T>({&logits});
  BasicVar<T> res = make_result(out, rg);
  if (rg) {
    BasicTape<T>::current().record([ln = logits.node(), on = res.node(), lv, N, A] {
      if (!on->has_grad()) return;
      categorical_entropy_backward(ln->grad_buffer().data(), on->grad.data(), lv.data(), N, A);
    });
  }
  return res;
}

#define GDP_GRAPH_OPS_INSTANTIATE(T)                                                               \
  template BasicVar<T> segment_mean<T>(const BasicVar<T>&,                                         \
                                       const std::shared_ptr<const Adjacency>&, EdgeDir);          \
  template BasicVar<T> segment_max<T>(const BasicVar<T>&, const std::shared_ptr<const Adjacency>&, \
                                      EdgeDir);                                                    \
  template BasicVar<T> sage_layer<T>(const BasicVar<T>&, const BasicVar<T>&, const BasicVar<T>&,   \
                                     const std::shared_ptr<const Adjacency>&, bool);               \
  template BasicVar<T> rel_attention<T>(                                                           \
      const BasicVar<T>&, const BasicVar<T>&, const BasicVar<T>&, const BasicVar<T>&,              \
      const BasicVar<T>&, const BasicVar<T>&, const RelAttentionDims&);                            \
  template BasicVar<T> categorical_log_prob<T>(const BasicVar<T>&, const std::vector<int32_t>&);   \
  template BasicVar<T> categorical_entropy<T>(const BasicVar<T>&);
GDP_GRAPH_OPS_INSTANTIATE(float)
GDP_GRAPH_OPS_INSTANTIATE(double)
#undef GDP_GRAPH_OPS_INSTANTIATE

}  // namespace gdp::nn
