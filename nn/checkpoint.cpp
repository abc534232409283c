// Versioned binary checkpoints of a ParameterBuffer (+ Adam state), written atomically:
// temp file in the target directory, fsync, rename. Layout documented in docs/nn.md.
#include "nn/checkpoint.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

namespace gdp::nn {

namespace {

constexpr char kEndMarker[8] = {'G', 'D', 'P', 'N', 'N', 'E', 'N', 'D'};
constexpr uint32_t kFlagHasAdam = 1;

class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) {}
  void bytes(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) throw std::runtime_error("write failed");
  }
  template <typename V>
  void pod(V v) {
    bytes(&v, sizeof(V));
  }

 private:
  std::FILE* f_;
};

class Reader {
 public:
  Reader(std::ifstream& in, const std::string& path) : in_(in), path_(path) {}
  void bytes(void* p, size_t n, const char* what) {
    if (n && !in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n)))
      fail(std::string("truncated file while reading ") + what);
  }
  template <typename V>
  V pod(const char* what) {
    V v{};
    bytes(&v, sizeof(V), what);
    return v;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("checkpoint '" + path_ + "': " + why);
  }

 private:
  std::ifstream& in_;
  std::string path_;
};

}  // namespace

void save_checkpoint(const std::string& path, const ParameterBuffer& params, const Adam* adam,
                     int64_t user_step) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp =
      target.parent_path() / (target.filename().string() + ".tmp." + std::to_string(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error("checkpoint '" + path + "': cannot open " + tmp.string());
  try {
    Writer w(f);
    w.bytes(kCheckpointMagic, sizeof(kCheckpointMagic));
    w.pod<uint32_t>(kCheckpointVersion);
    w.pod<uint32_t>(adam ? kFlagHasAdam : 0);
    w.pod<int64_t>(user_step);
    w.pod<uint64_t>(static_cast<uint64_t>(params.count()));
    const std::vector<float> all_values = params.values().to_vector();  // host copy (any device)
    const float* values = all_values.data();
    for (const auto& e : params.entries()) {
      w.pod<uint32_t>(static_cast<uint32_t>(e.name.size()));
      w.bytes(e.name.data(), e.name.size());
      w.pod<uint32_t>(static_cast<uint32_t>(e.shape.size()));
      for (int64_t d : e.shape) w.pod<int64_t>(d);
      w.bytes(values + e.offset, sizeof(float) * shape_numel(e.shape));
    }
    if (adam) {
      const AdamConfig& c = adam->config();
      w.pod<int64_t>(adam->steps());
      w.pod<double>(c.lr);
      w.pod<double>(c.beta1);
      w.pod<double>(c.beta2);
      w.pod<double>(c.eps);
      w.pod<double>(c.weight_decay);
      w.pod<uint8_t>(c.decoupled ? 1 : 0);
      // Moments per parameter, in the same order as the parameters above.
      const std::vector<float> all_m = adam->m(), all_v = adam->v();  // host copies
      const bool have = static_cast<int64_t>(all_m.size()) == params.size();
      for (const auto& e : params.entries()) {
        const int64_t n = shape_numel(e.shape);
        std::vector<float> zeros;
        const float* m = have ? all_m.data() + e.offset : (zeros.assign(n, 0.f), zeros.data());
        w.bytes(m, sizeof(float) * n);
        const float* v = have ? all_v.data() + e.offset : zeros.data();
        w.bytes(v, sizeof(float) * n);
      }
    }
    w.bytes(kEndMarker, sizeof(kEndMarker));
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) throw std::runtime_error("flush failed");
  } catch (const std::exception& ex) {
    std::fclose(f);
    std::error_code ec;
    fs::remove(tmp, ec);
    throw std::runtime_error("checkpoint '" + path + "': " + ex.what());
  }
  if (std::fclose(f) != 0) throw std::runtime_error("checkpoint '" + path + "': close failed");
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("checkpoint '" + path + "': rename failed: " + ec.message());
  }
}

