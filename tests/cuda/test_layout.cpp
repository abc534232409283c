// Layout kernels against plain CPU loops: strided 2-D copies, axis swaps (the batched
// transpose included), broadcast forward and its accumulated backward, and the
// Transformer-XL relative shift with causal-like and full-mask bases.
#include <array>
#include <initializer_list>
#include <string>
#include <vector>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

namespace {

const std::vector<int> kOdd = {1, 7, 33, 127, 1000};

std::string shape_str(std::initializer_list<int> dims) {
  std::string s = "(";
  for (int d : dims) s += (s.size() > 1 ? "," : "") + std::to_string(d);
  return s + ")";
}

}  // namespace

TEST_CASE("cuda/copy_2d vs cpu", "[cuda]") {
  std::mt19937 rng(80);
  for (int rows : kOdd) {
    for (int cols : kOdd) {
      for (int pad : {0, 3}) {  // pad 0: both contiguous; else strided, with different leads
        int ld_src = cols + pad, ld_dst = cols + 2 * pad + (pad ? 1 : 0);
        for (bool acc : {false, true}) {
          auto src = random_vec(std::size_t(rows) * ld_src, rng);
          auto dst0 = random_vec(std::size_t(rows) * ld_dst, rng);  // outside the block: untouched
          auto d_src = to_device(src), d_dst = to_device(dst0);
          copy_2d(d_dst.data(), ld_dst, d_src.data(), ld_src, rows, cols, acc);
          std::vector<float> dst(dst0);
          for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) {
              float v = src[std::size_t(r) * ld_src + c];
              float& d = dst[std::size_t(r) * ld_dst + c];
              d = acc ? d + v : v;
            }
          std::string what = "copy_2d rows=" + std::to_string(rows) +
                             " cols=" + std::to_string(cols) + " ld_src=" + std::to_string(ld_src) +
                             " ld_dst=" + std::to_string(ld_dst) + (acc ? " +=" : "");
          check_close(to_host(d_dst), dst, 0.0f, 0.0f, what);
        }
      }
    }
  }
}

TEST_CASE("cuda/copy_2d with zero rows or columns is a no-op", "[cuda]") {
  std::mt19937 rng(81);
  auto dst0 = random_vec(21, rng), src = random_vec(21, rng);
  auto d_dst = to_device(dst0), d_src = to_device(src);
  copy_2d(d_dst.data(), 7, d_src.data(), 7, 0, 7, false);
  copy_2d(d_dst.data(), 7, d_src.data(), 7, 3, 0, true);
  check_close(to_host(d_dst), dst0, 0.0f, 0.0f, "copy_2d empty");
}

TEST_CASE("cuda/swap_axes vs cpu", "[cuda]") {
  std::mt19937 rng(82);
  // (A, n0, B, n1, C): transposes (B = C = 1), head splits (A = B = 1), general swaps
  std::vector<std::array<int, 5>> shapes = {
      {1, 1, 1, 1, 1},      {1, 7, 1, 33, 1}, {1, 33, 1, 127, 1}, {3, 1000, 1, 7, 1},
      {2, 127, 1, 1000, 1}, {5, 1, 1, 33, 1}, {1, 33, 1, 1, 1},   {1, 127, 1, 8, 16},
      {1, 33, 1, 7, 33},    {2, 3, 5, 7, 4},  {3, 7, 33, 1, 1},   {7, 33, 1, 7, 1},
      {1, 1000, 1, 4, 1},   {2, 7, 3, 33, 1}, {1, 5, 127, 3, 7},
  };
  for (const auto& s : shapes) {
    const int A = s[0], n0 = s[1], B = s[2], n1 = s[3], C = s[4];
    std::size_t n = std::size_t(A) * n0 * B * n1 * C;
    for (bool acc : {false, true}) {
      auto x = random_vec(n, rng), out0 = random_vec(n, rng);
      auto d_x = to_device(x), d_out = to_device(out0);
      swap_axes(d_out.data(), d_x.data(), A, n0, B, n1, C, acc);
      std::vector<float> out(out0);
      for (int a = 0; a < A; ++a)
        for (int i = 0; i < n0; ++i)
          for (int b = 0; b < B; ++b)
            for (int j = 0; j < n1; ++j)
              for (int c = 0; c < C; ++c) {
                float v = x[(((std::size_t(a) * n0 + i) * B + b) * n1 + j) * C + c];
                float& o = out[(((std::size_t(a) * n1 + j) * B + b) * n0 + i) * C + c];
                o = acc ? o + v : v;
              }
      check_close(to_host(d_out), out, 0.0f, 0.0f,
                  "swap_axes " + shape_str({A, n0, B, n1, C}) + (acc ? " +=" : ""));
    }
  }
}

