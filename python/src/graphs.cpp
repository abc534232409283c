// gdp.Graph, gdp.Cluster, gdp.Profile and the functions that make them: graph files (gdp-graph
// JSON, PipeDream), the generators (as `gdp gen`), suites, cluster presets and files, device
// profiles, placement files, and `gdp info`'s figures.
#include <algorithm>
#include <cctype>

#include "convert.h"
#include "core/error.h"
#include "core/io.h"
#include "datasets/registry.h"
#include "datasets/suite.h"
#include "sim/lower_bound.h"
#include "sim/simulator.h"

namespace gdp::py {

namespace {

std::string type_name(const pb::handle& obj) {
  return pb::str(pb::type::of(obj).attr("__name__")).cast<std::string>();
}

template <typename T, typename F>
pb::array_t<T> per_op(const Graph& g, F f) {
  pb::array_t<T> a(g.num_ops());
  T* out = a.mutable_data();
  for (int32_t i = 0; i < g.num_ops(); ++i) out[i] = f(g.op(i));
  return a;
}

template <typename F>
std::vector<std::string> per_op_str(const Graph& g, F f) {
  std::vector<std::string> r;
  r.reserve(g.num_ops());
  for (const Op& op : g.ops()) r.push_back(f(op));
  return r;
}

// `gdp info --json`'s keys, in its order (core/io.h).
pb::dict summary_dict(const Graph& g) { return pb::dict(from_json(graph_summary_json(g))); }

int32_t devices_of(const pb::handle& obj) {
  if (pb::isinstance<pb::int_>(obj) && !pb::isinstance<pb::bool_>(obj)) {
    const int64_t n = obj.cast<int64_t>();
    if (n < 1 || n > (int64_t{1} << 20))
      throw InputError("devices: expected a positive device count, got " + std::to_string(n));
    return static_cast<int32_t>(n);
  }
  return as_cluster(obj)->num_devices();
}

// A generator option's value as `gdp gen` reads it (text); integers and strings only.
std::string option_text(const std::string& name, const pb::handle& v) {
  if (pb::isinstance<pb::bool_>(v))
    throw InputError("generator option '" + name + "': expected an integer, got a bool");
  if (pb::isinstance<pb::int_>(v) || pb::isinstance<pb::str>(v) || pb::hasattr(v, "__index__"))
    return pb::str(v).cast<std::string>();
  throw InputError("generator option '" + name + "': expected an integer (or text for family), " +
                   "got " + type_name(v));
}

pb::object option_default(const datasets::GenOptions& o, const std::string& name) {
  const std::string v = datasets::option_value(o, name);
  if (v.empty()) return pb::none();
  if (std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); }))
    return pb::int_(std::stoll(v));
  return pb::str(v);
}

}  // namespace