int64_t load_checkpoint(const std::string& path, ParameterBuffer& params, Adam* adam) {
  std::ifstream in(path, std::ios::binary);
  Reader r(in, path);
  if (!in) r.fail("cannot open");
  char magic[8];
  r.bytes(magic, sizeof(magic), "magic");
  if (std::memcmp(magic, kCheckpointMagic, sizeof(magic)) != 0)
    r.fail("wrong magic (not a gdp nn checkpoint)");
  const uint32_t version = r.pod<uint32_t>("version");
  if (version != kCheckpointVersion)
    r.fail("unsupported version " + std::to_string(version) + " (this build reads version " +
           std::to_string(kCheckpointVersion) + ")");
  const uint32_t flags = r.pod<uint32_t>("flags");
  const int64_t user_step = r.pod<int64_t>("user step");
  const uint64_t count = r.pod<uint64_t>("parameter count");
  if (count != static_cast<uint64_t>(params.count()))
    r.fail("has " + std::to_string(count) + " parameters, the model has " +
           std::to_string(params.count()));
  // Read everything into staging first so a bad file leaves the model untouched.
  std::map<std::string, std::vector<float>> staged;
  std::vector<const ParameterBuffer::Entry*> order;
  for (uint64_t k = 0; k < count; ++k) {
    const uint32_t len = r.pod<uint32_t>("name length");
    if (len > 4096) r.fail("implausible name length " + std::to_string(len));
    std::string name(len, '\0');
    r.bytes(name.data(), len, "name");
    const auto* e = params.find(name);
    if (!e) r.fail("parameter '" + name + "' is not in the model");
    if (staged.count(name)) r.fail("parameter '" + name + "' appears twice");
    const uint32_t ndim = r.pod<uint32_t>("rank");
    if (ndim > 16) r.fail("implausible rank for '" + name + "'");
    Shape shape(ndim);
    for (auto& d : shape) d = r.pod<int64_t>("dims");
    if (shape != e->shape)
      r.fail("parameter '" + name + "' has shape " + shape_str(shape) + " in the file, " +
             shape_str(e->shape) + " in the model");
    std::vector<float> data(shape_numel(shape));
    r.bytes(data.data(), sizeof(float) * data.size(), "parameter data");
    staged[name] = std::move(data);
    order.push_back(e);
  }
  const bool has_adam = flags & kFlagHasAdam;
  if (adam && !has_adam) r.fail("has no optimizer state but one was requested");
  int64_t adam_steps = 0;
  std::vector<float> m, v;
  if (has_adam) {
    adam_steps = r.pod<int64_t>("adam step");
    if (adam_steps < 0) r.fail("negative adam step count " + std::to_string(adam_steps));
    for (int i = 0; i < 5; ++i) r.pod<double>("adam config");
    r.pod<uint8_t>("adam config");
    m.assign(params.size(), 0.f);
    v.assign(params.size(), 0.f);
    for (const auto* e : order) {
      const int64_t n = shape_numel(e->shape);
      r.bytes(m.data() + e->offset, sizeof(float) * n, "adam m");
      r.bytes(v.data() + e->offset, sizeof(float) * n, "adam v");
    }
  }
  char end[8];
  r.bytes(end, sizeof(end), "end marker");
  if (std::memcmp(end, kEndMarker, sizeof(end)) != 0) r.fail("corrupt end marker");
  // Commit (through a host copy, so the buffer may live on any device).
  std::vector<float> values = params.values().to_vector();
  for (const auto& [name, data] : staged)
    std::memcpy(values.data() + params.find(name)->offset, data.data(),
                sizeof(float) * data.size());
  params.values().copy_from(Tensor::from_vector({params.size()}, values));
  if (adam) adam->set_state(std::move(m), std::move(v), adam_steps);
  return user_step;
}

}  // namespace gdp::nn
