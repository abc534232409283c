// The simulator's event calendars. Each source (a device, a directed link) has at most one
// pending event; the next event is the earliest, ties to the lower source index, so that
// simultaneous events are processed in a fixed order: devices by index, then links by id.
//
// EventTree: a tournament tree over the sources. Each node holds the winning (time, source)
// of its subtree, so the next event is the root and rescheduling a source is one walk to the
// root with one sibling load and one integer comparison per level: times are non-negative
// doubles, whose bit patterns order like the values. Ties go to the left subtree, i.e. the
// lower source index.
#pragma once

#include <emmintrin.h>

#include <algorithm>
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
  // (Always inlined: it runs twice per op in the simulator's loop.)
  __attribute__((always_inline)) void set(int32_t s, double t) {
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

// ScanCalendar: the same order over few sources as a plain array of times whose earliest is
// cached; set() keeps the cache unless it delays the cached source, and the next query
// rescans with SSE2 (two times per instruction; eight unrolled when there are at most eight).
// An event costs one rescan instead of two tree walks of data-dependent loads.
class ScanCalendar {
 public:
  static constexpr double kNone = EventTree::kNone;

  void init(int32_t num_sources) {
    // Padded with kNone to an even length, or to eight for the unrolled scan.
    const int32_t n = num_sources <= 8 ? 8 : (num_sources + 1) / 2 * 2;
    t_.assign(static_cast<size_t>(n), kNone);
    clear();
  }
  void clear() {
    std::fill(t_.begin(), t_.end(), kNone);
    min_t_ = kNone;
    min_s_ = 0;
    valid_ = true;
  }
  double top_time() {
    if (!valid_) rescan();
    return min_t_;
  }
  int32_t top_source() {
    if (!valid_) rescan();
    return min_s_;
  }
  __attribute__((always_inline)) void set(int32_t s, double t) {
    t_[static_cast<size_t>(s)] = t;
    if (!valid_) return;
    if (t < min_t_ || (t == min_t_ && s < min_s_)) {
      min_t_ = t;
      min_s_ = s;
    } else if (s == min_s_) {
      valid_ = false;  // the earliest source moved later
    }
  }

 private:
  // The earliest time, then its first source. Times are non-negative or +inf (never NaN), so
  // minpd and == order them exactly. (A scalar branch-free tournament measured slower.)
  void rescan() {
    const double* t = t_.data();
    const int32_t n = static_cast<int32_t>(t_.size());
    __m128d m;
    if (n == 8) {
      const __m128d a = _mm_min_pd(_mm_loadu_pd(t), _mm_loadu_pd(t + 2));
      const __m128d b = _mm_min_pd(_mm_loadu_pd(t + 4), _mm_loadu_pd(t + 6));
      m = _mm_min_pd(a, b);
    } else {
      m = _mm_set1_pd(kNone);
      for (int32_t s = 0; s < n; s += 2) m = _mm_min_pd(m, _mm_loadu_pd(t + s));
    }
    m = _mm_min_pd(m, _mm_unpackhi_pd(m, m));
    min_t_ = _mm_cvtsd_f64(m);
    m = _mm_unpacklo_pd(m, m);
    if (n == 8) {
      const int mask = _mm_movemask_pd(_mm_cmpeq_pd(_mm_loadu_pd(t), m)) |
                       _mm_movemask_pd(_mm_cmpeq_pd(_mm_loadu_pd(t + 2), m)) << 2 |
                       _mm_movemask_pd(_mm_cmpeq_pd(_mm_loadu_pd(t + 4), m)) << 4 |
                       _mm_movemask_pd(_mm_cmpeq_pd(_mm_loadu_pd(t + 6), m)) << 6;
      min_s_ = mask ? std::countr_zero(static_cast<unsigned>(mask)) : 0;
    } else {
      min_s_ = 0;
      for (int32_t s = 0; s < n; s += 2) {
        const int mask = _mm_movemask_pd(_mm_cmpeq_pd(_mm_loadu_pd(t + s), m));
        if (mask) {
          min_s_ = s + (mask & 1 ? 0 : 1);
          break;
        }
      }
    }
    valid_ = true;
  }
  std::vector<double> t_;  // (padded sources) pending event time, kNone when idle
  double min_t_ = kNone;
  int32_t min_s_ = 0;
  bool valid_ = true;
};

// Calendar: a ScanCalendar for up to `scan_max` sources (the devices of a machine), an
// EventTree beyond.
class Calendar {
 public:
  static constexpr double kNone = EventTree::kNone;
  void init(int32_t num_sources, int32_t scan_max) {
    scan_ = num_sources <= scan_max;
    if (scan_)
      scan_cal_.init(num_sources);
    else
      tree_.init(num_sources);
  }
  void clear() { scan_ ? scan_cal_.clear() : tree_.clear(); }
  double top_time() { return scan_ ? scan_cal_.top_time() : tree_.top_time(); }
  int32_t top_source() { return scan_ ? scan_cal_.top_source() : tree_.top_source(); }
  __attribute__((always_inline)) void set(int32_t s, double t) {
    if (scan_)
      scan_cal_.set(s, t);
    else
      tree_.set(s, t);
  }

 private:
  bool scan_ = true;
  ScanCalendar scan_cal_;
  EventTree tree_;
};

}  // namespace gdp
