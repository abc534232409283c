// Entry point of test_cuda: runs the Catch2 tests when a CUDA GPU is visible, otherwise
// prints why and exits 77, which ctest reports as "skipped" (SKIP_RETURN_CODE 77).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>

#include "cuda/kernels.h"

int main(int argc, char** argv) {
  // Listing (ctest's test discovery at build time) and help never need a GPU.
  bool list_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--list", 6) == 0 || std::strcmp(argv[i], "-l") == 0 ||
        std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0 ||
        std::strcmp(argv[i], "-?") == 0)
      list_only = true;
  }
  if (!list_only && gdp::cuda::cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA GPU visible (%s)\n", gdp::cuda::cuda_last_error_string().c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
