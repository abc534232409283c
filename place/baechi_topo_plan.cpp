// m-TOPO's plan: topological order filling the devices up to a memory share (place/baechi.h;
// the method itself is place/baechi_topo.cpp).
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

}  // namespace gdp::place::baechi
