// The project's one seeded random stream (generators, placers, nn init, dropout, sampling):
// the same seed gives the same numbers on every platform. The engine is std::mt19937_64,
// whose output the standard fixes; the mappings to integers, reals and normals are our own,
// because std distributions differ between standard libraries.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace gdp {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : gen_(seed) {}

  void reseed(uint64_t seed) {
    gen_.seed(seed);
    has_spare_ = false;
  }

  uint64_t next_u64() { return gen_(); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n); 0 when n == 0. Multiply-shift (Lemire) without rejection: the
  // bias is below n / 2^64.
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(gen_()) * n) >> 64);
  }
  // Uniform integer in [lo, hi], lo <= hi.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    const unsigned __int128 span = static_cast<unsigned __int128>(hi - lo) + 1;
    return lo + static_cast<int64_t>((static_cast<unsigned __int128>(gen_()) * span) >> 64);
  }
  bool chance(double p) { return uniform() < p; }
  // An index with probability proportional to its (non-negative) weight.
  size_t weighted(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }
  template <class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[static_cast<size_t>(uniform_int(0, static_cast<int64_t>(xs.size()) - 1))];
  }
  // Standard normal (Box-Muller, the second value kept for the next call).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(6.283185307179586 * u2);
    has_spare_ = true;
    return r * std::cos(6.283185307179586 * u2);
  }
  double normal(double mean, double stddev) { return mean + stddev * normal(); }

  // The whole state as text (checkpoints: a resumed run continues the same stream).
  std::string state() const {
    std::ostringstream os;
    os.precision(17);
    os << gen_ << ' ' << (has_spare_ ? 1 : 0) << ' ' << std::hexfloat << spare_;
    return os.str();
  }
  // Restores a state() string; false (and the stream unchanged) when it is not one.
  bool set_state(const std::string& s) {
    std::istringstream is(s);
    std::mt19937_64 g;
    int spare_flag = 0;
    std::string spare_text;
    if (!(is >> g >> spare_flag >> spare_text) || (spare_flag != 0 && spare_flag != 1))
      return false;
    char* end = nullptr;
    const double spare = std::strtod(spare_text.c_str(), &end);
    if (end == spare_text.c_str() || *end != '\0') return false;
    gen_ = g;
    has_spare_ = spare_flag == 1;
    spare_ = spare;
    return true;
  }

 private:
  std::mt19937_64 gen_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace gdp
