// Baechi's shared machinery: groups, memory account, m-TOPO, the ETF/SCT list scheduler and
// m-SCT's favourite-child LP (GLPK).
#include "place/baechi.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <limits>
#include <mutex>
#include <queue>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace gdp::place::baechi {

namespace {

constexpr int32_t kNone = -1;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Dsu {
  std::vector<int32_t> parent;
  explicit Dsu(int32_t n) : parent(n) {
    for (int32_t i = 0; i < n; ++i) parent[i] = i;
  }
  int32_t find(int32_t a) {
    while (parent[a] != a) a = parent[a] = parent[parent[a]];
    return a;
  }
};

int64_t saturating_add(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Groups

Groups make_groups(const Graph& g, const CostView& cv, bool preprocess) {
  const int32_t n = g.num_ops(), D = cv.num_devices();
  Groups out;
  Dsu dsu(n);
  std::vector<int64_t> mem(n);
  for (int32_t i = 0; i < n; ++i) mem[i] = cv.op_memory_bytes(i);
  auto unite = [&](int32_t a, int32_t b) {
    a = dsu.find(a);
    b = dsu.find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    dsu.parent[b] = a;
    mem[a] += mem[b];
  };
  // Colocation groups: always.
  std::unordered_map<std::string_view, int32_t> first;
  for (int32_t i = 0; i < n; ++i) {
    const std::string& c = g.op(i).colocation;
    if (c.empty()) continue;
    auto [it, inserted] = first.emplace(c, i);
    if (!inserted) unite(i, it->second);
  }
  // Preprocessing merges, capped so that no merged group outgrows a quarter of the smaller of
  // the smallest device and the even share of memory.
  int64_t min_cap = std::numeric_limits<int64_t>::max();
  for (int32_t d = 0; d < D; ++d) min_cap = std::min(min_cap, cv.capacity_bytes(d));
  out.max_group_bytes = std::min(min_cap, cv.total_memory_bytes() / std::max(1, D)) / 4;
  auto merge = [&](int32_t a, int32_t b, int64_t* counter) {
    const int32_t ra = dsu.find(a), rb = dsu.find(b);
    if (ra == rb) return;
    if (mem[ra] + mem[rb] > out.max_group_bytes) {
      ++out.merges_skipped;
      return;
    }
    unite(ra, rb);
    ++*counter;
  };
  if (preprocess) {
    // A backward op "gradients/<fwd>_grad/..." with its forward op <fwd>.
    constexpr std::string_view kPrefix = "gradients/", kGrad = "_grad/";
    for (int32_t i = 0; i < n; ++i) {
      const std::string& name = g.op(i).name;
      if (name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
      const std::string rest = name.substr(kPrefix.size());
      for (size_t pos = rest.rfind(kGrad); pos != std::string::npos && pos > 0;
           pos = rest.rfind(kGrad, pos - 1)) {
        const int32_t f = g.find_op(rest.substr(0, pos));
        if (f >= 0) {
          merge(i, f, &out.merges_backward);
          break;
        }
      }
    }
    // An update op with the ops holding weights that feed it (the variable it updates).
    for (int32_t i = 0; i < n; ++i) {
      if (g.op(i).phase != Phase::update) continue;
      for (int64_t k = g.in_ptr()[i]; k < g.in_ptr()[i + 1]; ++k) {
        const int32_t src = g.edges()[g.in_edge_ids()[k]].src;
        if (g.op(src).resident_bytes() > 0) merge(i, src, &out.merges_update);
      }
    }
    // Chains: u's only consumer v has u as its only producer.
    for (int32_t u = 0; u < n; ++u) {
      int32_t v = kNone;
      bool one = true;
      for (int64_t k = g.out_ptr()[u]; k < g.out_ptr()[u + 1] && one; ++k) {
        const int32_t dst = g.edges()[g.out_edge_ids()[k]].dst;
        if (v == kNone) v = dst;
        one = dst == v;
      }
      if (v == kNone || !one) continue;
      for (int64_t k = g.in_ptr()[v]; k < g.in_ptr()[v + 1] && one; ++k)
        one = g.edges()[g.in_edge_ids()[k]].src == u;
      if (one) merge(u, v, &out.merges_chain);
    }
  }
  // Number the groups in the topological order of their first op.
  out.group_of.assign(n, kNone);
  std::vector<int32_t> id_of_root(n, kNone);
  int32_t num = 0;
  for (int32_t op : g.topo_order()) {
    const int32_t r = dsu.find(op);
    if (id_of_root[r] == kNone) {
      id_of_root[r] = num++;
      out.memory.push_back(mem[r]);
      out.resident.push_back(0);
    }
    out.group_of[op] = id_of_root[r];
  }
  for (int32_t i = 0; i < n; ++i) out.resident[out.group_of[i]] += g.op(i).resident_bytes();
  out.ptr.assign(num + 1, 0);
  for (int32_t i = 0; i < n; ++i) ++out.ptr[out.group_of[i] + 1];
  for (int32_t k = 0; k < num; ++k) out.ptr[k + 1] += out.ptr[k];
  out.ops.resize(n);
  std::vector<int64_t> fill(out.ptr.begin(), out.ptr.end() - 1);
  for (int32_t op : g.topo_order()) out.ops[fill[out.group_of[op]]++] = op;
  return out;
}

Tensors make_tensors(const Graph& g) {
  Tensors t;
  const int32_t n = g.num_ops();
  t.base.assign(n + 1, 0);
  for (int32_t i = 0; i < n; ++i)
    t.base[i + 1] = t.base[i] + static_cast<int64_t>(g.op(i).outputs.size());
  t.bytes.assign(t.base[n], 0);
  for (const Edge& e : g.edges()) {  // output indices are valid in a finalized graph
    int64_t& b = t.bytes[t.of(e)];
    b = std::max(b, e.bytes);
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// Memory

Memory::Memory(const Graph& g, const CostView& cv, const Groups& groups, const Tensors& tensors,
               MemoryMode mode)
    : g_(&g), cv_(&cv), groups_(&groups), tensors_(&tensors), mode_(mode) {
  const int32_t D = cv.num_devices();
  pin_.assign(groups.num_groups(), kNone);
  used_.assign(D, 0);
  peak_.assign(D, 0);
  group_used_.assign(D, 0);
  if (mode != MemoryMode::topo) received_.assign(static_cast<size_t>(tensors.bytes.size()) * D, 0);
  if (mode == MemoryMode::dynamic) {
    unconsumed_.resize(g.num_ops());
    for (int32_t i = 0; i < g.num_ops(); ++i)
      unconsumed_[i] = static_cast<int32_t>(g.out_ptr()[i + 1] - g.out_ptr()[i]);
  }
}

void Memory::add(int32_t d, int64_t bytes) {
  used_[d] = saturating_add(used_[d], bytes);
  peak_[d] = std::max(peak_[d], used_[d]);
}

int64_t Memory::need(int32_t op, int32_t d, const std::vector<int32_t>& device_of) const {
  const int32_t grp = groups_->group_of[op];
  const bool pinned = pin_[grp] != kNone;
  int64_t n = 0;
  if (mode_ == MemoryMode::dynamic) {
    const Op& o = g_->op(op);
    n = saturating_add(pinned ? 0 : groups_->resident[grp],
                       saturating_add(o.output_bytes(), o.temp_bytes));
  } else {
    n = pinned ? 0 : groups_->memory[grp];
    if (mode_ == MemoryMode::topo) return n;
  }
  const int32_t D = cv_->num_devices();
  seen_.clear();
  for (int64_t k = g_->in_ptr()[op]; k < g_->in_ptr()[op + 1]; ++k) {
    const Edge& e = g_->edges()[g_->in_edge_ids()[k]];
    const int32_t sd = device_of[e.src];
    if (sd == kNone || sd == d) continue;
    const int64_t t = tensors_->of(e);
    if (received_[static_cast<size_t>(t) * D + d]) continue;
    if (std::find(seen_.begin(), seen_.end(), t) != seen_.end()) continue;
    seen_.push_back(t);
    n = saturating_add(n, tensors_->bytes[t]);
  }
  return n;
}

void Memory::place(int32_t op, int32_t d, const std::vector<int32_t>& device_of,
                   std::vector<int32_t>* freed) {
  const int32_t grp = groups_->group_of[op];
  if (pin_[grp] == kNone) {
    pin_[grp] = d;
    add(d, mode_ == MemoryMode::dynamic ? groups_->resident[grp] : groups_->memory[grp]);
    group_used_[d] = saturating_add(group_used_[d], groups_->memory[grp]);
  } else if (pin_[grp] != d) {
    throw std::logic_error("baechi: op placed away from its group's device");
  }
  if (mode_ == MemoryMode::topo) return;
  const int32_t D = cv_->num_devices();
  for (int64_t k = g_->in_ptr()[op]; k < g_->in_ptr()[op + 1]; ++k) {
    const Edge& e = g_->edges()[g_->in_edge_ids()[k]];
    const int32_t sd = device_of[e.src];
    if (sd == kNone || sd == d) continue;
    const int64_t t = tensors_->of(e);
    uint8_t& r = received_[static_cast<size_t>(t) * D + d];
    if (r) continue;
    r = 1;
    add(d, tensors_->bytes[t]);
  }
  if (mode_ != MemoryMode::dynamic) return;
  const Op& o = g_->op(op);
  add(d, o.output_bytes() + o.temp_bytes);  // the peak while it runs
  used_[d] -= o.temp_bytes;
  if (unconsumed_[op] == 0) used_[d] -= o.output_bytes();
  // Producers whose consumers are now all placed: their outputs and received copies go.
  for (int64_t k = g_->in_ptr()[op]; k < g_->in_ptr()[op + 1]; ++k) {
    const int32_t p = g_->edges()[g_->in_edge_ids()[k]].src;
    if (--unconsumed_[p] != 0) continue;
    const int32_t pd = device_of[p];
    used_[pd] -= g_->op(p).output_bytes();
    if (freed) freed->push_back(pd);
    for (int64_t t = tensors_->base[p]; t < tensors_->base[p + 1]; ++t)
      for (int32_t dd = 0; dd < D; ++dd) {
        uint8_t& r = received_[static_cast<size_t>(t) * D + dd];
        if (!r) continue;
        r = 0;
        used_[dd] -= tensors_->bytes[t];
        if (freed) freed->push_back(dd);
      }
  }
}

int32_t Memory::least_loaded() const {
  int32_t best = 0;
  for (int32_t d = 1; d < cv_->num_devices(); ++d)
    if (used_[d] < used_[best]) best = d;
  return best;
}

double Memory::max_fraction() const {
  double f = 0;
  for (int32_t d = 0; d < cv_->num_devices(); ++d) {
    const int64_t cap = cv_->capacity_bytes(d);
    if (cap == std::numeric_limits<int64_t>::max()) continue;
    f = std::max(f, static_cast<double>(peak_[d]) / static_cast<double>(cap));
  }
  return f;
}

// ---------------------------------------------------------------------------------------
// m-TOPO

Plan m_topo(const Graph& g, const CostView& cv, const Groups& groups, double slack,
            MemoryMode mode) {
  const int32_t n = g.num_ops(), D = cv.num_devices();
  const Tensors tensors = make_tensors(g);
  Memory mem(g, cv, groups, tensors, mode);
  int64_t total = 0, largest = 0;
  for (int64_t m : groups.memory) {
    total = saturating_add(total, m);
    largest = std::max(largest, m);
  }
  const double share_d =
      (1 + slack) * static_cast<double>(total) / D + static_cast<double>(largest);
  const int64_t share =
      share_d >= 9.0e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(share_d);
  Plan plan;
  std::vector<int32_t> device_of(n, kNone);
  int32_t cur = 0;
  for (int32_t op : g.topo_order()) {
    int32_t d = mem.pinned(op);
    if (d == kNone) {
      const int64_t gm = groups.memory[groups.group_of[op]];
      // Fill the current device up to the share (the last device: up to its capacity);
      // move on at the first group that does not fit, as Baechi does.
      while (true) {
        const bool last = cur == D - 1;
        const bool share_ok = last || mem.group_bytes(cur) <= share - gm;
        if (share_ok && mem.fits(op, cur, device_of)) {
          d = cur;
          break;
        }
        if (last) break;
        ++cur;
      }
      if (d == kNone) {  // the last device is full: any device with room, least used first
        for (int32_t k = 0; k < D; ++k)
          if (mem.fits(op, k, device_of) && (d == kNone || mem.used(k) < mem.used(d))) d = k;
      }
      if (d == kNone) {
        d = mem.least_loaded();
        ++plan.over_memory;
      }
    } else if (!mem.fits(op, d, device_of)) {
      ++plan.over_memory;
    }
    mem.place(op, d, device_of);
    device_of[op] = d;
  }
  std::vector<uint8_t> on(D, 0);
  for (int32_t d : device_of) on[d] = 1;
  const int devices_used = static_cast<int>(std::count(on.begin(), on.end(), 1));
  plan.placement.device = std::move(device_of);
  plan.memory_fraction = mem.max_fraction();
  char buf[128];
  std::snprintf(buf, sizeof buf,
                ", share %.3g GB per device (largest group %.3g GB), %d devices used",
                static_cast<double>(share) / 1e9, static_cast<double>(largest) / 1e9, devices_used);
  plan.extra = buf;
  return plan;
}

// ---------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------
// m-SCT's favourite children

namespace {

// Distinct (parent, child) pairs with the bytes of the distinct tensors between them.
struct Pair {
  int32_t src, dst;
  int64_t bytes;
  bool inter;  // the two ops are in different groups (edges inside a group cost nothing)
};

std::vector<Pair> make_pairs(const Graph& g, const Groups& groups) {
  const Tensors tensors = make_tensors(g);
  std::vector<Pair> pairs;
  std::vector<std::pair<int32_t, int32_t>> outs;  // (dst, src_output)
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    outs.clear();
    for (int64_t k = g.out_ptr()[i]; k < g.out_ptr()[i + 1]; ++k) {
      const Edge& e = g.edges()[g.out_edge_ids()[k]];
      outs.emplace_back(e.dst, e.src_output);
    }
    std::sort(outs.begin(), outs.end());
    for (size_t a = 0; a < outs.size();) {
      size_t b = a;
      int64_t bytes = 0;
      for (; b < outs.size() && outs[b].first == outs[a].first; ++b) {
        if (b > a && outs[b].second == outs[b - 1].second) continue;
        bytes += tensors.bytes[tensors.base[i] + outs[b].second];
      }
      const int32_t j = outs[a].first;
      pairs.push_back({i, j, bytes, groups.group_of[i] != groups.group_of[j]});
      a = b;
    }
  }
  return pairs;
}

}  // namespace

std::vector<int32_t> favourite_children_by_bytes(const Graph& g, const Groups& groups) {
  const int32_t n = g.num_ops();
  const std::vector<Pair> pairs = make_pairs(g, groups);
  std::vector<int64_t> first(n + 1, 0);
  for (const Pair& p : pairs) ++first[p.src + 1];
  for (int32_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<int32_t> child(n, kNone);
  std::vector<uint8_t> has_parent(n, 0);
  for (int32_t i : g.topo_order()) {
    int32_t best = kNone;
    int64_t best_bytes = -1;
    for (int64_t k = first[i]; k < first[i + 1]; ++k) {  // pairs of i, by child index
      const Pair& p = pairs[k];
      if (!p.inter || has_parent[p.dst]) continue;
      if (p.bytes > best_bytes) {
        best = p.dst;
        best_bytes = p.bytes;
      }
    }
    if (best != kNone) {
      child[i] = best;
      has_parent[best] = 1;
    }
  }
  return child;
}

namespace {

// GLPK reports an internal error by calling its error hook and, without one, aborting the
// process. This hook frees GLPK's environment (the problem object with it, as GLPK's manual
// prescribes) and jumps back to favourite_children, which then falls back like a failed LP.
// Only GLPK's C frames lie between, so no C++ destructor is skipped.
thread_local std::jmp_buf* glpk_escape = nullptr;

void glpk_error_hook(void*) {
  if (glpk_escape) {
    glp_free_env();
    std::longjmp(*glpk_escape, 1);
  }
}

struct LpOutcome {
  bool escaped = false;  // GLPK raised an internal error (its environment was freed)
  int rc = 0;            // glp_simplex's return code
  int status = 0;        // glp_get_status when rc == 0
  double objective = 0;
};

// min column n+1 (1-based: columns 1..n start times, n+1 makespan, the rest x in [0, 1]) s.t.
// row r >= lower[r-1], coefficients (ia, ja, ar) 1-based as GLPK takes them. Fills (*x)[c] for
// every column c on success. Only plain locals live across setjmp here.
LpOutcome solve_lp(int32_t n, int32_t cols, int32_t rows, const std::vector<double>& lower,
                   std::vector<int>& ia, std::vector<int>& ja, std::vector<double>& ar,
                   double time_limit_s, std::vector<double>* x) {
  // GLPK's environment is per thread only where it was built with thread-local storage;
  // one LP at a time keeps the evaluator's parallel cells safe either way.
  static std::mutex glpk_mutex;
  std::lock_guard<std::mutex> glpk_lock(glpk_mutex);
  LpOutcome out;
  std::jmp_buf escape;
  if (setjmp(escape) != 0) {
    glpk_escape = nullptr;
    glp_error_hook(nullptr, nullptr);
    LpOutcome failed;
    failed.escaped = true;
    return failed;
  }
  glpk_escape = &escape;
  glp_error_hook(glpk_error_hook, nullptr);
  glp_term_out(GLP_OFF);
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_cols(lp, cols);
  for (int32_t c = 1; c <= n + 1; ++c) glp_set_col_bnds(lp, c, GLP_LO, 0, 0);
  for (int32_t c = n + 2; c <= cols; ++c) glp_set_col_bnds(lp, c, GLP_DB, 0, 1);
  glp_set_obj_coef(lp, n + 1, 1);
  if (rows > 0) {
    glp_add_rows(lp, rows);
    for (int32_t r = 1; r <= rows; ++r) glp_set_row_bnds(lp, r, GLP_LO, lower[r - 1], 0);
    glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  parm.tm_lim = static_cast<int>(std::min(time_limit_s * 1000, 2.0e9));
  out.rc = glp_simplex(lp, &parm);
  out.status = out.rc == 0 ? glp_get_status(lp) : GLP_UNDEF;
  if (out.rc == 0 && out.status == GLP_OPT) {
    out.objective = glp_get_obj_val(lp);
    x->assign(static_cast<size_t>(cols) + 1, 0);
    for (int32_t c = 1; c <= cols; ++c) (*x)[c] = glp_get_col_prim(lp, c);
  }
  glp_delete_prob(lp);
  glpk_escape = nullptr;
  glp_error_hook(nullptr, nullptr);
  return out;
}

}  // namespace

Favourites favourite_children(const Graph& g, const CostView& cv, const Groups& groups,
                              int64_t lp_max_ops, double lp_time_limit_s, double threshold) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t n = g.num_ops();
  Favourites fav;
  auto fallback = [&](std::string why) {
    fav.child = favourite_children_by_bytes(g, groups);
    fav.from_lp = false;
    fav.why = std::move(why);
    fav.lp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return fav;
  };
  if (n > lp_max_ops)
    return fallback(std::to_string(n) + " ops > lp_max_ops " + std::to_string(lp_max_ops));

  const std::vector<Pair> pairs = make_pairs(g, groups);
  constexpr double kUs = 1e6;  // the LP in microseconds, as Baechi's, for GLPK's tolerances
  std::vector<int32_t> out_inter(n, 0), in_inter(n, 0), out_all(n, 0);
  for (const Pair& p : pairs) {
    ++out_all[p.src];
    if (p.inter) {
      ++out_inter[p.src];
      ++in_inter[p.dst];
    }
  }
  // Columns: s_i (1..n), w (n + 1), x of each inter-group pair (n + 2 ...).
  std::vector<int32_t> xcol(pairs.size(), 0);
  int32_t cols = n + 1;
  for (size_t k = 0; k < pairs.size(); ++k)
    if (pairs[k].inter) xcol[k] = ++cols;
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  int32_t rows = 0;
  auto add = [&](int r, int c, double v) {
    ia.push_back(r);
    ja.push_back(c);
    ar.push_back(v);
  };
  std::vector<double> lower;
  // s_j - s_i - c_ij x_ij >= p_i for every pair.
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Pair& p = pairs[k];
    ++rows;
    add(rows, p.dst + 1, 1);
    add(rows, p.src + 1, -1);
    if (p.inter) add(rows, xcol[k], -cv.mean_transfer_s(p.bytes) * kUs);
    lower.push_back(cv.mean_time_s(p.src) * kUs);
  }
  // w - s_i >= p_i for the sinks (the other ops are bounded through their children).
  for (int32_t i = 0; i < n; ++i) {
    if (out_all[i] > 0) continue;
    ++rows;
    add(rows, n + 1, 1);
    add(rows, i + 1, -1);
    lower.push_back(cv.mean_time_s(i) * kUs);
  }
  // At most one favourite child: sum of x over out-pairs >= outdeg - 1; one favourite parent.
  std::vector<std::vector<int32_t>> in_cols(n);
  std::vector<std::vector<int32_t>> out_cols(n);
  for (size_t k = 0; k < pairs.size(); ++k)
    if (pairs[k].inter) {
      out_cols[pairs[k].src].push_back(xcol[k]);
      in_cols[pairs[k].dst].push_back(xcol[k]);
    }
  for (auto* side : {&out_cols, &in_cols})
    for (int32_t i = 0; i < n; ++i) {
      const auto& cs = (*side)[i];
      if (cs.size() < 2) continue;
      ++rows;
      for (int32_t c : cs) add(rows, c, 1);
      lower.push_back(static_cast<double>(cs.size()) - 1);
    }

  std::vector<double> x;
  const LpOutcome lp = solve_lp(n, cols, rows, lower, ia, ja, ar, lp_time_limit_s, &x);
  fav.lp_rows = rows;
  fav.lp_cols = cols;
  if (lp.escaped) return fallback("GLPK stopped with an internal error");
  if (lp.rc != 0 || lp.status != GLP_OPT) {
    char why[160];
    std::snprintf(why, sizeof why, "the LP (%d rows, %d columns) %s", rows, cols,
                  lp.rc == GLP_ETMLIM                              ? "ran past lp_time_limit_s"
                  : lp.rc == GLP_EITLIM                            ? "ran past the iteration limit"
                  : lp.status == GLP_NOFEAS || lp.rc == GLP_ENOPFS ? "is infeasible"
                                                                   : "did not reach an optimum");
    return fallback(why);
  }
  fav.lp_makespan_s = lp.objective / kUs;
  // x_ij < threshold: j is i's favourite child; keep one per parent and one favourite parent
  // per child, smallest x first (ties: parent, then child index).
  struct Cand {
    double x;
    int32_t src, dst;
  };
  std::vector<Cand> cands;
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (!pairs[k].inter) continue;
    const double xk = x[xcol[k]];
    if (xk < threshold) cands.push_back({xk, pairs[k].src, pairs[k].dst});
  }
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.x != b.x ? a.x < b.x : a.src != b.src ? a.src < b.src : a.dst < b.dst;
  });
  fav.child.assign(n, kNone);
  std::vector<uint8_t> has_parent(n, 0);
  for (const Cand& c : cands) {
    if (fav.child[c.src] != kNone || has_parent[c.dst]) continue;
    fav.child[c.src] = c.dst;
    has_parent[c.dst] = 1;
  }
  fav.from_lp = true;
  fav.lp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return fav;
}

// ---------------------------------------------------------------------------------------

OptionSpec memory_option() {
  return string_option("memory", "baechi", {"baechi", "bound"},
                       "memory account: baechi = Baechi's own (m-TOPO: op memory; m-ETF/m-SCT: "
                       "outputs freed once consumed, along the schedule), bound = every op's "
                       "memory and received tensor for the whole step (never out of memory)");
}

MemoryMode memory_mode(const std::string& option, bool list_scheduler) {
  if (option == "bound") return MemoryMode::bound;
  return list_scheduler ? MemoryMode::dynamic : MemoryMode::topo;
}

OptionSpec preprocess_option() {
  return boolean_option("preprocess", true,
                        "Baechi's co-placement: backward ops with their forward op, updates with "
                        "their weights, chains fused (colocation groups are always kept)");
}

Placement finish(Run& run, const std::string& label, const Groups& groups, Plan plan) {
  const Graph& g = run.problem().graph();
  const bool simulate = run.samples_left() > 0;
  if (simulate) run.evaluate(plan.placement);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %d ops in %d groups", label.c_str(), g.num_ops(),
                groups.num_groups());
  std::string note = buf;
  if (plan.makespan_s > 0) {
    std::snprintf(buf, sizeof buf, ", predicted makespan %.4g s", plan.makespan_s);
    note += buf;
  }
  std::snprintf(buf, sizeof buf, ", memory max %.2f of capacity", plan.memory_fraction);
  note += buf;
  note += plan.extra;
  if (plan.over_memory > 0)
    note += "; by the memory estimate " + std::to_string(plan.over_memory) +
            " ops fit on no device: placed on the least-loaded one (the simulator may report out "
            "of memory)";
  if (!simulate) note += "; not simulated (no samples left in the budget)";
  run.set_note(note);
  return std::move(plan.placement);
}

}  // namespace gdp::place::baechi
