// `round-robin`: ops dealt to the devices in topological order, op k to device k mod D;
// a colocation group goes where its first op goes.
#include "place/methods.h"
#include "place/units.h"

namespace gdp::place {

namespace {

class RoundRobinPlacer : public Placer {
 public:
  Placement place(Run& run) override {
    const Graph& g = run.problem().graph();
    const int32_t D = run.problem().num_devices();
    Placement p{std::vector<int32_t>(g.num_ops(), 0)};
    int64_t k = 0;
    for (int32_t op : g.topo_order()) p.device[op] = static_cast<int32_t>(k++ % D);
    enforce_colocation(g, p);
    run.set_note("ops dealt over " + std::to_string(D) + " devices in topological order");
    return p;
  }
};

}  // namespace

MethodInfo round_robin_method() {
  return MethodInfo{"round-robin",
                    "op k (topological order) on device k mod D, colocation groups together",
                    {},
                    false,
                    [](const Options&) { return std::make_unique<RoundRobinPlacer>(); }};
}

}  // namespace gdp::place
