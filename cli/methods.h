// The placement methods the CLI knows by name (`gdp place --method`, `gdp simulate
// --placement`, `gdp compare --methods`). The learned and algorithmic baselines join here.
#pragma once

#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"

namespace gdp::cli {

const std::vector<std::string>& placement_methods();  // single, round-robin, human
bool is_placement_method(const std::string& name);
// Throws UsageError for an unknown name (listing the known ones). `note` (optional)
// receives a short description of what the method did.
Placement place_with_method(const std::string& method, const Graph& g, const Cluster& c,
                            std::string* note = nullptr);

}  // namespace gdp::cli
