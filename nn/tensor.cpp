// Tensor storage, views and copies (see nn/tensor.h for the layout and the scalar scheme).
#include "nn/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace gdp::nn {

namespace {
#ifdef GDP_HAVE_CUDA
// Built with the CUDA backend: device storage comes from cuda/ unless another allocator is set.
DeviceAllocator g_cuda_allocator{&gdp::cuda::device_alloc, &gdp::cuda::device_free};
#else
DeviceAllocator g_cuda_allocator;
#endif
constexpr size_t kAlignBytes = 64;

// CPU blocks of at least kCacheMinBytes are kept on release and handed out again for the same
// size: training repeats the same shapes every step, and fresh large blocks cost page faults
// (the kernel zeroes every page) that are as expensive as the ops themselves.
constexpr size_t kCacheMinBytes = size_t(1) << 16;
constexpr size_t kCacheMaxBytes = size_t(2) << 30;

class BlockCache {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= bytes;
    return p;
  }
  bool give(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + bytes > kCacheMaxBytes) return false;
    free_[bytes].push_back(p);
    cached_bytes_ += bytes;
    return true;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [bytes, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    cached_bytes_ = 0;
  }
  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_bytes_;
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache();  // leaked on purpose: outlives static tensors
  return *cache;
}

size_t rounded_bytes(size_t bytes) {
  return ((std::max<size_t>(bytes, 1) + kAlignBytes - 1) / kAlignBytes) * kAlignBytes;
}

void* allocate_bytes(size_t bytes, Device device, bool zero_fill = true) {
  if (device == Device::cpu) {
    const size_t rounded = rounded_bytes(bytes);
    void* p = rounded >= kCacheMinBytes ? block_cache().take(rounded) : nullptr;
    if (!p) p = std::aligned_alloc(kAlignBytes, rounded);
    if (!p) throw std::bad_alloc();
    if (zero_fill) std::memset(p, 0, rounded);
    return p;
  }
  if (!g_cuda_allocator.allocate)
    throw std::runtime_error("nn::Storage: no allocator registered for device cuda");
  void* p = g_cuda_allocator.allocate(bytes);
#ifdef GDP_HAVE_CUDA
  if (zero_fill && p && bytes > 0) gdp::cuda::fill_zero(p, bytes);
#endif
  return p;
}

void release_bytes(void* p, size_t bytes, Device device) {
  if (!p) return;
  if (device == Device::cpu) {
    const size_t rounded = rounded_bytes(bytes);
    if (rounded >= kCacheMinBytes && block_cache().give(p, rounded)) return;
    std::free(p);
  } else if (g_cuda_allocator.release) {
    g_cuda_allocator.release(p);
  }
}

void require_cpu(Device d, const char* what) {
  if (d != Device::cpu)
    throw std::runtime_error(std::string("nn::Tensor::") + what + ": only cpu tensors supported");
}

// Copies n contiguous elements between devices (any pair; cuda only for float with CUDA built).
template <typename T>
void copy_elements(T* dst, Device dst_device, const T* src, Device src_device, size_t n) {
  if (n == 0) return;
  if (dst_device == Device::cpu && src_device == Device::cpu) {
    std::memcpy(dst, src, n * sizeof(T));
    return;
  }
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>) {
    if (dst_device == Device::cuda && src_device == Device::cpu)
      gdp::cuda::copy_to_device(dst, src, n);
    else if (dst_device == Device::cpu)
      gdp::cuda::copy_to_host(dst, src, n);
    else
      gdp::cuda::scale_forward(dst, src, 1.0f, n);  // device to device
    return;
  } else {
    throw std::runtime_error("nn::Tensor: cuda tensors are float only");
  }
#else
  (void)dst;
  (void)src;
  throw std::runtime_error("nn::Tensor: built without the CUDA backend");
#endif
}

// A fresh contiguous tensor of this shape on device, left uninitialized.
template <typename T>
BasicTensor<T> uninitialized_on(const Shape& shape, Device device) {
  return BasicTensor<T>(std::make_shared<Storage<T>>(shape_numel(shape), device, false), 0, shape,
                        contiguous_strides(shape));
}
}  // namespace

void clear_allocator_cache() { block_cache().clear(); }
size_t allocator_cached_bytes() { return block_cache().cached_bytes(); }

const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

