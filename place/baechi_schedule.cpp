// The ETF / SCT list scheduler behind m-ETF and m-SCT (place/baechi.h, list_schedule).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "place/baechi.h"
#include "place/baechi_detail.h"

namespace gdp::place::baechi {

using namespace detail;

// The ETF / SCT list scheduler.
//
// ETF (Hwang et al. 1989): repeatedly start the (ready op, device) pair with the earliest
// start time max(device free, data arrival), data arrival = producer end + uncontended
// transfer of the tensor from the producer's device, over the devices where the op fits by
// the memory account (its group's device once pinned). An op's earliest start only grows
// (device free times grow, candidates shrink), so a lazy priority queue keyed by the last
// value computed (a lower bound) pops an op, recomputes and queues it again when it grew;
// ties by op index, then lowest device. The few events that can lower a value re-queue the
// ops concerned: memory freed on a device (dynamic account; ops are noted on the devices
// where they did not fit), a group pinned (its ready members), a wait ended (SCT). An op
// that fits nowhere waits for memory to be freed; when no op can start, the first such op
// is placed anyway on its group's device or the least-loaded one (counted over memory).
//
// SCT (Hanen & Munier, as Baechi's m-SCT): a device whose last op i has an unplaced
// favourite child f that is ready (all parents ended) by the time the device would start
// another op j, and for which this device is among f's earliest-start devices, waits for f:
// j may start there only once it is urgent (it could start no earlier on any device:
// Baechi's urgent_ts, here over all devices regardless of memory so that it only grows).
// A child prefers its favourite parent's device among equally early ones.

namespace {

struct Entry {
  double key;
  int32_t op;
  bool operator>(const Entry& o) const { return key != o.key ? key > o.key : op > o.op; }
};

class ListScheduler {
 public:
  ListScheduler(const Graph& g, const CostView& cv, const Groups& groups,
                const std::vector<int32_t>* favourite, MemoryMode mode)
      : g_(g),
        cv_(cv),
        groups_(groups),
        fav_(favourite),
        n_(g.num_ops()),
        D_(cv.num_devices()),
        tensors_(make_tensors(g)),
        mem_(g, cv, groups, tensors_, mode) {
    dev_.assign(n_, kNone);
    end_.assign(n_, 0);
    ready_time_.assign(n_, 0);
    remaining_.assign(n_, 0);
    done_.assign(n_, 0);
    free_.assign(D_, 0);
    last_.assign(D_, kNone);
    arr_.assign(D_, 0);
    mem_blocked_.resize(D_);
    key_.assign(n_, kInf);
    listed_.assign(static_cast<size_t>(n_) * D_, 0);
    raw_.assign(D_, 0);
    need_.assign(D_, 0);
    waits_.assign(D_, 0);
    blocked_on_.resize(D_);
    mem_blocked_min_.assign(D_, std::numeric_limits<int64_t>::max());
    for (int32_t i = 0; i < n_; ++i)
      remaining_[i] = static_cast<int32_t>(g.in_ptr()[i + 1] - g.in_ptr()[i]);
    if (fav_) {
      fav_parent_.assign(n_, kNone);
      for (int32_t i = 0; i < n_; ++i)
        if ((*fav_)[i] != kNone) fav_parent_[(*fav_)[i]] = i;
      status_.resize(D_);
      blocked_f_.assign(D_, kNone);
      farr_.assign(D_, 0);
    }
  }

  Plan run() {
    for (int32_t i = 0; i < n_; ++i)
      if (remaining_[i] == 0) push(i);
    int64_t scheduled = 0;
    while (scheduled < n_) {
      if (pq_.empty()) {
        // Every ready op waits for memory that no placement will free: place the first
        // anyway, on its group's device or the least-loaded one.
        if (deferred_.empty()) throw std::logic_error("baechi: list scheduler is stuck");
        const int32_t j = *deferred_.begin();
        deferred_.erase(deferred_.begin());
        if (done_[j]) continue;
        Choice c;
        c.device = mem_.pinned(j) != kNone ? mem_.pinned(j) : mem_.least_loaded();
        arrivals(j, arr_);
        c.start = std::max(free_[c.device], arr_[c.device]);
        c.over = true;
        schedule(j, c);
        ++scheduled;
        continue;
      }
      const Entry top = pq_.top();
      pq_.pop();
      if (done_[top.op] || top.key != key_[top.op]) continue;  // placed, or queued lower
      key_[top.op] = kInf;
      const Choice c = evaluate(top.op);
      if (c.device == kNone) {
        deferred_.insert(top.op);
        continue;
      }
      if (c.start > top.key) {
        key_[top.op] = c.start;
        pq_.push({c.start, top.op});
        continue;
      }
      deferred_.erase(top.op);
      schedule(top.op, c);
      ++scheduled;
    }
    Plan plan;
    plan.placement.device = dev_;
    plan.makespan_s = makespan_;
    plan.over_memory = over_;
    plan.memory_fraction = mem_.max_fraction();
    return plan;
  }

