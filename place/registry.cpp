// The method registry, option preparation and the one entry point that runs a method.
#include "place/registry.h"

#include <cstdio>
#include <stdexcept>

#include "core/error.h"

namespace gdp::place {

void Registry::add(MethodInfo m) {
  if (m.name.empty()) throw std::logic_error("placement method registered without a name");
  if (!m.make) throw std::logic_error("placement method '" + m.name + "' has no factory");
  if (find(m.name)) throw std::logic_error("placement method '" + m.name + "' registered twice");
  methods_.push_back(std::move(m));
}

const MethodInfo* Registry::find(const std::string& name) const {
  for (const auto& m : methods_)
    if (m.name == name) return &m;
  return nullptr;
}

const MethodInfo& Registry::get(const std::string& name) const {
  if (const MethodInfo* m = find(name)) return *m;
  std::string known;
  for (const auto& m : methods_) known += (known.empty() ? "" : ", ") + m.name;
  throw UsageError("unknown method '" + name + "' (known placement methods: " + known + ")");
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> r;
  for (const auto& m : methods_) r.push_back(m.name);
  return r;
}

Registry& registry() {
  static Registry r = [] {
    Registry x;
    register_builtin_methods(x);
    return x;
  }();
  return r;
}

PreparedMethod prepare(const Registry& r, const std::string& method,
                       const nlohmann::json& user_options, const std::string& options_source) {
  PreparedMethod p;
  p.info = &r.get(method);
  p.options = resolve_options(method, p.info->options, user_options, options_source);
  // Factories check what the option table cannot (cross-option rules, names of other
  // methods): build the placer once here so that such errors come before anything runs.
  p.info->make(p.options);
  return p;
}

PlaceResult place(const PreparedMethod& m, const Problem& problem, const Budget& budget,
                  uint64_t seed, const ProgressFn& progress) {
  if (!m.info) throw std::logic_error("place: method not prepared");
  Run run(problem, m.info->name, budget, seed, progress);
  std::unique_ptr<Placer> placer = m.info->make(m.options);
  PlaceResult r;
  r.placement = placer->place(run);
  if (static_cast<int64_t>(r.placement.device.size()) != problem.graph().num_ops())
    throw std::logic_error(m.info->name + ": returned a placement of " +
                           std::to_string(r.placement.device.size()) + " ops for a graph of " +
                           std::to_string(problem.graph().num_ops()));
  r.report.method = m.info->name;
  r.report.options = m.options.json();
  r.report.seed = seed;
  r.report.samples = run.samples();
  r.report.wall_s = run.elapsed_s();
  r.report.note = run.note();
  r.report.best_step_s = run.best_step_s();
  r.report.curve = run.curve();
  return r;
}

std::string describe_methods(const Registry& r) {
  std::string out;
  char buf[512];
  for (const auto& m : r.methods()) {
    std::snprintf(buf, sizeof buf, "%-14s %s%s\n", m.name.c_str(), m.description.c_str(),
                  m.search ? " [search: spends the sample/seconds budget]" : "");
    out += buf;
    if (m.options.empty()) out += "  (no options)\n";
    for (const auto& o : m.options) {
      std::string range;
      if (o.type == OptionType::integer || o.type == OptionType::number) {
        auto b = [](double v) {
          char t[32];
          std::snprintf(t, sizeof t, "%.15g", v);
          return std::string(t);
        };
        range = "[" + b(o.min) + ", " + b(o.max) + "]";
      } else if (!o.choices.empty()) {
        for (const auto& c : o.choices) range += (range.empty() ? "" : "|") + c;
      }
      std::snprintf(buf, sizeof buf, "  %-16s %-8s default %-10s %-18s %s\n", o.name.c_str(),
                    option_type_name(o.type), o.default_value.dump().c_str(), range.c_str(),
                    o.help.c_str());
      out += buf;
    }
  }
  return out;
}

}  // namespace gdp::place
