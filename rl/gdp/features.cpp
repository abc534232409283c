// Graph -> policy inputs (see features.h; the table with the transforms is docs/policy.md).
#include "rl/gdp/features.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "core/json_strict.h"
#include "place/stages.h"
#include "place/units.h"

namespace gdp::rl {

// ---- vocabulary ----

OpVocabulary::OpVocabulary() = default;

OpVocabulary::OpVocabulary(std::vector<std::string> types) : types_(std::move(types)) {
  index_.reserve(types_.size());
  for (size_t k = 0; k < types_.size(); ++k) index_.emplace(types_[k], static_cast<int32_t>(k + 1));
}

OpVocabulary OpVocabulary::from_graphs(const std::vector<const Graph*>& graphs, int32_t max_size) {
  if (max_size < 1)
    throw std::invalid_argument(
        "OpVocabulary::from_graphs: max_size must be >= 1 (the unknown "
        "slot), got " +
        std::to_string(max_size));
  std::unordered_map<std::string_view, int64_t> count;
  for (size_t k = 0; k < graphs.size(); ++k) {
    if (!graphs[k])
      throw std::invalid_argument("OpVocabulary::from_graphs: graph " + std::to_string(k) +
                                  " is null");
    for (const Op& op : graphs[k]->ops())
      if (!op.type.empty()) ++count[op.type];
  }
  std::vector<std::pair<std::string_view, int64_t>> by_count(count.begin(), count.end());
  std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  const size_t keep = std::min(by_count.size(), static_cast<size_t>(max_size - 1));
  std::vector<std::string> types;
  types.reserve(keep);
  for (size_t k = 0; k < keep; ++k) types.emplace_back(by_count[k].first);
  return OpVocabulary(std::move(types));
}

OpVocabulary OpVocabulary::from_json(const nlohmann::json& j, const std::string& source) {
  StrictJson sj(source);
  sj.check_keys(j, "", {"unknown", "types"}, {});
  const nlohmann::json& unknown = j.at("unknown");
  if (!(unknown.is_number_integer() || unknown.is_number_unsigned()) || unknown.get<int64_t>() != 0)
    sj.fail("unknown",
            "expected 0 (the unknown-type slot is index 0), got " + json_preview(unknown));
  const nlohmann::json& arr = sj.array(j, "types", "");
  std::vector<std::string> types;
  types.reserve(arr.size());
  std::unordered_map<std::string, size_t> first;
  for (size_t k = 0; k < arr.size(); ++k) {
    const std::string path = json_path("types", k);
    if (!arr[k].is_string())
      sj.fail(path, "expected an op type (a non-empty string), got " + json_preview(arr[k]));
    const auto& s = arr[k].get_ref<const std::string&>();
    if (s.empty()) sj.fail(path, "expected an op type (a non-empty string), got \"\"");
    auto [it, inserted] = first.emplace(s, k);
    if (!inserted)
      sj.fail(path, "duplicate type " + json_preview(arr[k]) + " (also at types[" +
                        std::to_string(it->second) + "]); expected each type once");
    types.push_back(s);
  }
  if (types.size() >= static_cast<size_t>(INT32_MAX))
    sj.fail("types", "expected fewer than 2^31 - 1 types");
  return OpVocabulary(std::move(types));
}

OpVocabulary OpVocabulary::from_json_text(const std::string& text, const std::string& source) {
  return from_json(StrictJson(source).parse(text), source);
}

nlohmann::ordered_json OpVocabulary::to_json() const {
  nlohmann::ordered_json j;
  j["unknown"] = 0;
  j["types"] = types_;
  return j;
}

int32_t OpVocabulary::index(const std::string& type) const {
  auto it = index_.find(type);
  return it == index_.end() ? 0 : it->second;
}

const std::string& OpVocabulary::type(int32_t index) const {
  static const std::string kUnknown;
  if (index < 0 || index >= size())
    throw std::out_of_range("OpVocabulary::type: index " + std::to_string(index) + " outside [0, " +
                            std::to_string(size()) + ")");
  return index == 0 ? kUnknown : types_[index - 1];
}

// ---- features ----

namespace {

// Units of the log transforms: MFLOP, kB, microseconds.
constexpr double kFlopUnit = 1e6, kByteUnit = 1e3, kTimeUnit = 1e-6;
constexpr double kNodeFracCap = 4, kGraphFracCap = 16;  // clamps of the memory ratios
const double kLn10 = std::log(10.0);

// log10(1 + x / unit) for x >= 0.
double log10p(double x, double unit) { return std::log1p(x / unit) / kLn10; }

void check_value(const Graph& g, const Op& op, double v, const char* what) {
  if (!std::isfinite(v) || v < 0)
    throw InputError("featurize: graph '" + g.name + "': op '" + op.name + "' has " + what + " " +
                     std::to_string(v) + "; expected a finite number >= 0");
}

struct TypeInfo {
  int32_t vocab = 0;
  OpClass op_class = OpClass::other;
};

// The cluster's memory: the smallest capacity (the ratios' unit) and the total. InputError on
// an empty cluster or a device without memory.
struct Capacity {
  double min = 0, total = 0;
};
Capacity capacity_of(const Cluster& c) {
  if (c.devices.empty())
    throw InputError("featurize: cluster '" + c.name + "' has no devices; expected at least one");
  int64_t min_capacity = INT64_MAX;
  Capacity cap;
  for (const DeviceSpec& d : c.devices) {
    if (d.memory_bytes <= 0)
      throw InputError("featurize: cluster '" + c.name + "': device '" + d.name +
                       "' has memory_bytes " + std::to_string(d.memory_bytes) +
                       "; expected a positive capacity");
    min_capacity = std::min(min_capacity, d.memory_bytes);
    cap.total += static_cast<double>(d.memory_bytes);
  }
  cap.min = static_cast<double>(min_capacity);
  return cap;
}

// The graph's structure as the features see it: deduplicated in-edges (src -> dst) grouped by
// dst in dense order, each dst's sources in the order of its in-edges; per-op edge bytes over
// all edges; topological positions and levels (longest path from a source, in edges).
struct Structure {
  std::vector<int32_t> src, dst;
  std::vector<int64_t> in_ptr;
  std::vector<int32_t> out_deg;
  std::vector<double> in_bytes, out_bytes;
  std::vector<int32_t> pos, level;
  int32_t max_level = 0;
};
Structure structure_of(const Graph& g) {
  const int32_t N = g.num_ops();
  Structure s;
  s.src.reserve(g.num_edges());
  s.dst.reserve(g.num_edges());
  s.in_ptr.assign(static_cast<size_t>(N) + 1, 0);
  std::vector<int32_t> stamp(N, -1);
  s.out_deg.assign(N, 0);
  s.in_bytes.assign(N, 0);
  s.out_bytes.assign(N, 0);
  const auto& edges = g.edges();
  for (int32_t v = 0; v < N; ++v) {
    for (int64_t k = g.in_ptr()[v]; k < g.in_ptr()[v + 1]; ++k) {
      const Edge& e = edges[g.in_edge_ids()[k]];
      s.in_bytes[v] += static_cast<double>(e.bytes);
      s.out_bytes[e.src] += static_cast<double>(e.bytes);
      if (stamp[e.src] == v) continue;
      stamp[e.src] = v;
      s.src.push_back(e.src);
      s.dst.push_back(v);
      ++s.out_deg[e.src];
    }
    s.in_ptr[v + 1] = static_cast<int64_t>(s.src.size());
  }
  const std::vector<int32_t>& topo = g.topo_order();
  s.pos.assign(N, 0);
  s.level.assign(N, 0);
  for (int32_t k = 0; k < N; ++k) {
    const int32_t v = topo[k];
    s.pos[v] = k;
    int32_t l = 0;
    for (int64_t j = s.in_ptr[v]; j < s.in_ptr[v + 1]; ++j) l = std::max(l, s.level[s.src[j]] + 1);
    s.level[v] = l;
    s.max_level = std::max(s.max_level, l);
  }
  return s;
}

// What the graph-level row sums over the ops.
struct Totals {
  double flops = 0, time = 0, param = 0, resident = 0, output = 0;
  int64_t phase[3] = {0, 0, 0}, grouped = 0, measured = 0;
};

// One op's node row (every column but the stage coordinates); its cost-model time returned.
double op_row(const Graph& g, int32_t v, const DeviceSpec& dev0, const CostModel& cost,
              const Structure& st, const place::Units& units, const std::vector<int32_t>& unit_size,
              const std::vector<double>& unit_resident, double cap, const TypeInfo& type,
              float* row, Totals& sum) {
  const int32_t N = g.num_ops();
  const Op& op = g.op(v);
  auto put = [row](int32_t col, double value) { row[col] = static_cast<float>(value); };
  const int p = static_cast<int>(op.phase);
  put(feat::phase_forward + p, 1);
  ++sum.phase[p];
  put(feat::class_matmul + static_cast<int32_t>(type.op_class), 1);

  put(feat::num_outputs, std::log1p(static_cast<double>(op.outputs.size())) / kLn10);
  if (!op.outputs.empty()) {
    const auto& shape = op.outputs[0].shape;
    put(feat::out_rank, static_cast<double>(std::min<size_t>(shape.size(), 8)) / 4);
    for (size_t d = 0; d < shape.size() && d < 4; ++d)
      put(feat::out_dim0 + static_cast<int32_t>(d),
          log10p(static_cast<double>(std::max<int64_t>(shape[d], 0)), 1));
  }

  check_value(g, op, op.flops, "flops");
  check_value(g, op, op.bytes_accessed, "bytes_accessed");
  put(feat::flops, log10p(op.flops, kFlopUnit));
  put(feat::bytes_accessed, log10p(op.bytes_accessed, kByteUnit));
  sum.flops += op.flops;

  // The measurement the cost model uses: this kind first, else "*".
  const MeasuredTime* hit = nullptr;
  for (const MeasuredTime& m : op.measured) {
    check_value(g, op, m.time_s, "a measured time of");
    if (m.device_kind == dev0.kind) {
      if (!hit || hit->device_kind != dev0.kind) hit = &m;
    } else if (m.device_kind == "*" && !hit) {
      hit = &m;
    }
  }
  if (hit) {
    put(feat::measured_time, log10p(hit->time_s, kTimeUnit));
    put(hit->device_kind == dev0.kind ? feat::measured_exact : feat::measured_any, 1);
    ++sum.measured;
  }
  const double t = cost.op_time_s(op, dev0);
  put(feat::cost_time, log10p(t, kTimeUnit));
  sum.time += t;

  const double param = static_cast<double>(op.param_bytes);
  const double resident = static_cast<double>(op.resident_bytes());
  const double output = static_cast<double>(op.output_bytes());
  put(feat::param_bytes, log10p(param, kByteUnit));
  put(feat::optimizer_bytes, log10p(static_cast<double>(op.optimizer_bytes), kByteUnit));
  put(feat::output_bytes, log10p(output, kByteUnit));
  put(feat::temp_bytes, log10p(static_cast<double>(op.temp_bytes), kByteUnit));
  put(feat::resident_frac, std::min(resident / cap, kNodeFracCap));
  put(feat::output_frac, std::min(output / cap, kNodeFracCap));
  sum.param += param;
  sum.resident += resident;
  sum.output += output;

  put(feat::in_degree, log10p(static_cast<double>(st.in_ptr[v + 1] - st.in_ptr[v]), 1));
  put(feat::out_degree, log10p(static_cast<double>(st.out_deg[v]), 1));
  put(feat::in_edge_bytes, log10p(st.in_bytes[v], kByteUnit));
  put(feat::out_edge_bytes, log10p(st.out_bytes[v], kByteUnit));
  put(feat::topo_pos, N > 1 ? static_cast<double>(st.pos[v]) / (N - 1) : 0.0);
  put(feat::level, st.max_level > 0 ? static_cast<double>(st.level[v]) / st.max_level : 0.0);

  const int32_t u = units.unit_of[v];
  if (!op.colocation.empty()) {
    put(feat::has_group, 1);
    put(feat::group_size, std::log10(static_cast<double>(unit_size[u])));
    ++sum.grouped;
  }
  put(feat::unit_resident_frac, std::min(unit_resident[u] / cap, kNodeFracCap));
  return t;
}

// The links as the features see them: a transfer between two devices drawn at random (mean
// latency and mean 1 / bandwidth over the ordered device pairs; nothing on one device).
struct Links {
  double latency_s = 0, inv_Bps = 0;
  double time_s(double bytes) const { return bytes > 0 ? latency_s + bytes * inv_Bps : 0.0; }
};
Links links_of(const Cluster& c) {
  Links l;
  const int32_t D = c.num_devices();
  if (D < 2) return l;
  for (int32_t s = 0; s < D; ++s)
    for (int32_t d = 0; d < D; ++d) {
      if (s == d) continue;
      const RouteCost r = c.route_cost(s, d);
      l.latency_s += r.latency_s;
      l.inv_Bps += 1.0 / r.bottleneck_Bps;
    }
  const double pairs = static_cast<double>(D) * (D - 1);
  l.latency_s /= pairs;
  l.inv_Bps /= pairs;
  return l;
}

// The graph-level row.
// `links`: links_of(c); `comm_s`: the sum over ops of their out_comm_time (seconds).
nn::Tensor graph_row(const Graph& g, const Cluster& c, const Structure& st, const Totals& sum,
                     const Capacity& cap, int32_t num_units, int32_t num_stage_ranks,
                     const Links& links, double comm_s) {
  const int32_t N = g.num_ops();
  nn::Tensor t({1, kGraphFeatures});
  float* gs = t.data();
  auto gput = [gs](int32_t col, double value) { gs[col] = static_cast<float>(value); };
  const double n = static_cast<double>(N);
  const double ndev = static_cast<double>(c.num_devices());
  auto frac = [n](double count) { return n > 0 ? count / n : 0.0; };
  gput(feat::g_ops, log10p(n, 1));
  gput(feat::g_edges, log10p(static_cast<double>(g.num_edges()), 1));
  gput(feat::g_mean_degree, log10p(frac(static_cast<double>(st.src.size())), 1));
  const double depth = N > 0 ? st.max_level + 1.0 : 0.0;
  gput(feat::g_depth, log10p(depth, 1));
  gput(feat::g_depth_frac, frac(depth));
  gput(feat::g_flops, log10p(sum.flops, kFlopUnit));
  gput(feat::g_cost_time, log10p(sum.time, kTimeUnit));
  gput(feat::g_param_bytes, log10p(sum.param, kByteUnit));
  gput(feat::g_resident_frac, std::min(sum.resident / cap.total, kGraphFracCap));
  gput(feat::g_memory_frac, std::min((sum.resident + sum.output) / cap.total, kGraphFracCap));
  gput(feat::g_devices, ndev / 8);
  gput(feat::g_log_devices, log10p(ndev, 1));
  gput(feat::g_frac_forward, frac(static_cast<double>(sum.phase[0])));
  gput(feat::g_frac_backward, frac(static_cast<double>(sum.phase[1])));
  gput(feat::g_frac_update, frac(static_cast<double>(sum.phase[2])));
  gput(feat::g_frac_grouped, frac(static_cast<double>(sum.grouped)));
  gput(feat::g_units_frac, frac(static_cast<double>(num_units)));
  gput(feat::g_frac_measured, frac(static_cast<double>(sum.measured)));
  gput(feat::g_device_memory, log10p(cap.min, 1e9));
  gput(feat::g_stage_ranks, log10p(static_cast<double>(num_stage_ranks), 1));
  gput(feat::g_link_bandwidth, links.inv_Bps > 0 ? log10p(1.0 / links.inv_Bps, 1e9) : 0.0);
  gput(feat::g_comm_ratio, sum.time > 0 ? log10p(comm_s / sum.time, 1) : 0.0);
  return t;
}

}  // namespace

NodeFeatures featurize(const Graph& g, const Cluster& c, const OpVocabulary& vocab) {
  static const CostModel kDefaultCost;
  return featurize(g, c, vocab, kDefaultCost);
}

NodeFeatures featurize(const Graph& g, const Cluster& c, const OpVocabulary& vocab,
                       const CostModel& cost) {
  if (!g.finalized()) throw InputError("featurize: graph '" + g.name + "' is not finalized");
  const Capacity cap = capacity_of(c);
  const int32_t N = g.num_ops();
  NodeFeatures f;
  f.num_nodes = N;
  const Structure st = structure_of(g);
  f.topo.assign(g.topo_order().begin(), g.topo_order().end());

  // Colocation units: group sizes and resident bytes per unit.
  const place::Units units = place::Units::colocation(g);
  std::vector<int32_t> unit_size(units.num_units(), 0);
  std::vector<double> unit_resident(units.num_units(), 0);
  for (int32_t v = 0; v < N; ++v) {
    ++unit_size[units.unit_of[v]];
    unit_resident[units.unit_of[v]] += static_cast<double>(g.op(v).resident_bytes());
  }

  // Per type: vocabulary index and cost-model class, looked up once per distinct type.
  std::unordered_map<std::string_view, TypeInfo> type_info;
  f.x = nn::Tensor({N, kNodeFeatures});
  f.op_type.resize(N);
  float* x = f.x.data();
  std::vector<double> op_time(N);
  Totals sum;
  for (int32_t v = 0; v < N; ++v) {
    const Op& op = g.op(v);
    auto [it, inserted] = type_info.try_emplace(op.type);
    if (inserted) it->second = TypeInfo{vocab.index(op.type), classify_op(op.type)};
    f.op_type[v] = it->second.vocab;
    op_time[v] = op_row(g, v, c.devices[0], cost, st, units, unit_size, unit_resident, cap.min,
                        it->second, x + static_cast<int64_t>(v) * kNodeFeatures, sum);
  }

  const place::StageCoordinates sc = place::stage_coordinates(g, op_time);
  for (int32_t v = 0; v < N; ++v) {
    float* row = x + static_cast<int64_t>(v) * kNodeFeatures;
    row[feat::stage_time] = static_cast<float>(sc.by_time[v]);
    row[feat::stage_memory] = static_cast<float>(sc.by_memory[v]);
    row[feat::stage_rank] = static_cast<float>(sc.by_rank[v]);
    row[feat::stage_fold] = static_cast<float>(sc.by_fold[v]);
    row[feat::stage_share] = static_cast<float>(sc.share[v]);
    row[feat::stage_width] = static_cast<float>(sc.by_width[v]);
  }
  // The critical path over op times: top (longest path before the op starts) forward in
  // topological order, bottom (from its start to the end) backward.
  std::vector<double> top(N, 0), bottom(N, 0);
  for (const int32_t v : f.topo)
    for (int64_t j = st.in_ptr[v]; j < st.in_ptr[v + 1]; ++j)
      top[v] = std::max(top[v], top[st.src[j]] + op_time[st.src[j]]);
  double longest = 0;
  for (auto it = f.topo.rbegin(); it != f.topo.rend(); ++it) {
    const int32_t v = static_cast<int32_t>(*it);
    bottom[v] += op_time[v];  // bottom[v] held the most over its successors
    longest = std::max(longest, top[v] + bottom[v]);
    for (int64_t j = st.in_ptr[v]; j < st.in_ptr[v + 1]; ++j)
      bottom[st.src[j]] = std::max(bottom[st.src[j]], bottom[v]);
  }
  for (int32_t v = 0; v < N; ++v) {
    float* row = x + static_cast<int64_t>(v) * kNodeFeatures;
    const double t = longest > 0 ? top[v] / longest : 0, b = longest > 0 ? bottom[v] / longest : 0;
    row[feat::crit_top] = static_cast<float>(t);
    row[feat::crit_bottom] = static_cast<float>(b);
    row[feat::crit_slack] = static_cast<float>(longest > 0 ? std::clamp(1 - t - b, 0.0, 1.0) : 0);
  }
  const Links links = links_of(c);
  double comm_s = 0;
  for (int32_t v = 0; v < N; ++v) {
    float* row = x + static_cast<int64_t>(v) * kNodeFeatures;
    const double comm = links.time_s(st.out_bytes[v]);
    comm_s += comm;
    row[feat::out_comm_time] = static_cast<float>(log10p(comm, kTimeUnit));
    row[feat::comm_ratio] =
        static_cast<float>(log10p(std::min(comm / std::max(op_time[v], 1e-7), 1e6), 1));
  }
  f.stage_rank = sc.rank;
  f.num_stage_ranks = sc.num_ranks;
  f.adj = nn::make_adjacency(N, st.src, st.dst);
  f.graph_stats = graph_row(g, c, st, sum, cap, units.num_units(), sc.num_ranks, links, comm_s);
  return f;
}

}  // namespace gdp::rl
