// The training dataflow graph: ops (forward, backward, update) with their tensors, costs and
// memory, and data edges. Everything else (simulator, placers, policies) reads this model.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gdp {

enum class DType : uint8_t { f32, f16, bf16, f64, i32, i64, u8, boolean };
enum class Phase : uint8_t { forward, backward, update };

const char* dtype_name(DType t);
const char* phase_name(Phase p);
bool parse_dtype(const std::string& s, DType* out);  // false when unknown
bool parse_phase(const std::string& s, Phase* out);
int64_t dtype_size_bytes(DType t);

// The optimizer whose state sits beside the weights. Its state is a whole number of buffers
// the size of the weights: sgd none, momentum one (velocity), adam two (m and v).
enum class Optimizer : uint8_t { sgd, momentum, adam };
const char* optimizer_name(Optimizer o);
bool parse_optimizer(const std::string& s, Optimizer* out);  // false when unknown
int64_t optimizer_state_buffers(Optimizer o);                // sgd 0, momentum 1, adam 2

// Bound on a finalized graph's memory sums (2^60 bytes, 1 EiB): the bytes of all ops
// (weights, optimizer state, outputs, temporaries) and the bytes its edges can carry. Every
// per-device or per-link sum the simulator forms is then below 2^61: no int64 overflow.
constexpr int64_t kMaxGraphBytes = int64_t{1} << 60;

// One output tensor of an op.
struct TensorSpec {
  std::vector<int64_t> shape;  // empty = scalar
  DType dtype = DType::f32;
  int64_t bytes = 0;  // size in memory (usually numel * dtype size; kept explicit)
};

// Measured time of an op on one device kind (e.g. from a profile).
struct MeasuredTime {
  std::string device_kind;  // matches DeviceSpec::kind, e.g. "V100"
  double time_s = 0;
};

struct Op {
  int64_t id = 0;     // user-visible id (unique, non-negative); ops are stored densely
  std::string name;   // unique
  std::string type;   // "MatMul", "Conv2D", "Relu", ...
  std::string scope;  // name scope, e.g. "encoder/layer_2"
  Phase phase = Phase::forward;
  std::vector<TensorSpec> outputs;
  double flops = 0;                    // floating point operations
  double bytes_accessed = 0;           // bytes read + written from device memory
  std::vector<MeasuredTime> measured;  // optional per device kind
  // Resident on the op's device for the whole step: the trainable weights it holds and their
  // optimizer state (e.g. Adam's m and v), kept apart so that parameters can be counted.
  int64_t param_bytes = 0;         // weights only
  int64_t optimizer_bytes = 0;     // optimizer state of those weights
  DType param_dtype = DType::f32;  // element type of the weights
  int64_t temp_bytes = 0;          // scratch, alive only while the op runs
  std::string colocation;          // empty = none; ops of one group must share a device

  int64_t resident_bytes() const { return param_bytes + optimizer_bytes; }
  // Parameter scalars held (weights / element size, rounded down).
  int64_t parameters() const { return param_bytes / dtype_size_bytes(param_dtype); }
  int64_t output_bytes() const {
    int64_t s = 0;
    for (const auto& t : outputs) s += t.bytes;
    return s;
  }
};

// Data edge: output `src_output` of op `src` (dense index) feeds op `dst` (dense index).
struct Edge {
  int32_t src = 0;
  int32_t src_output = 0;
  int32_t dst = 0;
  int64_t bytes = 0;  // bytes carried (normally the tensor's bytes)
};

struct GraphSummary {
  int64_t ops = 0, edges = 0;
  double flops = 0, flops_forward = 0, flops_backward = 0, flops_update = 0;
  int64_t ops_forward = 0, ops_backward = 0, ops_update = 0;
  int64_t parameters = 0;       // parameter scalars (Op::parameters() summed)
  int64_t parameter_bytes = 0;  // weights
  int64_t optimizer_bytes = 0;  // optimizer state
  int64_t activation_bytes = 0, temp_bytes = 0;
  int64_t colocation_groups = 0;
  int64_t depth = 0;  // ops on the longest path (by count)
};

// A graph. Build it with add_op/add_edge, then call finalize(): it validates structure
// (edges in range, output index valid, no cycle, unique names) and sizes (no negative byte
// count; the sums bounded by kMaxGraphBytes) and builds the CSR adjacency and a topological
// order. Accessors below require a finalized graph.
class Graph {
 public:
  std::string name;

  int32_t add_op(Op op);  // returns the dense index
  void add_edge(int32_t src, int32_t src_output, int32_t dst, int64_t bytes);
  void add_edge(const Edge& e) {
    edges_.push_back(e);
    finalized_ = false;
  }

  // Throws GraphError with a message naming the problem (op names, not just indices).
  void finalize();
  bool finalized() const { return finalized_; }

  int32_t num_ops() const { return static_cast<int32_t>(ops_.size()); }
  int64_t num_edges() const { return static_cast<int64_t>(edges_.size()); }
  const std::vector<Op>& ops() const { return ops_; }
  std::vector<Op>& mutable_ops() {
    finalized_ = false;
    return ops_;
  }
  const Op& op(int32_t i) const { return ops_[i]; }
  const std::vector<Edge>& edges() const { return edges_; }

  // CSR adjacency: out-edges of op i are edge ids out_edge_ids()[out_ptr()[i] .. out_ptr()[i+1]).
  const std::vector<int64_t>& out_ptr() const { return out_ptr_; }
  const std::vector<int64_t>& out_edge_ids() const { return out_eids_; }
  const std::vector<int64_t>& in_ptr() const { return in_ptr_; }
  const std::vector<int64_t>& in_edge_ids() const { return in_eids_; }
  // Ops in a topological order (Kahn's algorithm, ties by dense index: deterministic).
  const std::vector<int32_t>& topo_order() const { return topo_; }
  // Each op's level: the edges on the longest path from a source to it (sources 0).
  std::vector<int32_t> levels() const;

  int32_t find_op(const std::string& name) const;  // -1 when absent
  GraphSummary summary() const;

 private:
  void check_sizes() const;  // called by finalize()

  std::vector<Op> ops_;
  std::vector<Edge> edges_;
  std::vector<int64_t> out_ptr_, out_eids_, in_ptr_, in_eids_;
  std::vector<int32_t> topo_;
  std::unordered_map<std::string, int32_t> by_name_;
  bool finalized_ = false;
};

}  // namespace gdp
