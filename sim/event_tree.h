// The simulator's event calendar: a tournament tree over a fixed set of event sources (each
// device and each directed link has at most one pending event). Each node holds the winning
// (time, source) of its subtree, so the next event is the root and rescheduling a source is
// one walk to the root with one sibling load and one integer comparison per level: times
// are non-negative doubles, whose bit patterns order like the values. Ties go to the left
// subtree, i.e. the lower source index, so simultaneous events are processed in a fixed
// order: devices by index, then links by id.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

namespace gdp {

class EventTree {
 public:
  static constexpr double kNone = std::numeric_limits<double>::infinity();

  void init(int32_t num_sources) {
    m_ = 1;
    while (m_ < num_sources) m_ *= 2;
    key_.assign(2 * static_cast<size_t>(m_), kNoneBits);
    src_.assign(2 * static_cast<size_t>(m_), 0);
    clear();
  }
  // All sources idle. O(sources).
  void clear() {
    for (int32_t s = 0; s < m_; ++s) {
      key_[m_ + s] = kNoneBits;
      src_[m_ + s] = s;
    }
    for (int32_t i = m_ - 1; i >= 1; --i) {
      key_[i] = key_[2 * i];
      src_[i] = src_[2 * i];
    }
  }
  bool empty() const { return key_[1] == kNoneBits; }
  int32_t top_source() const { return src_[1]; }
  double top_time() const { return std::bit_cast<double>(key_[1]); }
  // Sets (t >= 0) or cancels (t = kNone) the pending event of source s.
  void set(int32_t s, double t) {
    uint64_t* const key = key_.data();
    int32_t* const srcs = src_.data();
    uint64_t k = std::bit_cast<uint64_t>(t);
    int32_t src = s;
    uint32_t i = static_cast<uint32_t>(m_ + s);
    key[i] = k;
    srcs[i] = src;
    while (i > 1) {
      const uint32_t sib = i ^ 1u;
      // The sibling wins when strictly earlier, or equal and on the left (i odd).
      const uint64_t ks = key[sib];
      const int32_t ss = srcs[sib];
      const bool sib_wins = ks < k + (i & 1u);
      k = sib_wins ? ks : k;
      src = sib_wins ? ss : src;
      i >>= 1;
      key[i] = k;
      srcs[i] = src;
    }
  }

 private:
  static constexpr uint64_t kNoneBits = 0x7FF0000000000000ull;  // bits of +infinity
  int32_t m_ = 1;                                               // leaves (power of two)
  std::vector<uint64_t> key_;  // (2m) time bits of the subtree's winner; root at 1
  std::vector<int32_t> src_;   // (2m) its source; leaves at m + s
};

}  // namespace gdp
