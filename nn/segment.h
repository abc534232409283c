// Segment reductions over a CSR neighbour list: the aggregation step of GraphSAGE (mean or max of
// each node's neighbours), in both edge directions through csr_transpose.
//
// Glossary: R = rows (segments, e.g. destination nodes), N = rows of the gathered matrix (source
// nodes), E = entries (edges), C = channels.
// A Csr lists, for each row r, the columns col_idx[row_ptr[r] .. row_ptr[r+1]) it gathers from.
// Empty segments produce zeros (and pass no gradient).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace gdp::nn {

struct Csr {
  int32_t num_rows = 0;          // R
  int32_t num_cols = 0;          // N (range of col_idx)
  std::vector<int32_t> row_ptr;  // (R + 1)
  std::vector<int32_t> col_idx;  // (E)
  // Backend cache: row_ptr/col_idx uploaded to the device on the first device op that reads this
  // Csr (nn/ops_cuda.cpp), then reused while the arrays are the same (a copy, or a resized array,
  // uploads afresh). Do not edit the arrays in place once a device op has used them.
  mutable std::shared_ptr<const void> device_copy;

  int32_t num_entries() const { return static_cast<int32_t>(col_idx.size()); }
  int32_t degree(int32_t r) const { return row_ptr[r + 1] - row_ptr[r]; }
  void validate() const;  // throws std::invalid_argument with a message on a malformed Csr
};

// In-neighbour lists from directed edges src[e] -> dst[e] over num_nodes nodes: row v lists the
// sources of v's incoming edges (in edge order). Out-neighbours: csr_transpose of the result, or
// swap src and dst.
Csr csr_from_edges(int32_t num_nodes, const std::vector<int32_t>& src,
                   const std::vector<int32_t>& dst);
// Transpose: row c of the result lists the rows r that contain c (ascending r).
Csr csr_transpose(const Csr& a);

// out[r] = mean_{e in r} x[col_idx[e]]; zeros for empty r. ld_out / ld_x: row strides in
// elements (default C), so out may be a column block of a wider matrix.
template <typename T>
void segment_mean_forward(T* out,                  // (R, C), row stride ld_out
                          const T* x,              // (N, C), row stride ld_x
                          const int32_t* row_ptr,  // (R + 1)
                          const int32_t* col_idx,  // (E)
                          int32_t R, int32_t C, int64_t ld_out = -1, int64_t ld_x = -1);
// dx[n] += sum_{r containing n} dout[r] / deg(r). Gathers through the transpose (t_row_ptr,
// t_col_idx) so rows of dx are written by one thread each. ld_*: row strides (default C).
template <typename T>
void segment_mean_backward(T* dx,                     // (N, C), accumulated, row stride ld_dx
                           const T* dout,             // (R, C), row stride ld_dout
                           const int32_t* row_ptr,    // (R + 1), for the degrees
                           const int32_t* t_row_ptr,  // (N + 1), transpose
                           const int32_t* t_col_idx,  // (E)
                           int32_t N, int32_t C, int64_t ld_dx = -1, int64_t ld_dout = -1);

// out[r][c] = max_{e in r} x[col_idx[e]][c]; argmax[r][c] = the winning x row (first on ties),
// -1 and out = 0 for empty r.
template <typename T>
void segment_max_forward(T* out,                  // (R, C)
                         int32_t* argmax,         // (R, C)
                         const T* x,              // (N, C)
                         const int32_t* row_ptr,  // (R + 1)
                         const int32_t* col_idx,  // (E)
                         int32_t R, int32_t C);
// dx[argmax[r][c]][c] += dout[r][c]. Threads split the channels, so no two write one element.
template <typename T>
void segment_max_backward(T* dx,                  // (N, C), accumulated
                          const T* dout,          // (R, C)
                          const int32_t* argmax,  // (R, C)
                          int32_t R, int32_t C);

}  // namespace gdp::nn
