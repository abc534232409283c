// Conversions between Python objects and gdp's types (convert.h).
#include "convert.h"

#include <limits>

#include "core/error.h"
#include "core/io.h"

namespace gdp::py {

bool is_pathlike(const pb::handle& obj) {
  return pb::isinstance<pb::str>(obj) || pb::hasattr(obj, "__fspath__");
}

std::string as_path(const pb::handle& obj, const char* what) {
  if (pb::isinstance<pb::str>(obj)) return obj.cast<std::string>();
  if (pb::hasattr(obj, "__fspath__")) {
    pb::object p = obj.attr("__fspath__")();
    if (pb::isinstance<pb::str>(p)) return p.cast<std::string>();
  }
  throw InputError(std::string(what) + ": expected a path (str or os.PathLike), got " +
                   pb::str(pb::type::of(obj).attr("__name__")).cast<std::string>());
}

GraphPtr as_graph(const pb::handle& obj) {
  if (pb::isinstance<Graph>(obj)) return obj.cast<std::shared_ptr<Graph>>();
  if (!is_pathlike(obj))
    throw InputError("graph: expected a gdp.Graph or the path of a graph file, got " +
                     pb::str(pb::type::of(obj).attr("__name__")).cast<std::string>());
  const std::string path = as_path(obj, "graph");
  pb::gil_scoped_release release;
  return std::make_shared<const Graph>(read_graph_file(path));
}

ClusterPtr as_cluster(const pb::handle& obj) {
  if (pb::isinstance<Cluster>(obj)) return obj.cast<std::shared_ptr<Cluster>>();
  if (!is_pathlike(obj))
    throw InputError("cluster: expected a gdp.Cluster, a preset name or a cluster file, got " +
                     pb::str(pb::type::of(obj).attr("__name__")).cast<std::string>());
  return std::make_shared<const Cluster>(read_cluster(as_path(obj, "cluster")));
}

CostPtr as_cost(const pb::handle& obj) {
  if (obj.is_none()) return std::make_shared<const CostModel>();
  if (pb::isinstance<CostModel>(obj)) return obj.cast<std::shared_ptr<CostModel>>();
  if (!is_pathlike(obj))
    throw InputError("profile: expected None, a gdp.Profile or a profile JSON path, got " +
                     pb::str(pb::type::of(obj).attr("__name__")).cast<std::string>());
  return std::make_shared<const CostModel>(CostModel::from_json_file(as_path(obj, "profile")));
}

namespace {

// obj as a C-contiguous int64 array of `ndim` dimensions; InputError when it is not integers.
pb::array_t<int64_t> int_array(const pb::handle& obj, int ndim, const char* what) {
  pb::module_ np = pb::module_::import("numpy");
  pb::array a;
  try {
    a = np.attr("asarray")(obj);
  } catch (pb::error_already_set& e) {  // e.g. a ragged list
    if (!e.matches(PyExc_ValueError) && !e.matches(PyExc_TypeError)) throw;
    throw InputError(std::string(what) + ": not an array of device indices (" + e.what() + ")");
  }
  const char kind = a.dtype().kind();
  // An empty list comes back as float64: an empty placement of any type is still empty.
  if (kind != 'i' && kind != 'u' && a.size() != 0)
    throw InputError(std::string(what) + ": expected integer device indices, got an array of " +
                     pb::str(a.dtype()).cast<std::string>());
  if (a.ndim() != ndim)
    throw InputError(std::string(what) + ": expected a " + std::to_string(ndim) + "-D array, got " +
                     std::to_string(a.ndim()) + "-D");
  if (kind == 'u' && a.size() != 0 && a.dtype().itemsize() == 8) {
    // uint64 values beyond int64 would wrap: clip them to an out-of-range device.
    a = np.attr("minimum")(a, std::numeric_limits<int64_t>::max());
  }
  return pb::array_t<int64_t, pb::array::c_style | pb::array::forcecast>::ensure(a);
}

int32_t clamp_device(int64_t d) {
  return d < std::numeric_limits<int32_t>::min() || d > std::numeric_limits<int32_t>::max()
             ? -1
             : static_cast<int32_t>(d);
}

}  // namespace

Placement as_placement(const pb::handle& obj, const char* what) {
  pb::array_t<int64_t> a = int_array(obj, 1, what);
  Placement p;
  p.device.resize(static_cast<size_t>(a.size()));
  const int64_t* v = a.data();
  for (size_t i = 0; i < p.device.size(); ++i) p.device[i] = clamp_device(v[i]);
  return p;
}

std::vector<Placement> as_placements(const pb::handle& obj, const char* what) {
  pb::array_t<int64_t> a = int_array(obj, 2, what);
  const int64_t K = a.shape(0), N = a.shape(1);
  std::vector<Placement> ps(static_cast<size_t>(K));
  const int64_t* v = a.data();
  for (int64_t k = 0; k < K; ++k) {
    ps[k].device.resize(static_cast<size_t>(N));
    for (int64_t i = 0; i < N; ++i) ps[k].device[i] = clamp_device(v[k * N + i]);
  }
  return ps;
}

nlohmann::json to_json(const pb::handle& obj) {
  pb::module_ json = pb::module_::import("json");
  // numpy scalars and arrays serialize as their Python values.
  pb::cpp_function plain([](pb::handle o) -> pb::object {
    if (pb::hasattr(o, "tolist")) return o.attr("tolist")();
    throw pb::type_error("Object of type " +
                         pb::str(pb::type::of(o).attr("__name__")).cast<std::string>() +
                         " is not JSON serializable");
  });
  const std::string text =
      json.attr("dumps")(obj, pb::arg("allow_nan") = false, pb::arg("default") = plain)
          .cast<std::string>();
  return nlohmann::json::parse(text);
}

pb::object from_json(const nlohmann::ordered_json& j) {
  return pb::module_::import("json").attr("loads")(j.dump());
}

}  // namespace gdp::py
