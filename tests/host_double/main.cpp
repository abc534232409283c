// Entry point of test_cuda_host_double: tests/cuda/*.cpp run against the host double of the CUDA
// backend (kernels_host.cpp), which is always "present", so unlike test_cuda it never skips.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