 private:
  struct Choice {
    double start = std::numeric_limits<double>::infinity();
    int32_t device = kNone;  // kNone: fits nowhere now (deferred)
    bool over = false;
  };
  struct Status {
    int64_t version = -1;
    int32_t f = kNone;  // the favourite child the device waits for; kNone: no wait
    double ready = 0;   // when f became ready
  };

  // Data arrival of op j on every device into `arr`.
  void arrivals(int32_t j, std::vector<double>& arr) const {
    std::fill(arr.begin(), arr.end(), 0.0);
    for (int64_t k = g_.in_ptr()[j]; k < g_.in_ptr()[j + 1]; ++k) {
      const Edge& e = g_.edges()[g_.in_edge_ids()[k]];
      const int32_t sd = dev_[e.src];
      const int64_t bytes = tensors_.bytes[tensors_.of(e)];
      for (int32_t d = 0; d < D_; ++d)
        arr[d] = std::max(arr[d], end_[e.src] + cv_.transfer_s(bytes, sd, d));
    }
  }

  // The devices op j may go to now: its group's device once pinned, else those where it fits
  // by the memory account; the others (where it does not fit) in nofit_ with need_.
  void candidates(int32_t j, std::vector<int32_t>& out, bool for_status = false) {
    out.clear();
    if (!for_status) nofit_.clear();
    const int32_t pd = mem_.pinned(j);
    for (int32_t d = 0; d < D_; ++d) {
      if (pd != kNone && d != pd) continue;
      const int64_t need = mem_.need(j, d, dev_);
      if (need <= cv_.capacity_bytes(d) - mem_.used(d)) {
        out.push_back(d);
      } else if (!for_status) {
        nofit_.push_back(d);
        need_[d] = need;
      }
    }
  }

  // Whether device d waits for a favourite child, at the current state.
  const Status& status(int32_t d) {
    Status& s = status_[d];
    if (s.version == version_) return s;
    s.version = version_;
    s.f = kNone;
    const int32_t i = last_[d];
    const int32_t f = i == kNone ? kNone : (*fav_)[i];
    if (f == kNone || done_[f] || remaining_[f] > 0) return s;
    candidates(f, fcand_, true);
    arrivals(f, farr_);
    double best = std::numeric_limits<double>::infinity(), mine = best;
    for (int32_t k : fcand_) {
      const double t = std::max(free_[k], farr_[k]);
      best = std::min(best, t);
      if (k == d) mine = t;
    }
    if (mine <= best && mine < std::numeric_limits<double>::infinity()) {
      s.f = f;
      s.ready = ready_time_[f];
    }
    return s;
  }

  Choice evaluate(int32_t j) {
    Choice c;
    candidates(j, cand_);
    arrivals(j, arr_);
    if (!cand_.empty()) {
      const int32_t pd = mem_.pinned(j);
      const int32_t pref = fav_ && fav_parent_[j] != kNone ? dev_[fav_parent_[j]] : kNone;
      double urgent = -1;
      for (int32_t d : cand_) {
        double s = std::max(free_[d], arr_[d]);
        raw_[d] = s;
        waits_[d] = 0;
        if (fav_ && pd == kNone) {
          const Status& st = status(d);
          if (st.f != kNone && st.f != j && st.ready <= s) {
            if (urgent < 0) {
              urgent = 0;
              for (int32_t k = 0; k < D_; ++k)
                urgent = std::max(urgent, std::max(free_[k], arr_[k]));
            }
            if (urgent > s) {  // j is not urgent: d waits for f
              s = urgent;
              waits_[d] = 1;
            }
          }
        }
        if (s < c.start || (s == c.start && d == pref && c.device != pref)) {
          c.start = s;
          c.device = d;
        }
      }
      // Note j where a wait holds it back (its value would drop when the wait ends).
      for (int32_t d : cand_)
        if (waits_[d] && raw_[d] < c.start) {
          note(blocked_on_[d], j, d, 1);
          blocked_f_[d] = status_[d].f;
        }
    }
    // Note j where memory holds it back: when memory is freed there it may start earlier.
    for (int32_t d : nofit_) {
      if (c.device != kNone && std::max(free_[d], arr_[d]) >= c.start) continue;
      note(mem_blocked_[d], j, d, 2);
      mem_blocked_min_[d] = std::min(mem_blocked_min_[d], need_[d]);
    }
    return c;
  }

