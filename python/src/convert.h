// What every part of the bindings shares: the wrapped objects (a graph, a cluster, a cost
// model, held by shared pointers so that Python keeps them alive), the conversions between
// numpy arrays / Python objects and gdp's types, and JSON through Python's json module.
// Bad input raises gdp.InputError (a ValueError) with a message, never crashes.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "sim/cost_model.h"

namespace gdp::py {

namespace pb = pybind11;

using GraphPtr = std::shared_ptr<const Graph>;
using ClusterPtr = std::shared_ptr<const Cluster>;
using CostPtr = std::shared_ptr<const CostModel>;

// A graph argument: a gdp.Graph, or a path (str / os.PathLike) read with read_graph_file.
GraphPtr as_graph(const pb::handle& obj);
// A cluster argument: a gdp.Cluster, or a preset name or cluster JSON path.
ClusterPtr as_cluster(const pb::handle& obj);
// A profile argument: None (the built-in cost model), a gdp.Profile, or a profile JSON path.
CostPtr as_cost(const pb::handle& obj);

// One placement (N) from a 1-D sequence of integers (numpy array, list, tuple). Not an
// integer array, or not 1-D: InputError naming `what`. Values outside int32 become -1 (out of
// range for the simulator, which names the op).
Placement as_placement(const pb::handle& obj, const char* what = "placement");
// K placements from a 2-D integer array (K, N).
std::vector<Placement> as_placements(const pb::handle& obj, const char* what = "placements");

// Copies into new numpy arrays.
template <typename T>
pb::array_t<T> to_array(const std::vector<T>& v) {
  pb::array_t<T> a(static_cast<pb::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}
template <typename T>
pb::array_t<T> to_array_2d(const T* data, int64_t rows, int64_t cols) {
  pb::array_t<T> a({static_cast<pb::ssize_t>(rows), static_cast<pb::ssize_t>(cols)});
  std::copy(data, data + rows * cols, a.mutable_data());
  return a;
}

// JSON across the boundary, through Python's json module (strict on the C++ side).
nlohmann::json to_json(const pb::handle& obj);  // any JSON-serializable Python value
pb::object from_json(const nlohmann::ordered_json& j);

// str / os.PathLike -> std::string (InputError naming `what` otherwise).
std::string as_path(const pb::handle& obj, const char* what);
bool is_pathlike(const pb::handle& obj);

// The parts of the module, each in its own file.
void bind_graphs(pb::module_& m);     // graphs.cpp: Graph, Cluster, Profile, generators, suites
void bind_simulator(pb::module_& m);  // simulator.cpp: Simulator, SimResult
void bind_placers(pb::module_& m);    // placers.cpp: the registry, units, reference, reward
void bind_features(pb::module_& m);   // features.cpp: the policy's features as arrays

}  // namespace gdp::py