void set_device_allocator(Device device, DeviceAllocator allocator) {
  if (device == Device::cpu) throw std::invalid_argument("set_device_allocator: cpu is built in");
  g_cuda_allocator = allocator;
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_str(shape));
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ',';
  os << ')';
  return os.str();
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

// ---- Storage ----

template <typename T>
Storage<T>::Storage(int64_t n, Device device, bool zero_fill) : n_(n), device_(device) {
  if (n < 0) throw std::invalid_argument("Storage: negative size");
  ptr_ = static_cast<T*>(allocate_bytes(static_cast<size_t>(n) * sizeof(T), device, zero_fill));
}

template <typename T>
Storage<T>::~Storage() {
  release_bytes(ptr_, static_cast<size_t>(n_) * sizeof(T), device_);
}

template <typename T>
void Storage<T>::grow(int64_t n) {
  if (n <= n_) return;
  require_cpu(device_, "grow");
  T* fresh = static_cast<T*>(allocate_bytes(static_cast<size_t>(n) * sizeof(T), device_));
  if (n_ > 0) std::memcpy(fresh, ptr_, static_cast<size_t>(n_) * sizeof(T));
  release_bytes(ptr_, static_cast<size_t>(n_) * sizeof(T), device_);
  ptr_ = fresh;
  n_ = n;
}

// ---- BasicTensor ----

template <typename T>
BasicTensor<T>::BasicTensor(const Shape& shape, Device device)
    : storage_(std::make_shared<Storage<T>>(shape_numel(shape), device)),
      offset_(0),
      numel_(shape_numel(shape)),
      shape_(shape),
      strides_(contiguous_strides(shape)) {}

template <typename T>
BasicTensor<T>::BasicTensor(std::shared_ptr<Storage<T>> storage, int64_t offset, const Shape& shape,
                            const Shape& strides)
    : storage_(std::move(storage)),
      offset_(offset),
      numel_(shape_numel(shape)),
      shape_(shape),
      strides_(strides) {
  if (shape.size() != strides.size()) throw std::invalid_argument("Tensor view: rank mismatch");
}

template <typename T>
BasicTensor<T> BasicTensor<T>::empty(const Shape& shape) {
  BasicTensor t;
  t.storage_ = std::make_shared<Storage<T>>(shape_numel(shape), Device::cpu, false);
  t.numel_ = shape_numel(shape);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  return t;
}

template <typename T>
BasicTensor<T> BasicTensor<T>::full(const Shape& shape, T value) {
  BasicTensor t(shape);
  t.fill(value);
  return t;
}

template <typename T>
BasicTensor<T> BasicTensor<T>::from_vector(const Shape& shape, const std::vector<T>& values) {
  BasicTensor t(shape);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw std::invalid_argument("Tensor::from_vector: " + std::to_string(values.size()) +
                                " values for shape " + shape_str(shape));
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

template <typename T>
int64_t BasicTensor<T>::dim(int64_t axis) const {
  const int64_t r = ndim();
  const int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw std::out_of_range("Tensor::dim: axis " + std::to_string(axis) + " for shape " +
                            shape_str(shape_));
  return shape_[a];
}

template <typename T>
Device BasicTensor<T>::device() const {
  return storage_ ? storage_->device() : Device::cpu;
}

template <typename T>
bool BasicTensor<T>::is_contiguous() const {
  int64_t s = 1;
  for (int64_t i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != s) return false;
    s *= shape_[i];
  }
  return true;
}

template <typename T>
T& BasicTensor<T>::at(std::initializer_list<int64_t> index) {
  require_cpu(device(), "at");
  if (static_cast<int64_t>(index.size()) != ndim())
    throw std::out_of_range("Tensor::at: rank mismatch for shape " + shape_str(shape_));
  int64_t off = 0, i = 0;
  for (int64_t idx : index) {
    if (idx < 0 || idx >= shape_[i])
      throw std::out_of_range("Tensor::at: index out of range for shape " + shape_str(shape_));
    off += idx * strides_[i++];
  }
  return data()[off];
}

template <typename T>
T BasicTensor<T>::at(std::initializer_list<int64_t> index) const {
  return const_cast<BasicTensor*>(this)->at(index);
}

template <typename T>
T BasicTensor<T>::item() const {
  if (numel_ != 1)
    throw std::invalid_argument("Tensor::item: tensor has shape " + shape_str(shape_));
  if (device() != Device::cpu) return cpu().item();
  return data()[0];
}

