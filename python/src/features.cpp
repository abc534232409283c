// The GDP policy's input features (rl/gdp/features.h) as numpy arrays: the node feature matrix
// with its column names, the op-type vocabulary indices, the deduplicated data edges, the
// topological order and the graph-level statistics (docs/policy.md, "Features").
#include "rl/gdp/features.h"

#include <array>

#include "convert.h"
#include "core/error.h"

namespace gdp::py {

using rl::kGraphFeatures;
using rl::kNodeFeatures;
namespace feat = rl::feat;

namespace {

// Names of feat::NodeColumn and feat::GraphColumn, in column order.
constexpr std::array<const char*, kNodeFeatures> kNodeColumns = {
    "phase_forward",  "phase_backward",    "phase_update",    "class_matmul",
    "class_conv",     "class_elementwise", "class_reduction", "class_memory",
    "class_other",    "num_outputs",       "out_rank",        "out_dim0",
    "out_dim1",       "out_dim2",          "out_dim3",        "flops",
    "bytes_accessed", "measured_time",     "measured_exact",  "measured_any",
    "cost_time",      "param_bytes",       "optimizer_bytes", "output_bytes",
    "temp_bytes",     "resident_frac",     "output_frac",     "in_degree",
    "out_degree",     "in_edge_bytes",     "out_edge_bytes",  "topo_pos",
    "level",          "has_group",         "group_size",      "unit_resident_frac",
    "stage_time",     "stage_memory",      "stage_rank",      "out_comm_time",
    "comm_ratio",     "stage_fold",        "stage_share",     "crit_top",
    "crit_bottom",    "crit_slack",        "stage_width"};
constexpr std::array<const char*, kGraphFeatures> kGraphColumns = {
    "ops",           "edges",         "mean_degree",
    "depth",         "depth_frac",    "flops",
    "cost_time",     "param_bytes",   "resident_frac",
    "memory_frac",   "devices",       "log_devices",
    "frac_forward",  "frac_backward", "frac_update",
    "frac_grouped",  "units_frac",    "frac_measured",
    "device_memory", "stage_ranks",   "link_bandwidth",
    "comm_ratio"};
static_assert(feat::stage_width == kNodeFeatures - 1);
static_assert(feat::g_comm_ratio == kGraphFeatures - 1);

}  // namespace

void bind_features(pb::module_& m) {
  m.attr("NODE_FEATURES") = std::vector<std::string>(kNodeColumns.begin(), kNodeColumns.end());
  m.attr("GRAPH_FEATURES") = std::vector<std::string>(kGraphColumns.begin(), kGraphColumns.end());
  m.def(
      "features",
      [](const pb::handle& graph, const pb::handle& cluster, const pb::handle& profile,
         const pb::object& vocabulary) {
        GraphPtr g = as_graph(graph);
        ClusterPtr c = as_cluster(cluster);
        CostPtr cost = as_cost(profile);
        std::vector<std::string> types;
        if (!vocabulary.is_none()) types = vocabulary.cast<std::vector<std::string>>();
        rl::NodeFeatures f;
        rl::OpVocabulary vocab;
        {
          pb::gil_scoped_release release;
          if (vocabulary.is_none()) {
            vocab = rl::OpVocabulary::from_graphs({g.get()});
          } else {
            nlohmann::json j = {{"unknown", 0}, {"types", types}};
            vocab = rl::OpVocabulary::from_json(j, "vocabulary");
          }
          f = rl::featurize(*g, *c, vocab, *cost);
        }
        const int64_t N = f.num_nodes;
        if (!f.x.is_contiguous() || !f.graph_stats.is_contiguous())
          throw std::logic_error("features: featurize returned a non-contiguous tensor");
        pb::dict d;
        d["x"] = to_array_2d(f.x.data(), N, kNodeFeatures);
        d["columns"] = std::vector<std::string>(kNodeColumns.begin(), kNodeColumns.end());
        d["op_type"] = to_array(f.op_type);
        d["vocabulary"] = vocab.types();
        const nn::Csr& out = f.adj->out;  // row: source op, col_idx: its successors
        pb::array_t<int64_t> e({pb::ssize_t{2}, static_cast<pb::ssize_t>(out.num_entries())});
        int64_t* ev = e.mutable_data();
        const int64_t E = out.num_entries();
        for (int32_t r = 0; r < out.num_rows; ++r)
          for (int32_t k = out.row_ptr[r]; k < out.row_ptr[r + 1]; ++k) {
            ev[k] = r;
            ev[E + k] = out.col_idx[k];
          }
        d["edge_index"] = e;
        d["topo"] = to_array(f.topo);
        d["graph_stats"] = to_array(
            std::vector<float>(f.graph_stats.data(), f.graph_stats.data() + kGraphFeatures));
        d["graph_columns"] = std::vector<std::string>(kGraphColumns.begin(), kGraphColumns.end());
        return d;
      },
      pb::arg("graph"), pb::arg("cluster"), pb::arg("profile") = pb::none(),
      pb::arg("vocabulary") = pb::none(),
      "The GDP policy's features (rl/gdp/features.h): x (N, K) float32 with its columns, op_type "
      "(N) vocabulary index (0 = unknown), vocabulary (the types of index 1..), edge_index "
      "(2, E) deduplicated data edges, topo (N), graph_stats (G) with graph_columns. "
      "vocabulary: a list of op types (default: this graph's types, most frequent first).");
}

}  // namespace gdp::py
