// Segment mean/max kernels over CSR lists (GraphSAGE aggregation): plain loops, OpenMP over rows
// (forward, mean backward) or channels (max backward) so that no two threads write one element.
#include "nn/segment.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace gdp::nn {

void Csr::validate() const {
  if (num_rows < 0 || num_cols < 0) throw std::invalid_argument("Csr: negative size");
  if (row_ptr.size() != static_cast<size_t>(num_rows) + 1)
    throw std::invalid_argument(
        "Csr: row_ptr has " + std::to_string(row_ptr.size()) +
        " entries, expected num_rows + 1 = " + std::to_string(num_rows + 1));
  if (row_ptr.front() != 0 || row_ptr.back() != num_entries())
    throw std::invalid_argument("Csr: row_ptr must start at 0 and end at col_idx.size()");
  for (int32_t r = 0; r < num_rows; ++r)
    if (row_ptr[r + 1] < row_ptr[r])
      throw std::invalid_argument("Csr: row_ptr decreases at row " + std::to_string(r));
  for (int32_t c : col_idx)
    if (c < 0 || c >= num_cols)
      throw std::invalid_argument("Csr: column " + std::to_string(c) + " outside [0, " +
                                  std::to_string(num_cols) + ")");
}

Csr csr_from_edges(int32_t num_nodes, const std::vector<int32_t>& src,
                   const std::vector<int32_t>& dst) {
  if (src.size() != dst.size())
    throw std::invalid_argument("csr_from_edges: src and dst differ in length");
  Csr a;
  a.num_rows = num_nodes;
  a.num_cols = num_nodes;
  a.row_ptr.assign(num_nodes + 1, 0);
  for (size_t e = 0; e < dst.size(); ++e) {
    if (src[e] < 0 || src[e] >= num_nodes || dst[e] < 0 || dst[e] >= num_nodes)
      throw std::invalid_argument("csr_from_edges: edge " + std::to_string(e) +
                                  " has an endpoint outside [0, " + std::to_string(num_nodes) +
                                  ")");
    ++a.row_ptr[dst[e] + 1];
  }
  for (int32_t r = 0; r < num_nodes; ++r) a.row_ptr[r + 1] += a.row_ptr[r];
  a.col_idx.resize(src.size());
  std::vector<int32_t> fill(a.row_ptr.begin(), a.row_ptr.end() - 1);
  for (size_t e = 0; e < dst.size(); ++e) a.col_idx[fill[dst[e]]++] = src[e];
  return a;
}

Csr csr_transpose(const Csr& a) {
  Csr t;
  t.num_rows = a.num_cols;
  t.num_cols = a.num_rows;
  t.row_ptr.assign(a.num_cols + 1, 0);
  for (int32_t c : a.col_idx) ++t.row_ptr[c + 1];
  for (int32_t r = 0; r < t.num_rows; ++r) t.row_ptr[r + 1] += t.row_ptr[r];
  t.col_idx.resize(a.col_idx.size());
  std::vector<int32_t> fill(t.row_ptr.begin(), t.row_ptr.end() - 1);
  for (int32_t r = 0; r < a.num_rows; ++r)
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) t.col_idx[fill[a.col_idx[e]]++] = r;
  return t;
}

template <typename T>
void segment_mean_forward(T* out, const T* x, const int32_t* row_ptr, const int32_t* col_idx,
                          int32_t R, int32_t C, int64_t ld_out, int64_t ld_x) {
  if (ld_out < 0) ld_out = C;
  if (ld_x < 0) ld_x = C;
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(R) * C > 32768)
  for (int32_t r = 0; r < R; ++r) {
    T* o = out + r * ld_out;
    std::fill(o, o + C, T(0));
    const int32_t begin = row_ptr[r], end = row_ptr[r + 1];
    if (begin == end) continue;
    for (int32_t e = begin; e < end; ++e) {
      const T* xr = x + col_idx[e] * ld_x;
      for (int32_t c = 0; c < C; ++c) o[c] += xr[c];
    }
    const T inv = T(1) / static_cast<T>(end - begin);
    for (int32_t c = 0; c < C; ++c) o[c] *= inv;
  }
}