template <typename T>
BasicTensor<T> BasicTensor<T>::reshape(const Shape& shape) const {
  if (!is_contiguous()) return contiguous().reshape(shape);
  Shape s = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("Tensor::reshape: more than one -1");
      infer = static_cast<int64_t>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) s[infer] = known == 0 ? 0 : numel_ / known;
  if (shape_numel(s) != numel_)
    throw std::invalid_argument("Tensor::reshape: cannot view " + shape_str(shape_) + " as " +
                                shape_str(shape));
  return BasicTensor(storage_, offset_, s, contiguous_strides(s));
}

template <typename T>
BasicTensor<T> BasicTensor<T>::transpose_view(int64_t axis0, int64_t axis1) const {
  const int64_t r = ndim();
  const int64_t a = axis0 < 0 ? axis0 + r : axis0, b = axis1 < 0 ? axis1 + r : axis1;
  if (a < 0 || a >= r || b < 0 || b >= r)
    throw std::out_of_range("Tensor::transpose_view: bad axes for " + shape_str(shape_));
  Shape s = shape_, st = strides_;
  std::swap(s[a], s[b]);
  std::swap(st[a], st[b]);
  return BasicTensor(storage_, offset_, s, st);
}

template <typename T>
BasicTensor<T> BasicTensor<T>::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

