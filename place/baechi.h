// What Baechi's three memory-aware placers (Jeon et al., "Baechi: Fast Device Placement of
// Machine Learning Graphs", SoCC 2020) share: the placement groups (colocation groups, plus
// Baechi's co-placement preprocessing), the conservative per-device memory account, and the
// list scheduler behind m-ETF and m-SCT (earliest task first with communication times and
// memory limits, with m-SCT's favourite-child rule), and m-SCT's favourite-child LP
// (Hanen & Munier's small-communication-time relaxation, solved with GLPK).
// docs/baselines.md ("Baechi") describes the choices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/placement.h"
#include "place/cost_view.h"
#include "place/options.h"
#include "place/run.h"

namespace gdp::place::baechi {

// Ops that must share a device. Colocation groups (Op::colocation) always; with
// `preprocess`, Baechi's co-placement too: a backward op "gradients/<fwd>_grad/..." with its
// forward op <fwd>, an update op with the ops holding weights that feed it, and chains (an op
// whose only consumer has it as only producer) fused. A preprocessing merge is skipped when
// the merged group's memory would exceed `max_group_bytes` (colocation merges never are).
// Contracting groups can make the group graph cyclic: the schedulers work on ops and pin a
// group's device when its first op is placed.
struct Groups {
  std::vector<int32_t> group_of;  // (ops)
  std::vector<int64_t> ptr;       // (groups + 1) CSR over `ops`
  std::vector<int32_t> ops;       // members of each group, in topological order
  std::vector<int64_t> memory;    // (groups) sum of CostView::op_memory_bytes of the members
  std::vector<int64_t> resident;  // (groups) sum of the members' resident bytes
  int64_t max_group_bytes = 0;    // cap on preprocessing merges
  int64_t merges_backward = 0, merges_update = 0, merges_chain = 0, merges_skipped = 0;
  int32_t num_groups() const { return static_cast<int32_t>(memory.size()); }
  int64_t size(int32_t g) const { return ptr[g + 1] - ptr[g]; }
};
Groups make_groups(const Graph& g, const CostView& cv, bool preprocess);

// Distinct output tensors: tensor id = tensor_base[op] + output index; bytes = the largest
// Edge::bytes among the tensor's edges (what the simulator transfers).
struct Tensors {
  std::vector<int64_t> base;   // (ops + 1)
  std::vector<int64_t> bytes;  // (tensors)
  int64_t of(const Edge& e) const { return base[e.src] + e.src_output; }
};
Tensors make_tensors(const Graph& g);

// The memory account of a placement being built, per device, in one of three modes:
//  - bound: every op's CostView::op_memory_bytes (resident + outputs + temporaries) for the
//    whole step, reserved for its whole group when the group's first op is placed, plus every
//    tensor received from another device (once per tensor and device). It bounds the
//    simulator's peak from above: a placement that fits by it is valid.
//  - topo: the same without received tensors (Baechi's m-TOPO counts op memory only).
//  - dynamic (Baechi's m-ETF / m-SCT): the group's resident bytes reserved when it is pinned;
//    an op's outputs (and the copies of them received on other devices) allocated when it is
//    placed and freed once all its consumers are placed; its temporaries only checked.
//    Placing ops in the order of a schedule, it follows the schedule's memory; it does not
//    bound the simulator's peak, whose order may differ.
enum class MemoryMode : uint8_t { bound, topo, dynamic };

class Memory {
 public:
  Memory(const Graph& g, const CostView& cv, const Groups& groups, const Tensors& tensors,
         MemoryMode mode);
  // Bytes that placing `op` on `d` needs. `device_of` holds the placed ops' devices.
  int64_t need(int32_t op, int32_t d, const std::vector<int32_t>& device_of) const;
  bool fits(int32_t op, int32_t d, const std::vector<int32_t>& device_of) const {
    return need(op, d, device_of) <= cv_->capacity_bytes(d) - used_[d];
  }
  // Places `op` on `d` (pins its group there when it is the group's first op). Dynamic mode:
  // frees the outputs of producers whose consumers are now all placed; `freed` (when given)
  // gets the devices where memory was freed.
  void place(int32_t op, int32_t d, const std::vector<int32_t>& device_of,
             std::vector<int32_t>* freed = nullptr);
  int32_t pinned(int32_t op) const { return pin_[groups_->group_of[op]]; }
  int64_t used(int32_t d) const { return used_[d]; }
  int64_t group_bytes(int32_t d) const { return group_used_[d]; }  // groups' op memory
  int32_t least_loaded() const;  // device with the fewest bytes used (ties: lowest index)
  // Largest peak / capacity over the devices; 0 when every capacity is unlimited.
  double max_fraction() const;

