// A binary min-heap over a vector whose storage is kept between uses (clear() keeps the
// capacity), so that the simulator's event and ready queues allocate nothing once warm.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace gdp {

// Entry must provide `bool operator<(const Entry&) const` giving a strict total order
// (ties broken inside the entry), so the pop order does not depend on insertion order.
template <class Entry>
class MinHeap {
 public:
  void reserve(size_t n) { a_.reserve(n); }
  void clear() { a_.clear(); }
  bool empty() const { return a_.empty(); }
  size_t size() const { return a_.size(); }
  const Entry& top() const { return a_.front(); }

  void push(const Entry& e) {
    size_t i = a_.size();
    a_.push_back(e);
    while (i > 0) {
      size_t parent = (i - 1) / 2;
      if (!(e < a_[parent])) break;
      a_[i] = a_[parent];
      i = parent;
    }
    a_[i] = e;
  }

  Entry pop() {
    Entry out = a_.front();
    Entry last = a_.back();
    a_.pop_back();
    size_t n = a_.size();
    if (n > 0) {
      size_t i = 0;
      for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && a_[c + 1] < a_[c]) ++c;
        if (!(a_[c] < last)) break;
        a_[i] = a_[c];
        i = c;
      }
      a_[i] = last;
    }
    return out;
  }

 private:
  std::vector<Entry> a_;
};

}  // namespace gdp