template <typename T>
BasicTensor<T> BasicTensor<T>::clone() const {
  if (device() != Device::cpu) {
    if (!is_contiguous())
      throw std::runtime_error("nn::Tensor::clone: strided copies are cpu only");
    BasicTensor out = uninitialized_on<T>(shape_, device());
    copy_elements(out.data(), device(), data(), device(), static_cast<size_t>(numel_));
    return out;
  }
  BasicTensor out(shape_);
  if (is_contiguous()) {
    std::memcpy(out.data(), data(), static_cast<size_t>(numel_) * sizeof(T));
    return out;
  }
  // Strided copy: odometer over the index.
  const int64_t r = ndim();
  std::vector<int64_t> idx(r, 0);
  const T* src = data();
  T* dst = out.data();
  for (int64_t flat = 0; flat < numel_; ++flat) {
    int64_t off = 0;
    for (int64_t i = 0; i < r; ++i) off += idx[i] * strides_[i];
    dst[flat] = src[off];
    for (int64_t i = r - 1; i >= 0; --i) {
      if (++idx[i] < shape_[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

template <typename T>
template <typename U>
BasicTensor<U> BasicTensor<T>::cast() const {
  require_cpu(device(), "cast");
  const BasicTensor c = contiguous();
  BasicTensor<U> out(shape_);
  for (int64_t i = 0; i < numel_; ++i) out[i] = static_cast<U>(c[i]);
  return out;
}

template <typename T>
BasicTensor<T> BasicTensor<T>::to_device(Device target) const {
  if (device() == target) return *this;
  if (!defined()) throw std::invalid_argument("nn::Tensor::to_device: undefined tensor");
  const BasicTensor src = device() == Device::cpu ? contiguous() : *this;
  if (!src.is_contiguous())
    throw std::runtime_error("nn::Tensor::to_device: strided device tensors cannot be copied");
  BasicTensor out = uninitialized_on<T>(shape_, target);
  copy_elements(out.data(), target, src.data(), device(), static_cast<size_t>(numel_));
  return out;
}

template <typename T>
void BasicTensor<T>::fill(T value) {
  if (device() != Device::cpu) {
    if (!is_contiguous()) throw std::runtime_error("nn::Tensor::fill: strided device tensor");
    if (numel_ == 0) return;
#ifdef GDP_HAVE_CUDA
    if (value == T(0)) {
      gdp::cuda::fill_zero(data(), static_cast<size_t>(numel_) * sizeof(T));
      return;
    }
#endif
    const std::vector<T> host(static_cast<size_t>(numel_), value);
    copy_elements(data(), device(), host.data(), Device::cpu, host.size());
    return;
  }
  if (is_contiguous()) {
    std::fill(data(), data() + numel_, value);
    return;
  }
  // Write through the strides.
  const int64_t r = ndim();
  std::vector<int64_t> idx(r, 0);
  for (int64_t flat = 0; flat < numel_; ++flat) {
    int64_t off = 0;
    for (int64_t i = 0; i < r; ++i) off += idx[i] * strides_[i];
    data()[off] = value;
    for (int64_t i = r - 1; i >= 0; --i) {
      if (++idx[i] < shape_[i]) break;
      idx[i] = 0;
    }
  }
}

template <typename T>
void BasicTensor<T>::copy_from(const BasicTensor& src) {
  if (src.numel() != numel_)
    throw std::invalid_argument("Tensor::copy_from: " + shape_str(src.shape()) + " into " +
                                shape_str(shape_));
  if (!is_contiguous())
    throw std::invalid_argument("Tensor::copy_from: destination not contiguous");
  if (device() != Device::cpu || src.device() != Device::cpu) {
    const BasicTensor s = src.device() == Device::cpu ? src.contiguous() : src;
    if (!s.is_contiguous()) throw std::invalid_argument("Tensor::copy_from: strided device source");
    copy_elements(data(), device(), s.data(), s.device(), static_cast<size_t>(numel_));
    return;
  }
  const BasicTensor s = src.contiguous();
  std::memcpy(data(), s.data(), static_cast<size_t>(numel_) * sizeof(T));
}

template <typename T>
std::vector<T> BasicTensor<T>::to_vector() const {
  if (device() != Device::cpu) return cpu().to_vector();
  const BasicTensor c = contiguous();
  return std::vector<T>(c.data(), c.data() + numel_);
}

template <typename T>
MatrixMap<T> BasicTensor<T>::mat() {
  const int64_t cols = ndim() == 0 ? 1 : shape_.back();
  return mat(cols == 0 ? 0 : numel_ / cols, cols);
}
template <typename T>
ConstMatrixMap<T> BasicTensor<T>::mat() const {
  const int64_t cols = ndim() == 0 ? 1 : shape_.back();
  return mat(cols == 0 ? 0 : numel_ / cols, cols);
}
template <typename T>
MatrixMap<T> BasicTensor<T>::mat(int64_t rows, int64_t cols) {
  if (!is_contiguous() || rows * cols != numel_)
    throw std::invalid_argument("Tensor::mat: needs a contiguous tensor of rows*cols elements");
  return MatrixMap<T>(data(), rows, cols);
}
template <typename T>
ConstMatrixMap<T> BasicTensor<T>::mat(int64_t rows, int64_t cols) const {
  if (!is_contiguous() || rows * cols != numel_)
    throw std::invalid_argument("Tensor::mat: needs a contiguous tensor of rows*cols elements");
  return ConstMatrixMap<T>(data(), rows, cols);
}
template <typename T>
ArrayMap<T> BasicTensor<T>::vec() {
  if (!is_contiguous()) throw std::invalid_argument("Tensor::vec: not contiguous");
  return ArrayMap<T>(data(), numel_);
}
template <typename T>
ConstArrayMap<T> BasicTensor<T>::vec() const {
  if (!is_contiguous()) throw std::invalid_argument("Tensor::vec: not contiguous");
  return ConstArrayMap<T>(data(), numel_);
}

template <typename T>
double max_abs_diff(const BasicTensor<T>& a, const BasicTensor<T>& b) {
  if (a.shape() != b.shape())
    throw std::invalid_argument("max_abs_diff: shapes " + shape_str(a.shape()) + " and " +
                                shape_str(b.shape()));
  const BasicTensor<T> ac = a.cpu().contiguous(), bc = b.cpu().contiguous();
  double m = 0.0;
  for (int64_t i = 0; i < ac.numel(); ++i)
    m = std::max(m, std::abs(static_cast<double>(ac[i]) - static_cast<double>(bc[i])));
  return m;
}

template class Storage<float>;
template class Storage<double>;
template class BasicTensor<float>;
template class BasicTensor<double>;
template BasicTensor<double> BasicTensor<float>::cast<double>() const;
template BasicTensor<float> BasicTensor<double>::cast<float>() const;
template BasicTensor<float> BasicTensor<float>::cast<float>() const;
template BasicTensor<double> BasicTensor<double>::cast<double>() const;
template double max_abs_diff(const BasicTensor<float>&, const BasicTensor<float>&);
template double max_abs_diff(const BasicTensor<double>&, const BasicTensor<double>&);

}  // namespace gdp::nn
