// Dense tensors for the nn library: shape + strides over shared, aligned storage, with Eigen maps.
// Everything numeric in nn/ is templated on the scalar so the same code runs in float and double.
//
// Scalar templating scheme (shared by every file in nn/):
//   - Numerics are templates on T in {float, double}: BasicTensor<T>, BasicVar<T>, raw kernels
//     `foo_forward<T>(T* out, ..., const T* in, ..., sizes)` and autograd ops
//     `foo<T>(BasicVar<T>)`.
//   - Definitions live in .cpp files and are explicitly instantiated for float and double at the
//     bottom of each file (`template class BasicTensor<float>; template class
//     BasicTensor<double>;`), so headers stay light and both precisions link. Training uses float
//     (Tensor, Var); the finite-difference gradient checks use double (TensorD, VarD).
//   - Aliases: Tensor = BasicTensor<float>, TensorD = BasicTensor<double>; same for Var/VarD,
//     Tape/TapeD, ParameterBuffer/ParameterBufferD.
//
// Layout: row-major. Ops always produce contiguous outputs; views (reshape of a contiguous tensor,
// parameters inside the flat ParameterBuffer, transpose_view) share the storage. Storage carries a
// Device {cpu, cuda}. In builds with GDP_HAVE_CUDA, cuda storage comes from cuda/ (float tensors;
// to_device / cpu() copy, a set of ops runs there: docs/nn.md "CUDA tensors"); otherwise a CUDA
// allocator can be registered from outside.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace gdp::nn {

enum class Device : uint8_t { cpu, cuda };
const char* device_name(Device d);

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "(2, 3, 4)"
Shape contiguous_strides(const Shape& shape);

// Allocator hook for non-CPU storage (set by the CUDA backend, if linked). Sizes in bytes.
struct DeviceAllocator {
  void* (*allocate)(size_t size_bytes) = nullptr;
  void (*release)(void* ptr) = nullptr;
};
void set_device_allocator(Device device, DeviceAllocator allocator);

// Large CPU blocks (>= 64 KiB) are cached by exact size after release and reused (training
// repeats the same shapes each step); at most 2 GiB is kept. These free / report the cache.
void clear_allocator_cache();
size_t allocator_cached_bytes();

// Owns one buffer of n elements (64-byte aligned on CPU, zero-filled). grow() reallocates and
// keeps the contents; tensors hold the Storage by shared_ptr plus an offset, so views made
// before a grow() stay valid (raw pointers taken before it do not).
template <typename T>
class Storage {
 public:
  explicit Storage(int64_t n, Device device = Device::cpu, bool zero_fill = true);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  int64_t size() const { return n_; }
  Device device() const { return device_; }
  void grow(int64_t n);  // n >= size(); new elements are zero

 private:
  T* ptr_ = nullptr;
  int64_t n_ = 0;
  Device device_ = Device::cpu;
};

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatrixMap = Eigen::Map<RowMatrix<T>>;
template <typename T>
using ConstMatrixMap = Eigen::Map<const RowMatrix<T>>;
template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T>
class BasicTensor {
 public:
  using Scalar = T;

  BasicTensor() = default;  // undefined (no storage); defined() == false
  explicit BasicTensor(const Shape& shape, Device device = Device::cpu);  // zeros
  BasicTensor(std::shared_ptr<Storage<T>> storage, int64_t offset, const Shape& shape,
              const Shape& strides);  // a view

  static BasicTensor zeros(const Shape& shape) { return BasicTensor(shape); }
  // Uninitialized CPU tensor, for outputs a kernel overwrites completely.
  static BasicTensor empty(const Shape& shape);
  static BasicTensor full(const Shape& shape, T value);
  static BasicTensor from_vector(const Shape& shape, const std::vector<T>& values);
  static BasicTensor scalar(T value) { return full({}, value); }

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const;  // negative axis counts from the end
  int64_t numel() const { return numel_; }
  int64_t offset() const { return offset_; }
  Device device() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage<T>>& storage() const { return storage_; }

  T* data() { return storage_->data() + offset_; }
  const T* data() const { return storage_->data() + offset_; }
  T& operator[](int64_t flat) { return data()[flat]; }  // contiguous tensors only
  const T& operator[](int64_t flat) const { return data()[flat]; }
  T& at(std::initializer_list<int64_t> index);  // any strides, bounds-checked
  T at(std::initializer_list<int64_t> index) const;
  T item() const;  // numel() == 1

  // Views (share storage).
  BasicTensor reshape(const Shape& shape) const;  // contiguous only; one dim may be -1
  BasicTensor transpose_view(int64_t axis0, int64_t axis1) const;  // swaps strides
  // Copies.
  BasicTensor contiguous() const;  // itself if already contiguous
  BasicTensor clone() const;       // always a fresh contiguous copy
  template <typename U>
  BasicTensor<U> cast() const;  // float <-> double, contiguous copy

  // Device copies (float only for cuda, in builds with GDP_HAVE_CUDA): a fresh contiguous tensor
  // on `device`, or itself when already there. cpu() copies to the host.
  BasicTensor to_device(Device device) const;
  BasicTensor cpu() const { return to_device(Device::cpu); }

  void fill(T value);
  void zero() { fill(T(0)); }
  void copy_from(const BasicTensor& src);  // same numel; both contiguous
  std::vector<T> to_vector() const;

  // Eigen views of contiguous tensors: mat() is (numel/last, last) row-major; vec() is flat.
  MatrixMap<T> mat();
  ConstMatrixMap<T> mat() const;
  MatrixMap<T> mat(int64_t rows, int64_t cols);
  ConstMatrixMap<T> mat(int64_t rows, int64_t cols) const;
  ArrayMap<T> vec();
  ConstArrayMap<T> vec() const;

 private:
  std::shared_ptr<Storage<T>> storage_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  Shape shape_;
  Shape strides_;
};

using Tensor = BasicTensor<float>;
using TensorD = BasicTensor<double>;

// Max |a - b| over elements (same shape); for tests.
template <typename T>
double max_abs_diff(const BasicTensor<T>& a, const BasicTensor<T>& b);

}  // namespace gdp::nn
