// Strict reader of the suite format and its materialization into graphs and clusters.
#include "datasets/suite.h"

#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"

namespace gdp::datasets {

namespace {

namespace fs = std::filesystem;

std::string resolve(const std::string& base_dir, const std::string& p) {
  fs::path q(p);
  if (q.is_absolute() || base_dir.empty()) return p;
  return (fs::path(base_dir) / q).lexically_normal().string();
}

// "" when file f exists, else why not: "does not exist", or why the system cannot look it up
// (a component longer than NAME_MAX, a directory without permission; std::filesystem's
// throwing overloads would raise a filesystem_error out of the reader).
std::string missing_file(const std::string& f) {
  std::error_code ec;
  if (fs::exists(f, ec)) return "";
  return ec ? "cannot be looked up (" + ec.message() + ")" : "does not exist";
}

// A cluster is a preset when it parses as one; otherwise a file relative to the suite.
std::string resolve_cluster(const StrictJson& sj, const std::string& base_dir,
                            const std::string& value, const std::string& path) {
  try {
    make_cluster_preset(value);
    return value;
  } catch (const InputError&) {
  }
  std::string f = resolve(base_dir, value);
  const std::string why = missing_file(f);
  if (!why.empty())
    sj.fail(path,
            "expected a cluster preset (e.g. \"v100x4-nvlink\") or an existing cluster "
            "file, got \"" +
                value + "\"" + (why == "does not exist" ? "" : "; the file " + why));
  return f;
}

}  // namespace

SuiteSpec parse_suite_json(const std::string& text, const std::string& source_name,
                           const std::string& base_dir) {
  StrictJson sj(source_name);
  nlohmann::json root = sj.parse(text);
  if (!root.is_object()) sj.fail("", "expected a JSON object (a gdp-suite)");
  sj.check_keys(root, "", {"format", "version", "name", "entries"},
                {"description", "method_options"});
  sj.check_header(root, "gdp-suite", kSuiteFormatVersion);
  SuiteSpec s;
  s.name = sj.string(root, "name", "");
  if (s.name.empty()) sj.fail("name", "expected a non-empty suite name");
  if (root.contains("description")) s.description = sj.string(root, "description", "");
  if (root.contains("method_options")) {
    const nlohmann::json& mo = sj.object(root, "method_options", "");
    for (auto it = mo.begin(); it != mo.end(); ++it)
      if (!it.value().is_object())
        sj.fail(json_path("method_options", it.key().c_str()),
                "expected an object of method options");
    s.method_options = mo;
  }
  const nlohmann::json& es = sj.array(root, "entries", "");
  if (es.empty()) sj.fail("entries", "expected at least one entry");
  std::set<std::string> names;
  for (size_t i = 0; i < es.size(); ++i) {
    const std::string p = json_path("entries", i);
    const nlohmann::json& je = es[i];
    if (!je.is_object()) sj.fail(p, "expected an object");
    sj.check_keys(je, p, {"name", "cluster"}, {"model", "options", "graph", "placements"});
    SuiteEntrySpec e;
    e.name = sj.string(je, "name", p);
    if (e.name.empty()) sj.fail(json_path(p, "name"), "expected a non-empty name");
    if (!names.insert(e.name).second)
      sj.fail(json_path(p, "name"), "duplicate entry name \"" + e.name + "\"");
    bool has_model = je.contains("model"), has_graph = je.contains("graph");
    if (has_model == has_graph)
      sj.fail(p, "expected exactly one of \"model\" (a generator call) or \"graph\" (a file)");
    if (has_model) {
      e.model = sj.string(je, "model", p);
      if (!find_model(e.model)) {
        std::string known;
        for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
        sj.fail(json_path(p, "model"), "unknown model \"" + e.model + "\" (known: " + known + ")");
      }
      if (je.contains("options")) {
        const nlohmann::json& jo = sj.object(je, "options", p);
        const std::string op = json_path(p, "options");
        for (auto it = jo.begin(); it != jo.end(); ++it) {
          const std::string q = json_path(op, it.key().c_str());
          std::string value;
          if (it.key() == "family") {
            if (!it.value().is_string()) sj.fail(q, "expected a string");
            value = it.value().get<std::string>();
          } else {
            value = std::to_string(sj.integer_value(it.value(), q, 0));
          }
          try {
            set_option(e.options, it.key(), value);
          } catch (const InputError& err) {
            sj.fail(q, err.what());
          }
        }
      }
      try {
        resolve_options(e.model, e.options);
      } catch (const InputError& err) {
        sj.fail(json_path(p, "options"), err.what());
      }
    } else {
      if (je.contains("options"))
        sj.fail(json_path(p, "options"), "options only go with \"model\"");
      e.graph_path = resolve(base_dir, sj.string(je, "graph", p));
      const std::string why = missing_file(e.graph_path);
      if (!why.empty())
        sj.fail(json_path(p, "graph"), "graph file \"" + e.graph_path + "\" " + why);
    }
    e.cluster = resolve_cluster(sj, base_dir, sj.string(je, "cluster", p), json_path(p, "cluster"));
    if (je.contains("placements")) {
      const nlohmann::json& jp = sj.object(je, "placements", p);
      for (auto it = jp.begin(); it != jp.end(); ++it) {
        const std::string q = json_path(json_path(p, "placements"), it.key().c_str());
        if (!it.value().is_string()) sj.fail(q, "expected a placement file path");
        std::string f = resolve(base_dir, it.value().get<std::string>());
        const std::string why = missing_file(f);
        if (!why.empty()) sj.fail(q, "placement file \"" + f + "\" " + why);
        e.placements[it.key()] = f;
      }
    }
    s.entries.push_back(std::move(e));
  }
  return s;
}

SuiteSpec read_suite_spec(const std::string& path) {
  return parse_suite_json(read_text_file(path), path, fs::path(path).parent_path().string());
}

SuiteEntry materialize(const SuiteEntrySpec& e) {
  SuiteEntry r;
  r.name = e.name;
  r.graph = e.model.empty() ? read_graph_file(e.graph_path) : generate(e.model, e.options);
  if (!r.graph.finalized()) r.graph.finalize();
  r.cluster = read_cluster(e.cluster);
  r.cluster_name = e.cluster;
  for (const auto& [label, f] : e.placements)
    r.placements[label] = read_placement_file(f, r.graph, r.cluster.num_devices());
  return r;
}

std::vector<SuiteEntry> load_suite(const std::string& path) {
  SuiteSpec s = read_suite_spec(path);
  std::vector<SuiteEntry> r;
  r.reserve(s.entries.size());
  for (const auto& e : s.entries) {
    try {
      r.push_back(materialize(e));
    } catch (const InputError& err) {
      throw InputError(path + ": entry \"" + e.name + "\": " + err.what());
    }
  }
  return r;
}

}  // namespace gdp::datasets
