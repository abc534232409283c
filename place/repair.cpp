// Memory repair (see repair.h).
#include "place/repair.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "core/error.h"
#include "place/units.h"

namespace gdp::place {

RepairResult repair_memory(const Problem& problem, const Placement& p,
                           const std::vector<double>& key, int32_t max_rounds) {
  const Graph& g = problem.graph();
  const Cluster& c = problem.cluster();
  const int32_t N = g.num_ops(), D = c.num_devices();
  if (key.size() != static_cast<size_t>(N) || p.device.size() != static_cast<size_t>(N))
    throw InputError("repair_memory: graph '" + g.name + "' has " + std::to_string(N) +
                     " ops; got a key of " + std::to_string(key.size()) + " and a placement of " +
                     std::to_string(p.device.size()));
  RepairResult out;
  out.placement = p;

  const Units units = Units::colocation(g);
  const int32_t U = units.num_units();
  std::vector<double> unit_key(U, 0), unit_bytes(U, 0);
  std::vector<int32_t> unit_ops(U, 0);
  for (int32_t v = 0; v < N; ++v) {
    const int32_t u = units.unit_of[v];
    const Op& op = g.op(v);
    unit_key[u] += key[v];
    unit_bytes[u] += static_cast<double>(op.resident_bytes() + op.output_bytes() + op.temp_bytes);
    ++unit_ops[u];
  }
  for (int32_t u = 0; u < U; ++u) unit_key[u] /= unit_ops[u];
  auto capacity = [&](int32_t d) {
    return c.devices[d].memory_bytes > 0 ? static_cast<double>(c.devices[d].memory_bytes)
                                         : std::numeric_limits<double>::infinity();
  };

  std::unique_ptr<SimState> state = problem.simulator().make_state();
  Placement cur = p;
  for (int32_t round = 0; round <= max_rounds; ++round) {
    const SimResult r = problem.simulator().run(cur, *state);
    ++out.simulations;
    if (r.valid) {
      out.valid = true;
      out.changed = round > 0;
      if (out.changed) {
        out.placement = cur;
        for (int32_t v = 0; v < N; ++v) out.moved_ops += cur.device[v] != p.device[v];
      }
      return out;
    }
    if (r.status != SimStatus::out_of_memory || round == max_rounds || D < 2) break;

    // The most over-full device, and the device with the most free memory.
    int32_t from = -1, to = -1;
    double worst = 0, most_free = 0;
    for (int32_t d = 0; d < D; ++d) {
      const double peak = static_cast<double>(r.devices[d].peak_memory_bytes);
      const double cap = capacity(d);
      if (peak > cap && (peak - cap) / cap > worst) worst = (peak - cap) / cap, from = d;
    }
    if (from < 0) break;
    for (int32_t d = 0; d < D; ++d) {
      const double spare = capacity(d) - static_cast<double>(r.devices[d].peak_memory_bytes);
      if (d != from && spare > most_free) most_free = spare, to = d;
    }
    if (to < 0) break;  // every device is full

    // Units of `from`, ordered along the key; moved from the end that faces `to`.
    std::vector<int32_t> mine;
    double key_from = 0, key_to = 0;
    int32_t n_to = 0;
    for (int32_t u = 0; u < U; ++u) {
      const int32_t d = cur.device[units.first_op[u]];
      if (d == from) mine.push_back(u), key_from += unit_key[u];
      if (d == to) key_to += unit_key[u], ++n_to;
    }
    if (mine.empty()) break;
    key_from /= static_cast<double>(mine.size());
    const bool high_end = n_to > 0 ? key_to / n_to > key_from : to > from;
    std::stable_sort(mine.begin(), mine.end(), [&](int32_t a, int32_t b) {
      return high_end ? unit_key[a] > unit_key[b] : unit_key[a] < unit_key[b];
    });
    const double cap_from = capacity(from);
    const double need =
        static_cast<double>(r.devices[from].peak_memory_bytes) - cap_from + 0.02 * cap_from;
    double moved = 0;
    std::vector<int32_t> unit_device(U);
    for (int32_t u = 0; u < U; ++u) unit_device[u] = cur.device[units.first_op[u]];
    for (int32_t u : mine) {
      if (moved >= need) break;
      if (moved > 0 && moved + unit_bytes[u] > 0.9 * most_free) break;
      unit_device[u] = to;
      moved += unit_bytes[u];
    }
    units.expand_into(unit_device, cur);
  }
  return out;
}

}  // namespace gdp::place