 private:
  void add(int32_t d, int64_t bytes);
  const Graph* g_;
  const CostView* cv_;
  const Groups* groups_;
  const Tensors* tensors_;
  MemoryMode mode_;
  std::vector<int32_t> pin_;  // (groups) device, -1 while unplaced
  std::vector<int64_t> used_, peak_, group_used_;
  std::vector<uint8_t> received_;    // (tensors x devices)
  std::vector<int32_t> unconsumed_;  // (ops) consumers not yet placed (dynamic)
  mutable std::vector<int64_t> seen_;
};

// The result of a placer before simulation.
struct Plan {
  Placement placement;
  double makespan_s = 0;    // predicted by the list scheduler (0 for m-TOPO)
  int64_t over_memory = 0;  // ops placed where the estimate exceeds the capacity
  double memory_fraction = 0;
  std::string extra;  // appended to the note
};

// m-TOPO: ops in topological order fill device 0, 1, ... up to the share
// (1 + slack) * total group memory / devices + largest group; the last device takes the
// rest; capacity is never exceeded while any device has room.
// `mode`: bound or topo.
Plan m_topo(const Graph& g, const CostView& cv, const Groups& groups, double slack,
            MemoryMode mode);

// ETF list scheduling (favourite == nullptr) or SCT (favourite[op] = its favourite child,
// -1 for none). See baechi.cpp for the rules.
// `mode`: bound or dynamic.
Plan list_schedule(const Graph& g, const CostView& cv, const Groups& groups,
                   const std::vector<int32_t>* favourite, MemoryMode mode);

// m-SCT's favourite children.
struct Favourites {
  std::vector<int32_t> child;  // (ops) favourite child, -1 for none
  bool from_lp = false;        // false: the largest-transfer approximation
  std::string why;             // why the approximation was used ("" when the LP was)
  int32_t lp_rows = 0, lp_cols = 0;
  double lp_s = 0;           // seconds spent building and solving the LP
  double lp_makespan_s = 0;  // the relaxed makespan w
};
// Solves the LP when the graph has at most lp_max_ops ops (and the solver converges within
// lp_time_limit_s), else falls back to the approximation. x_ij < threshold: j is i's
// favourite child (at most one per parent and one favourite parent per child are kept).
Favourites favourite_children(const Graph& g, const CostView& cv, const Groups& groups,
                              int64_t lp_max_ops, double lp_time_limit_s, double threshold);
// The approximation alone: in topological order, each op's favourite child is its
// inter-group child with the largest transfer whose favourite parent is not yet taken.
std::vector<int32_t> favourite_children_by_bytes(const Graph& g, const Groups& groups);

// Options shared by the three methods: `preprocess` and `memory` ("baechi": the method's own
// account as in Baechi's code, topo or dynamic; "bound": the conservative bound).
OptionSpec preprocess_option();
OptionSpec memory_option();
MemoryMode memory_mode(const std::string& option, bool list_scheduler);

// Simulates the plan once (when the budget allows) and sets the one-line note.
Placement finish(Run& run, const std::string& label, const Groups& groups, Plan plan);

}  // namespace gdp::place::baechi
