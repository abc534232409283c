// Baechi's per-device memory account in its three modes (place/baechi.h, Memory).
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

}  // namespace gdp::place::baechi