  // Adds j to a device's list once (`bit`: which list).
  void note(std::vector<int32_t>& list, int32_t j, int32_t d, uint8_t bit) {
    uint8_t& m = listed_[static_cast<size_t>(j) * D_ + d];
    if (m & bit) return;
    m |= bit;
    list.push_back(j);
  }

  // (Re)computes j's value; queues it when lower than the value it is queued with.
  void push(int32_t j) {
    const Choice c = evaluate(j);
    if (c.device == kNone) {
      deferred_.insert(j);
      return;
    }
    deferred_.erase(j);
    if (c.start < key_[j]) {
      key_[j] = c.start;
      pq_.push({c.start, j});
    }
  }

  void repush(std::vector<int32_t>& ops, int32_t d, uint8_t bit) {
    std::vector<int32_t> list;
    list.swap(ops);
    for (int32_t o : list) listed_[static_cast<size_t>(o) * D_ + d] &= static_cast<uint8_t>(~bit);
    for (int32_t o : list)
      if (!done_[o] && remaining_[o] == 0) push(o);
  }

  void schedule(int32_t j, const Choice& c) {
    const int32_t d = c.device;
    const bool first_of_group = mem_.pinned(j) == kNone;
    freed_.clear();
    mem_.place(j, d, dev_, &freed_);
    dev_[j] = d;
    end_[j] = c.start + cv_.op_time_s(j, d);
    free_[d] = end_[j];
    last_[d] = j;
    done_[j] = 1;
    makespan_ = std::max(makespan_, end_[j]);
    if (c.over) ++over_;
    ++version_;
    // Memory freed: the ops that did not fit there may now.
    std::sort(freed_.begin(), freed_.end());
    freed_.erase(std::unique(freed_.begin(), freed_.end()), freed_.end());
    for (int32_t k : freed_) {
      if (mem_blocked_[k].empty() || mem_blocked_min_[k] > cv_.capacity_bytes(k) - mem_.used(k))
        continue;
      mem_blocked_min_[k] = std::numeric_limits<int64_t>::max();
      repush(mem_blocked_[k], k, 2);
    }
    if (fav_) {
      // Waits that ended (or changed) lower the values of the ops they held back.
      for (int32_t k = 0; k < D_; ++k) {
        if (blocked_on_[k].empty()) continue;
        if (status(k).f == blocked_f_[k]) continue;
        repush(blocked_on_[k], k, 1);
      }
    }
    if (first_of_group) {
      // Ready members of a newly pinned group: their value may have dropped.
      const int32_t grp = groups_.group_of[j];
      for (int64_t k = groups_.ptr[grp]; k < groups_.ptr[grp + 1]; ++k) {
        const int32_t o = groups_.ops[k];
        if (!done_[o] && remaining_[o] == 0) push(o);
      }
    }
    for (int64_t k = g_.out_ptr()[j]; k < g_.out_ptr()[j + 1]; ++k) {
      const int32_t o = g_.edges()[g_.out_edge_ids()[k]].dst;
      ready_time_[o] = std::max(ready_time_[o], end_[j]);
      if (--remaining_[o] == 0) push(o);
    }
  }

  const Graph& g_;
  const CostView& cv_;
  const Groups& groups_;
  const std::vector<int32_t>* fav_;
  int32_t n_, D_;
  Tensors tensors_;
  Memory mem_;
  std::vector<int32_t> dev_, remaining_, last_, fav_parent_, cand_, fcand_, nofit_, blocked_f_,
      freed_;
  std::vector<double> end_, ready_time_, free_, arr_, farr_, raw_, key_;
  std::vector<int64_t> need_;
  std::vector<uint8_t> done_, waits_, listed_;  // listed_: (ops x devices) bit 1 wait, 2 memory
  std::vector<Status> status_;
  std::vector<std::vector<int32_t>> blocked_on_, mem_blocked_;
  std::vector<int64_t> mem_blocked_min_;
  std::set<int32_t> deferred_;  // ready ops that fit nowhere now, by index
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> pq_;
  int64_t version_ = 0, over_ = 0;
  double makespan_ = 0;
};

}  // namespace

Plan list_schedule(const Graph& g, const CostView& cv, const Groups& groups,
                   const std::vector<int32_t>* favourite, MemoryMode mode) {
  return ListScheduler(g, cv, groups, favourite, mode).run();
}

}  // namespace gdp::place::baechi
