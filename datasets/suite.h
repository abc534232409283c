// Workload suites: a strict JSON list of graphs (a generator call or a graph file), the
// cluster each runs on, and optional reference placements. Format: docs/workloads.md
// ("Suite format"). `gdp compare`, the tests and the README's main job read suites.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "datasets/registry.h"

namespace gdp::datasets {

constexpr int kSuiteFormatVersion = 1;

// One entry as written in the file (nothing generated or read yet).
struct SuiteEntrySpec {
  std::string name;
  std::string model;                              // generator name; empty when graph_path is set
  GenOptions options;                             // generator options (unset = model default)
  std::string graph_path;                         // graph file, resolved against the suite's folder
  std::string cluster;                            // preset ("v100x4-nvlink") or resolved file path
  std::map<std::string, std::string> placements;  // label -> resolved placement file path
};

struct SuiteSpec {
  std::string name;
  std::string description;
  // Placement-method options by method column label ("method_options": {"anneal": {...}}),
  // for batch runs (`gdp suite run`); checked by the methods when they are prepared.
  nlohmann::json method_options = nlohmann::json::object();
  std::vector<SuiteEntrySpec> entries;
};

// Parses and validates a suite (keys, types, unique names, known models and options, files
// that exist). Throws InputError naming the file, the JSON path and what was expected.
SuiteSpec read_suite_spec(const std::string& path);
SuiteSpec parse_suite_json(const std::string& text, const std::string& source_name,
                           const std::string& base_dir);

// A materialized entry: the graph generated or read, the cluster built.
struct SuiteEntry {
  std::string name;
  Graph graph;
  Cluster cluster;
  std::string cluster_name;                     // the preset or file as written
  std::map<std::string, Placement> placements;  // reference placements, when listed
};

std::vector<SuiteEntry> load_suite(const std::string& path);
SuiteEntry materialize(const SuiteEntrySpec& e);

}  // namespace gdp::datasets
