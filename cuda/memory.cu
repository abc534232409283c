// Device query, allocation and host<->device copies: the only place the backend talks
// to the CUDA runtime about memory.
#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {
std::string g_last_error;  // why the last cuda_device_count() returned 0
}

int cuda_device_count() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    g_last_error = cudaGetErrorString(err);
    (void)cudaGetLastError();  // clear the (non-sticky) error so later checks start clean
    return 0;
  }
  if (n == 0) g_last_error = "cudaGetDeviceCount reported 0 devices";
  return n;
}

std::string cuda_last_error_string() { return g_last_error; }

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return prop.name;
}

void synchronize() { GDP_CUDA_CHECK(cudaDeviceSynchronize()); }

void* device_alloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  GDP_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void device_free(void* ptr) noexcept {
  if (ptr) cudaFree(ptr);  // errors here cannot be reported from a destructor
}

void copy_to_device(float* dst, const float* src_host, std::size_t n) {
  if (n) GDP_CUDA_CHECK(cudaMemcpy(dst, src_host, n * sizeof(float), cudaMemcpyHostToDevice));
}
void copy_to_device(int* dst, const int* src_host, std::size_t n) {
  if (n) GDP_CUDA_CHECK(cudaMemcpy(dst, src_host, n * sizeof(int), cudaMemcpyHostToDevice));
}
void copy_to_host(float* dst_host, const float* src, std::size_t n) {
  if (n) GDP_CUDA_CHECK(cudaMemcpy(dst_host, src, n * sizeof(float), cudaMemcpyDeviceToHost));
}
void copy_to_host(int* dst_host, const int* src, std::size_t n) {
  if (n) GDP_CUDA_CHECK(cudaMemcpy(dst_host, src, n * sizeof(int), cudaMemcpyDeviceToHost));
}
void fill_zero(void* dst, std::size_t bytes) {
  if (bytes) GDP_CUDA_CHECK(cudaMemset(dst, 0, bytes));
}

}  // namespace gdp::cuda