TEST_CASE("cuda/swap_axes there and back is the identity", "[cuda]") {
  std::mt19937 rng(83);
  const int S = 33, H = 4, Dh = 7;  // (S, H, Dh) -> heads (H, S, Dh) -> back
  auto x = random_vec(std::size_t(S) * H * Dh, rng);
  auto d_x = to_device(x);
  DeviceBuffer d_h(x.size()), d_back(x.size());
  swap_axes(d_h.data(), d_x.data(), 1, S, 1, H, Dh, false);
  swap_axes(d_back.data(), d_h.data(), 1, H, 1, S, Dh, false);
  check_close(to_host(d_back), x, 0.0f, 0.0f, "split and merge heads");
}

namespace {

struct ExpandCase {
  std::string name;
  std::vector<int> dims;           // output shape
  std::vector<long long> strides;  // x strides per output dim (0 = broadcast)
  std::size_t x_size;
};

BroadcastShape make_shape(const ExpandCase& c) {
  BroadcastShape s;
  s.ndim = static_cast<int>(c.dims.size());
  for (int k = 0; k < s.ndim; ++k) {
    s.dims[k] = c.dims[k];
    s.x_strides[k] = c.strides[k];
  }
  return s;
}

// Source offset of every output element, row-major over dims: the reference of both passes.
std::vector<std::size_t> source_offsets(const ExpandCase& c) {
  std::size_t n = 1;
  for (int d : c.dims) n *= static_cast<std::size_t>(d);
  std::vector<std::size_t> src(n);
  for (std::size_t o = 0; o < n; ++o) {
    std::size_t rest = o;
    long long off = 0;
    for (int k = static_cast<int>(c.dims.size()) - 1; k >= 0; --k) {
      off += static_cast<long long>(rest % c.dims[k]) * c.strides[k];
      rest /= c.dims[k];
    }
    src[o] = static_cast<std::size_t>(off);
  }
  return src;
}

}  // namespace

TEST_CASE("cuda/expand forward and backward vs cpu", "[cuda]") {
  std::vector<ExpandCase> cases = {
      {"scalar to ()", {}, {}, 1},
      {"scalar to (1)", {1}, {0}, 1},
      {"scalar to (33,7)", {33, 7}, {0, 0}, 1},
      {"row (127) to (1000,127)", {1000, 127}, {0, 1}, 127},
      {"column (33,1) to (33,1000)", {33, 1000}, {1, 0}, 33},
      {"(7,1,33) to (7,127,33)", {7, 127, 33}, {33, 0, 1}, 7 * 33},
      {"(1,7,1,33) to (3,7,5,33)", {3, 7, 5, 33}, {0, 33, 0, 1}, 7 * 33},
      {"identity (7,33)", {7, 33}, {33, 1}, 7 * 33},
      {"transposed view of (33,7) to (7,33)", {7, 33}, {1, 7}, 7 * 33},
      {"8 dims", {2, 1, 3, 1, 2, 3, 1, 5}, {90, 0, 30, 0, 15, 5, 0, 1}, 180},
      {"8 dims broadcast", {2, 3, 3, 2, 2, 3, 1, 5}, {30, 0, 0, 0, 15, 5, 0, 1}, 60},
  };
  std::mt19937 rng(84);
  for (const auto& c : cases) {
    auto shape = make_shape(c);
    auto src = source_offsets(c);
    std::size_t n = src.size();
    auto x = random_vec(c.x_size, rng), g = random_vec(n, rng), dx0 = random_vec(c.x_size, rng);
    auto d_x = to_device(x), d_g = to_device(g), d_dx = to_device(dx0);
    auto d_out = to_device(random_vec(n, rng));  // overwritten
    expand_forward(d_out.data(), d_x.data(), shape);
    expand_backward(d_dx.data(), d_g.data(), shape);
    std::vector<float> out(n);
    std::vector<double> dx(dx0.begin(), dx0.end());
    for (std::size_t o = 0; o < n; ++o) {
      out[o] = x[src[o]];
      dx[src[o]] += g[o];
    }
    check_close(to_host(d_out), out, 0.0f, 0.0f, "expand " + c.name + " out");
    // up to 1000 float atomics per target, in any order
    check_close(to_host(d_dx), std::vector<float>(dx.begin(), dx.end()), 1e-4f, 1e-4f,
                "expand " + c.name + " dx");
  }
}

TEST_CASE("cuda/expand with a zero dim is a no-op", "[cuda]") {
  std::mt19937 rng(85);
  BroadcastShape s;
  s.ndim = 2;
  s.dims[0] = 0;
  s.dims[1] = 7;
  s.x_strides[1] = 1;
  auto dx0 = random_vec(7, rng);
  auto d_dx = to_device(dx0);
  expand_forward(nullptr, d_dx.data(), s);
  expand_backward(d_dx.data(), nullptr, s);
  check_close(to_host(d_dx), dx0, 0.0f, 0.0f, "expand empty");
}

