// Gather, scatter-add and embedding lookup/backward against CPU loops, with repeated
// indices so the atomic accumulation is exercised.
#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

TEST_CASE("cuda/gather and scatter-add rows vs cpu", "[cuda]") {
  std::mt19937 rng(40);
  for (int V : {1, 7, 1000}) {
    for (int M : {1, 33, 4097}) {
      for (int C : {1, 7, 33, 128, 1000}) {
        auto x = random_vec(std::size_t(V) * C, rng), src = random_vec(std::size_t(M) * C, rng);
        auto idx = random_idx(M, V, rng);  // M > V: indices repeat
        auto out0 = random_vec(std::size_t(V) * C, rng);
        auto d_x = to_device(x), d_src = to_device(src), d_out = to_device(out0);
        auto d_idx = to_device(idx);
        DeviceBuffer d_g(std::size_t(M) * C), d_e(std::size_t(M) * C);
        gather_rows(d_g.data(), d_x.data(), d_idx.data(), M, C);
        embedding_forward(d_e.data(), d_x.data(), d_idx.data(), M, C);
        scatter_add_rows(d_out.data(), d_src.data(), d_idx.data(), M, C);
        embedding_backward(d_out.data(), d_src.data(), d_idx.data(), M, C);  // adds the same again

        std::vector<float> g(std::size_t(M) * C);
        std::vector<double> out(out0.begin(), out0.end());
        for (int m = 0; m < M; ++m)
          for (int c = 0; c < C; ++c) {
            g[std::size_t(m) * C + c] = x[std::size_t(idx[m]) * C + c];
            out[std::size_t(idx[m]) * C + c] += 2.0 * src[std::size_t(m) * C + c];
          }
        std::string what =
            "V=" + std::to_string(V) + " M=" + std::to_string(M) + " C=" + std::to_string(C);
        check_close(to_host(d_g), g, 0.0f, 0.0f, "gather " + what);
        check_close(to_host(d_e), g, 0.0f, 0.0f, "embedding " + what);
        check_close(to_host(d_out), std::vector<float>(out.begin(), out.end()), 1e-3f, 1e-4f,
                    "scatter " + what);
      }
    }
  }
}