void bind_graphs(pb::module_& m) {
  pb::class_<Graph, std::shared_ptr<Graph>>(m, "Graph",
                                            "A training graph (ops, edges); immutable here.")
      .def_property_readonly("name", [](const Graph& g) { return g.name; })
      .def_property_readonly("num_ops", &Graph::num_ops)
      .def_property_readonly("num_edges", &Graph::num_edges)
      .def("__len__", &Graph::num_ops)
      .def_property_readonly(
          "op_names",
          [](const Graph& g) { return per_op_str(g, [](const Op& o) { return o.name; }); })
      .def_property_readonly(
          "op_types",
          [](const Graph& g) { return per_op_str(g, [](const Op& o) { return o.type; }); })
      .def_property_readonly(
          "op_scopes",
          [](const Graph& g) { return per_op_str(g, [](const Op& o) { return o.scope; }); })
      .def_property_readonly("op_phases",
                             [](const Graph& g) {
                               return per_op_str(
                                   g, [](const Op& o) { return std::string(phase_name(o.phase)); });
                             })
      .def_property_readonly(
          "op_colocation",
          [](const Graph& g) { return per_op_str(g, [](const Op& o) { return o.colocation; }); })
      .def_property_readonly(
          "op_ids",
          [](const Graph& g) { return per_op<int64_t>(g, [](const Op& o) { return o.id; }); })
      .def_property_readonly(
          "flops",
          [](const Graph& g) { return per_op<double>(g, [](const Op& o) { return o.flops; }); })
      .def_property_readonly("bytes_accessed",
                             [](const Graph& g) {
                               return per_op<double>(g,
                                                     [](const Op& o) { return o.bytes_accessed; });
                             })
      .def_property_readonly("param_bytes",
                             [](const Graph& g) {
                               return per_op<int64_t>(g, [](const Op& o) { return o.param_bytes; });
                             })
      .def_property_readonly("optimizer_bytes",
                             [](const Graph& g) {
                               return per_op<int64_t>(
                                   g, [](const Op& o) { return o.optimizer_bytes; });
                             })
      .def_property_readonly("output_bytes",
                             [](const Graph& g) {
                               return per_op<int64_t>(g,
                                                      [](const Op& o) { return o.output_bytes(); });
                             })
      .def_property_readonly("temp_bytes",
                             [](const Graph& g) {
                               return per_op<int64_t>(g, [](const Op& o) { return o.temp_bytes; });
                             })
      .def_property_readonly(
          "edge_index",
          [](const Graph& g) {
            pb::array_t<int64_t> a({pb::ssize_t{2}, static_cast<pb::ssize_t>(g.num_edges())});
            int64_t* v = a.mutable_data();
            for (int64_t e = 0; e < g.num_edges(); ++e) {
              v[e] = g.edges()[e].src;
              v[g.num_edges() + e] = g.edges()[e].dst;
            }
            return a;
          },
          "(2, E) int64: source and destination op of every data edge")
      .def_property_readonly("edge_bytes",
                             [](const Graph& g) {
                               std::vector<int64_t> b;
                               b.reserve(g.edges().size());
                               for (const Edge& e : g.edges()) b.push_back(e.bytes);
                               return to_array(b);
                             })
      .def_property_readonly("topo_order", [](const Graph& g) { return to_array(g.topo_order()); })
      .def("find_op", &Graph::find_op, pb::arg("name"), "Dense index of the op, -1 when absent.")
      .def(
          "summary", [](const Graph& g) { return summary_dict(g); },
          "`gdp info --json`'s figures (without a cluster).")
      .def(
          "to_json", [](const Graph& g) { return graph_to_json(g); }, "gdp-graph JSON text")
      .def(
          "save",
          [](const Graph& g, const pb::handle& path) {
            write_graph_file(g, as_path(path, "path"));
          },
          pb::arg("path"), "Writes gdp-graph JSON atomically.")
      .def("__repr__", [](const Graph& g) {
        return "<gdp.Graph '" + g.name + "': " + std::to_string(g.num_ops()) + " ops, " +
               std::to_string(g.num_edges()) + " edges>";
      });

  pb::class_<Cluster, std::shared_ptr<Cluster>>(m, "Cluster", "Devices, switches and links.")
      .def_property_readonly("name", [](const Cluster& c) { return c.name; })
      .def_property_readonly("num_devices", &Cluster::num_devices)
      .def("__len__", &Cluster::num_devices)
      .def_property_readonly("device_names",
                             [](const Cluster& c) {
                               std::vector<std::string> r;
                               for (const auto& d : c.devices) r.push_back(d.name);
                               return r;
                             })
      .def_property_readonly("device_kinds",
                             [](const Cluster& c) {
                               std::vector<std::string> r;
                               for (const auto& d : c.devices) r.push_back(d.kind);
                               return r;
                             })
      .def_property_readonly("memory_bytes",
                             [](const Cluster& c) {
                               std::vector<int64_t> r;
                               for (const auto& d : c.devices) r.push_back(d.memory_bytes);
                               return to_array(r);
                             })
      .def_property_readonly("link_names",
                             [](const Cluster& c) {
                               std::vector<std::string> r;
                               for (int32_t l = 0; l < c.num_directed_links(); ++l)
                                 r.push_back(c.directed_link_name(l));
                               return r;
                             })
      .def(
          "to_json", [](const Cluster& c) { return cluster_to_json(c); }, "cluster JSON text")
      .def("__repr__", [](const Cluster& c) {
        return "<gdp.Cluster '" + c.name + "': " + std::to_string(c.num_devices()) + " devices>";
      });

  pb::class_<CostModel, std::shared_ptr<CostModel>>(
      m, "Profile", "A device profile for the cost model (efficiencies per op class).")
      .def(pb::init<>(), "The built-in defaults (docs/cost-model.md).");

  m.def(
      "load_graph",
      [](const pb::handle& path, const std::string& optimizer) {
        PipeDreamOptions o;
        if (!parse_optimizer(optimizer, &o.optimizer))
          throw InputError("optimizer: expected sgd, momentum or adam, got '" + optimizer + "'");
        const std::string p = as_path(path, "path");
        pb::gil_scoped_release release;
        return std::make_shared<Graph>(read_graph_file(p, o));
      },
      pb::arg("path"), pb::arg("optimizer") = "adam",
      "Reads a gdp-graph JSON file or a PipeDream profile (detected from content; the optimizer "
      "sets a PipeDream import's state bytes).");
  m.def(
      "parse_graph",
      [](const std::string& text, const std::string& source) {
        pb::gil_scoped_release release;
        return std::make_shared<Graph>(parse_graph_json(text, source));
      },
      pb::arg("text"), pb::arg("source") = "<string>", "Parses gdp-graph JSON text.");
  m.def(
      "generate",
      [](const std::string& model, const pb::kwargs& options) {
        datasets::GenOptions given;
        for (const auto& [k, v] : options) {
          const std::string name = pb::str(k).cast<std::string>();
          datasets::set_option(given, name, option_text(name, v));
        }
        pb::gil_scoped_release release;
        return std::make_shared<Graph>(datasets::generate(model, given));
      },
      pb::arg("model"),
      "A generated training graph, as `gdp gen MODEL --option value`: generate('gnmt', "
      "layers=2, batch=8). Options not given take the model's defaults; see models().");
  m.def(
      "models",
      []() {
        pb::list r;
        for (const auto& s : datasets::models()) {
          pb::dict opts;
          for (const auto& o : s.options) opts[pb::str(o)] = option_default(s.defaults, o);
          pb::dict d;
          d["name"] = s.name;
          d["summary"] = s.summary;
          d["options"] = opts;
          r.append(d);
        }
        return r;
      },
      "The generators: name, summary and options with their defaults (as `gdp gen --list`).");
  m.def(
      "load_suite",
      [](const pb::handle& path, const pb::object& names) {
        const std::string p = as_path(path, "path");
        datasets::SuiteSpec spec = datasets::read_suite_spec(p);
        std::vector<const datasets::SuiteEntrySpec*> chosen;
        if (names.is_none()) {
          for (const auto& e : spec.entries) chosen.push_back(&e);
        } else {
          for (const std::string& n : names.cast<std::vector<std::string>>()) {
            auto it = std::find_if(spec.entries.begin(), spec.entries.end(),
                                   [&](const auto& e) { return e.name == n; });
            if (it == spec.entries.end()) {
              std::string known;
              for (const auto& e : spec.entries) known += (known.empty() ? "" : ", ") + e.name;
              throw InputError(p + ": no entry '" + n + "' (entries: " + known + ")");
            }
            chosen.push_back(&*it);
          }
        }
        pb::list r;
        for (const auto* e : chosen) {
          datasets::SuiteEntry x;
          try {
            pb::gil_scoped_release release;
            x = datasets::materialize(*e);
          } catch (const InputError& err) {
            throw InputError(p + ": entry \"" + e->name + "\": " + err.what());
          }
          pb::dict d;
          d["name"] = x.name;
          d["graph"] = std::make_shared<Graph>(std::move(x.graph));
          d["cluster"] = std::make_shared<Cluster>(std::move(x.cluster));
          d["cluster_name"] = x.cluster_name;
          pb::dict pl;
          for (const auto& [label, placement] : x.placements)
            pl[pb::str(label)] = to_array(placement.device);
          d["placements"] = pl;
          r.append(d);
        }
        return r;
      },
      pb::arg("path"), pb::arg("names") = pb::none(),
      "The entries of a suite file (all, or those named), each a dict: name, graph, cluster, "
      "cluster_name, placements (label -> array).");
  m.def(
      "info",
      [](const pb::handle& graph, const pb::handle& cluster, const pb::handle& profile) {
        GraphPtr g = as_graph(graph);
        pb::dict d = summary_dict(*g);
        if (!cluster.is_none()) {
          ClusterPtr c = as_cluster(cluster);
          CostPtr cost = as_cost(profile);
          StepBound b;
          int64_t memory = 0;
          {
            pb::gil_scoped_release release;
            Simulator sim(*g, *c, *cost);
            b = step_time_lower_bound(sim);
            memory = memory_lower_bound_bytes(*g);
          }
          d["cluster"] = is_pathlike(cluster) ? as_path(cluster, "cluster") : c->name;
          d["lower_bound_s"] = b.bound_s;
          d["critical_path_s"] = b.critical_path_s;
          d["work_bound_s"] = b.work_s;
          d["memory_bound_bytes"] = memory;
          d["min_devices"] = fewest_devices_holding(*c, memory);
        } else if (!profile.is_none()) {
          throw InputError("info: a profile needs a cluster");
        }
        return d;
      },
      pb::arg("graph"), pb::arg("cluster") = pb::none(), pb::arg("profile") = pb::none(),
      "`gdp info --json`'s figures; with a cluster also the step-time lower bound and the "
      "memory every placement holds at once (memory_bound_bytes, min_devices).");

  m.def(
      "cluster",
      [](const pb::handle& spec) { return std::const_pointer_cast<Cluster>(as_cluster(spec)); },
      pb::arg("spec"),
      "A cluster preset ('v100x4-nvlink', 'dgx1-v100', ...) or cluster JSON file.");
  m.def(
      "parse_cluster",
      [](const std::string& text, const std::string& source) {
        return std::make_shared<Cluster>(parse_cluster_json(text, source));
      },
      pb::arg("text"), pb::arg("source") = "<string>", "Parses cluster JSON text.");
  m.def(
      "cluster_presets",
      []() {
        std::vector<std::string> r = cluster_preset_examples();
        for (const auto& x : cluster_machine_presets())
          if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
        return r;
      },
      "Example presets and the machine presets (as `gdp cluster --list`; the grammar "
      "<kind>x<count>-<topology> gives more).");
  m.def(
      "load_profile",
      [](const pb::handle& path) {
        return std::make_shared<CostModel>(CostModel::from_json_file(as_path(path, "path")));
      },
      pb::arg("path"), "A device profile JSON file (gdp calibrate's output, sim/profiles/).");
  m.def(
      "parse_profile",
      [](const std::string& text, const std::string& source) {
        return std::make_shared<CostModel>(CostModel::from_json_text(text, source));
      },
      pb::arg("text"), pb::arg("source") = "<string>", "Parses device profile JSON text.");

  m.def(
      "read_placement",
      [](const pb::handle& path, const pb::handle& graph, const pb::handle& devices) {
        GraphPtr g = as_graph(graph);
        return to_array(read_placement_file(as_path(path, "path"), *g, devices_of(devices)).device);
      },
      pb::arg("path"), pb::arg("graph"), pb::arg("devices"),
      "A gdp-placement file as a device per op (int32); devices: a cluster or a device count.");
  m.def(
      "placement_to_json",
      [](const pb::handle& placement, const pb::handle& graph, const pb::handle& devices) {
        GraphPtr g = as_graph(graph);
        return placement_to_json(as_placement(placement), *g, devices_of(devices));
      },
      pb::arg("placement"), pb::arg("graph"), pb::arg("devices"), "gdp-placement JSON text.");
  m.def(
      "write_placement",
      [](const pb::handle& path, const pb::handle& placement, const pb::handle& graph,
         const pb::handle& devices) {
        GraphPtr g = as_graph(graph);
        write_placement_file(as_placement(placement), *g, devices_of(devices),
                             as_path(path, "path"));
      },
      pb::arg("path"), pb::arg("placement"), pb::arg("graph"), pb::arg("devices"),
      "Writes a gdp-placement file atomically.");
}

}  // namespace gdp::py
