// File formats: the native JSON graph (versioned, strict), the PipeDream profile importer,
// the cluster JSON and the placement JSON. Readers throw InputError naming the file, the
// JSON path and what was expected; writers write a temporary file and rename it.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/cluster.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/placement.h"

namespace gdp {

constexpr int kGraphFormatVersion = 2;  // reads 1 and 2 (docs/formats.md)
constexpr int kClusterFormatVersion = 1;
constexpr int kPlacementFormatVersion = 1;

// Options of the PipeDream import. A profile's parameter_size counts the weights only; the
// optimizer sets the state added beside them (on the layer's forward op). Adam by default, as
// in the generated graphs.
struct PipeDreamOptions {
  Optimizer optimizer = Optimizer::adam;
};

enum class GraphFileFormat : uint8_t { gdp_json, pipedream };

// Graphs. read_graph_file detects the format from content (JSON object vs PipeDream text),
// imports a PipeDream profile with `pipedream`, and reports what it found in *format.
Graph read_graph_file(const std::string& path, const PipeDreamOptions& pipedream = {},
                      GraphFileFormat* format = nullptr);
// parse_graph_json reads a valid graph straight from the parser's events (linear time, no
// DOM); on any invalid input it defers to parse_graph_json_reference, which builds the DOM and
// names the first error. Both give the same graph or the same message for every input.
Graph parse_graph_json(const std::string& text, const std::string& source_name);
Graph parse_graph_json_reference(const std::string& text, const std::string& source_name);
std::string graph_to_json(const Graph& g);  // deterministic text, round-trips exactly
// Graph::summary() as `gdp info --json` prints it (and gdp.info / Graph.summary() return it):
// name, ops, edges, flops (by phase), op counts by phase, parameters and bytes, depth.
nlohmann::ordered_json graph_summary_json(const Graph& g);
void write_graph_file(const Graph& g, const std::string& path);

// PipeDream per-layer profile (graph.txt). See docs/formats.md for the mapping.
Graph parse_pipedream(const std::string& text, const std::string& source_name,
                      const PipeDreamOptions& options = {});
bool looks_like_pipedream(const std::string& text);

// Clusters: a JSON file or a preset string.
Cluster read_cluster(const std::string& path_or_preset);
Cluster parse_cluster_json(const std::string& text, const std::string& source_name);
std::string cluster_to_json(const Cluster& c);

// Placements: {"format": "gdp-placement", "version": 1, "devices": N,
//              "placement": {"op_name": device, ...}} (every op exactly once).
Placement read_placement_file(const std::string& path, const Graph& g, int32_t num_devices);
std::string placement_to_json(const Placement& p, const Graph& g, int32_t num_devices);
void write_placement_file(const Placement& p, const Graph& g, int32_t num_devices,
                          const std::string& path);

// Utilities shared by the readers and the CLI.
std::string read_text_file(const std::string& path);  // throws InputError
void write_text_file_atomic(const std::string& path, const std::string& text);

}  // namespace gdp