TEST_CASE("cuda/rel_shift forward and backward vs cpu", "[cuda]") {
  std::mt19937 rng(86);
  const float scale = 0.125f;
  for (int BH : {1, 3}) {
    for (int S : {1, 7, 33}) {
      for (int M : {0, 5, 127, 1000}) {
        for (bool full : {false, true}) {
          // causal-like: keys M + S, positions P = M + S, base = M (p = M + i - j >= 0 for j <= M +
          // i); full mask: P = M + 2S - 1 relative positions, base = M + S - 1 (every key in range)
          const int K = M + S, P = full ? M + 2 * S - 1 : M + S, base = full ? M + S - 1 : M;
          std::size_t nout = std::size_t(BH) * S * K, nbd = std::size_t(BH) * S * P;
          auto bd = random_vec(nbd, rng), g = random_vec(nout, rng), dbd0 = random_vec(nbd, rng);
          auto d_bd = to_device(bd), d_g = to_device(g), d_dbd = to_device(dbd0);
          auto d_out = to_device(random_vec(nout, rng, 1.0f, 2.0f));  // overwritten, 0s included
          rel_shift_forward(d_out.data(), d_bd.data(), BH, S, K, P, base, scale);
          rel_shift_backward(d_dbd.data(), d_g.data(), BH, S, K, P, base, scale);

          std::vector<float> out(nout, 0.0f), dbd(dbd0);
          std::vector<std::size_t> outside;  // output elements whose p falls outside [0, P)
          for (int b = 0; b < BH; ++b)
            for (int i = 0; i < S; ++i)
              for (int j = 0; j < K; ++j) {
                std::size_t o = (std::size_t(b) * S + i) * K + j;
                long long p = static_cast<long long>(base) + i - j;
                if (p < 0 || p >= P) {
                  outside.push_back(o);
                  continue;
                }
                std::size_t at = (std::size_t(b) * S + i) * P + static_cast<std::size_t>(p);
                out[o] = scale * bd[at];
                dbd[at] += scale * g[o];
              }
          std::string what = std::string(full ? "full" : "causal") + " BH=" + std::to_string(BH) +
                             " S=" + std::to_string(S) + " M=" + std::to_string(M);
          auto got = to_host(d_out);
          check_close(got, out, 0.0f, 0.0f, "rel_shift " + what + " out");
          std::size_t nonzero = 0;
          for (std::size_t o : outside) nonzero += got[o] != 0.0f;
          INFO("rel_shift " << what << ": " << outside.size() << " keys outside [0, P)");
          CHECK(nonzero == 0);
          if (full) CHECK(outside.empty());  // every key has a position
          if (!full && S > 1)
            CHECK(outside.size() == std::size_t(BH) * S * (S - 1) / 2);  // the future keys
          check_close(to_host(d_dbd), dbd, 1e-6f, 1e-6f, "rel_shift " + what + " dbd");
        }
      }
    }
  }
}

TEST_CASE("cuda/rel_shift with an offset base leaves the out-of-range keys 0", "[cuda]") {
  // base beyond the causal one (rel_offset > 0) and below it (< 0): both ends of [0, P) bite
  std::mt19937 rng(87);
  const int BH = 2, S = 7, M = 5, K = M + S, P = M + S;
  for (int base : {M - 3, M + 4}) {
    std::size_t nout = std::size_t(BH) * S * K, nbd = std::size_t(BH) * S * P;
    auto bd = random_vec(nbd, rng), g = random_vec(nout, rng), dbd0 = random_vec(nbd, rng);
    auto d_bd = to_device(bd), d_g = to_device(g), d_dbd = to_device(dbd0);
    auto d_out = to_device(random_vec(nout, rng, 1.0f, 2.0f));
    rel_shift_forward(d_out.data(), d_bd.data(), BH, S, K, P, base, -2.0f);
    rel_shift_backward(d_dbd.data(), d_g.data(), BH, S, K, P, base, -2.0f);
    std::vector<float> out(nout, 0.0f), dbd(dbd0);
    for (int b = 0; b < BH; ++b)
      for (int i = 0; i < S; ++i)
        for (int j = 0; j < K; ++j) {
          long long p = static_cast<long long>(base) + i - j;
          if (p < 0 || p >= P) continue;
          std::size_t o = (std::size_t(b) * S + i) * K + j,
                      at = (std::size_t(b) * S + i) * P + std::size_t(p);
          out[o] = -2.0f * bd[at];
          dbd[at] += -2.0f * g[o];
        }
    check_close(to_host(d_out), out, 0.0f, 0.0f, "rel_shift base=" + std::to_string(base) + " out");
    check_close(to_host(d_dbd), dbd, 1e-6f, 1e-6f,
                "rel_shift base=" + std::to_string(base) + " dbd");
  }
}