template <typename T>
void segment_mean_backward(T* dx, const T* dout, const int32_t* row_ptr, const int32_t* t_row_ptr,
                           const int32_t* t_col_idx, int32_t N, int32_t C, int64_t ld_dx,
                           int64_t ld_dout) {
  if (ld_dx < 0) ld_dx = C;
  if (ld_dout < 0) ld_dout = C;
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(N) * C > 32768)
  for (int32_t n = 0; n < N; ++n) {
    T* d = dx + n * ld_dx;
    for (int32_t e = t_row_ptr[n]; e < t_row_ptr[n + 1]; ++e) {
      const int32_t r = t_col_idx[e];
      const T inv = T(1) / static_cast<T>(row_ptr[r + 1] - row_ptr[r]);
      const T* g = dout + r * ld_dout;
      for (int32_t c = 0; c < C; ++c) d[c] += inv * g[c];
    }
  }
}

template <typename T>
void segment_max_forward(T* out, int32_t* argmax, const T* x, const int32_t* row_ptr,
                         const int32_t* col_idx, int32_t R, int32_t C) {
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(R) * C > 32768)
  for (int32_t r = 0; r < R; ++r) {
    T* o = out + static_cast<int64_t>(r) * C;
    int32_t* am = argmax + static_cast<int64_t>(r) * C;
    const int32_t begin = row_ptr[r], end = row_ptr[r + 1];
    if (begin == end) {
      std::fill(o, o + C, T(0));
      std::fill(am, am + C, -1);
      continue;
    }
    const int32_t first = col_idx[begin];
    const T* x0 = x + static_cast<int64_t>(first) * C;
    for (int32_t c = 0; c < C; ++c) {
      o[c] = x0[c];
      am[c] = first;
    }
    for (int32_t e = begin + 1; e < end; ++e) {
      const int32_t n = col_idx[e];
      const T* xr = x + static_cast<int64_t>(n) * C;
      for (int32_t c = 0; c < C; ++c)
        if (xr[c] > o[c]) {
          o[c] = xr[c];
          am[c] = n;
        }
    }
  }
}

template <typename T>
void segment_max_backward(T* dx, const T* dout, const int32_t* argmax, int32_t R, int32_t C) {
  // Each thread owns a contiguous block of channels for all rows.
#pragma omp parallel if (static_cast <int64_t>(R) * C > 32768)
  {
#ifdef _OPENMP
    const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
#else
    const int nt = 1, tid = 0;
#endif
    const int32_t c0 = static_cast<int32_t>(static_cast<int64_t>(C) * tid / nt);
    const int32_t c1 = static_cast<int32_t>(static_cast<int64_t>(C) * (tid + 1) / nt);
    for (int32_t r = 0; r < R; ++r) {
      const int32_t* am = argmax + static_cast<int64_t>(r) * C;
      const T* g = dout + static_cast<int64_t>(r) * C;
      for (int32_t c = c0; c < c1; ++c)
        if (am[c] >= 0) dx[static_cast<int64_t>(am[c]) * C + c] += g[c];
    }
  }
}

#define GDP_SEGMENT_INSTANTIATE(T)                                                             \
  template void segment_mean_forward<T>(T*, const T*, const int32_t*, const int32_t*, int32_t, \
                                        int32_t, int64_t, int64_t);                            \
  template void segment_mean_backward<T>(T*, const T*, const int32_t*, const int32_t*,         \
                                         const int32_t*, int32_t, int32_t, int64_t, int64_t);  \
  template void segment_max_forward<T>(T*, int32_t*, const T*, const int32_t*, const int32_t*, \
                                       int32_t, int32_t);                                      \
  template void segment_max_backward<T>(T*, const T*, const int32_t*, int32_t, int32_t);
GDP_SEGMENT_INSTANTIATE(float)
GDP_SEGMENT_INSTANTIATE(double)
#undef GDP_SEGMENT_INSTANTIATE

}  // namespace gdp::nn
