// Every placement method of the registry by name (`gdp place`): options as a dict (or JSON
// text / file), a budget of samples and seconds, a seed. Also the placement units the searches
// and the policies decide on (colocation groups), the trainer's reference placement and its
// reward (rl/run/reward.h), so that a Python learner scores placements as the C++ trainer does.
#include <cmath>

#include "convert.h"
#include "core/error.h"
#include "eval/evaluate.h"
#include "place/registry.h"
#include "place/units.h"
#include "rl/run/learner.h"
#include "rl/run/reward.h"

namespace gdp::py {

namespace {

pb::dict method_dict(const place::MethodInfo& m) {
  pb::list opts;
  for (const auto& o : m.options) {
    pb::dict d;
    d["name"] = o.name;
    d["type"] = std::string(place::option_type_name(o.type));
    d["default"] = from_json(o.default_value);
    d["min"] = o.min;
    d["max"] = o.max;
    d["choices"] = o.choices;
    d["help"] = o.help;
    opts.append(d);
  }
  pb::dict d;
  d["name"] = m.name;
  d["description"] = m.description;
  d["search"] = m.search;
  d["options"] = opts;
  return d;
}

// The result of gdp.place: `gdp place --json`'s figures and the placement.
pb::dict place_dict(const place::PlaceResult& res, const eval::Record& r, uint64_t seed) {
  pb::dict d;
  d["placement"] = to_array(res.placement.device);
  d["method"] = res.report.method;
  d["options"] = from_json(res.report.options);
  d["seed"] = seed;
  d["valid"] = r.valid();
  d["validity"] = std::string(eval::validity_name(r.validity));
  d["step_time_s"] = r.step_time_s;  // inf when invalid
  d["reason"] = r.reason;
  d["samples"] = res.report.samples;
  d["wall_s"] = res.report.wall_s;
  d["note"] = res.report.note;
  d["best_step_s"] = res.report.best_step_s;
  d["peak_memory_bytes"] = to_array(r.peak_memory_bytes);
  pb::list curve;
  for (const auto& p : res.report.curve) {
    pb::dict c;
    c["samples"] = p.samples;
    c["wall_s"] = p.wall_s;
    c["best_step_s"] = p.best_step_s;
    curve.append(c);
  }
  d["curve"] = curve;
  return d;
}

uint64_t as_seed(int64_t seed) {
  if (seed < 0)
    throw InputError("seed: expected a non-negative integer, got " + std::to_string(seed));
  return static_cast<uint64_t>(seed);
}

}  // namespace

void bind_placers(pb::module_& m) {
  m.def(
      "methods", []() { return place::registry().names(); },
      "The placement methods of the registry, in registration order (`gdp place --list`).");
  m.def(
      "method_info",
      [](const std::string& name) { return method_dict(place::registry().get(name)); },
      pb::arg("method"), "A method's description and options (name, type, default, range, help).");
  m.def(
      "describe_methods", []() { return place::describe_methods(place::registry()); },
      "`gdp place --list`'s text.");

  m.def(
      "place",
      [](const pb::handle& graph, const pb::handle& cluster, const std::string& method,
         const pb::handle& options, const pb::handle& budget_arg, pb::object samples,
         pb::object seconds, int64_t seed, const pb::handle& profile) {
        nlohmann::json user;
        std::string source;
        if (pb::isinstance<pb::str>(options)) {  // as --options: JSON object text or a file
          const std::string arg = options.cast<std::string>();
          user = place::parse_options_arg(arg);
          const size_t k = arg.find_first_not_of(" \t\r\n");
          source = k != std::string::npos && arg[k] == '{' ? "options" : arg;
        } else if (!options.is_none()) {
          if (!pb::isinstance<pb::dict>(options))
            throw InputError("options: expected a dict, JSON text or a file, got " +
                             pb::str(pb::type::of(options).attr("__name__")).cast<std::string>());
          user = to_json(options);
          source = "options";
        }
        const place::PreparedMethod pm = place::prepare(place::registry(), method, user, source);
        // budget={"samples": N, "seconds": S} (or budget=N) is samples=N, seconds=S.
        if (!budget_arg.is_none()) {
          if (!samples.is_none() || !seconds.is_none())
            throw InputError("give budget or samples / seconds, not both");
          if (pb::isinstance<pb::dict>(budget_arg)) {
            for (const auto& [k, v] : budget_arg.cast<pb::dict>()) {
              const std::string key = pb::str(k).cast<std::string>();
              if (key == "samples")
                samples = pb::reinterpret_borrow<pb::object>(v);
              else if (key == "seconds")
                seconds = pb::reinterpret_borrow<pb::object>(v);
              else
                throw InputError("budget: unknown key '" + key + "' (known: samples, seconds)");
            }
          } else {
            samples = pb::reinterpret_borrow<pb::object>(budget_arg);
          }
        }
        place::Budget budget;
        if (!samples.is_none()) {
          if (!pb::isinstance<pb::int_>(samples) || pb::isinstance<pb::bool_>(samples))
            throw InputError("samples: expected a positive integer, got " +
                             pb::repr(samples).cast<std::string>());
          budget.samples = samples.cast<int64_t>();
          if (budget.samples < 1)
            throw InputError("samples: expected a positive integer, got " +
                             std::to_string(budget.samples));
        }
        if (!seconds.is_none()) {
          if (!(pb::isinstance<pb::int_>(seconds) || pb::isinstance<pb::float_>(seconds)) ||
              pb::isinstance<pb::bool_>(seconds))
            throw InputError("seconds: expected a positive number of seconds, got " +
                             pb::repr(seconds).cast<std::string>());
          budget.seconds = seconds.cast<double>();
          if (!(budget.seconds > 0) || !std::isfinite(budget.seconds))
            throw InputError("seconds: expected a positive number of seconds");
        }
        const uint64_t s = as_seed(seed);
        CostPtr cost = as_cost(profile);
        GraphPtr g = as_graph(graph);
        ClusterPtr c = as_cluster(cluster);
        place::PlaceResult res;
        eval::Record r;
        {
          pb::gil_scoped_release release;
          place::Problem problem(*g, *c, *cost);
          res = place::place(pm, problem, budget, s);
          eval::simulate_into(problem, res.placement, r);
        }
        return place_dict(res, r, s);
      },
      pb::arg("graph"), pb::arg("cluster"), pb::arg("method"), pb::arg("options") = pb::none(),
      pb::arg("budget") = pb::none(), pb::arg("samples") = pb::none(),
      pb::arg("seconds") = pb::none(), pb::arg("seed") = 1, pb::arg("profile") = pb::none(),
      "Runs a placement method (as `gdp place --json`): a dict with placement (int32, a device "
      "per op), step_time_s (inf when invalid), valid, validity, reason, samples, wall_s, note, "
      "resolved options, curve. samples / seconds: the budget (None: none); or budget= "
      "{'samples': N, 'seconds': S}.");

  m.def(
      "units",
      [](const pb::handle& graph) {
        GraphPtr g = as_graph(graph);
        const place::Units u = place::Units::colocation(*g);
        pb::dict d;
        d["unit_of"] = to_array(u.unit_of);
        d["first_op"] = to_array(u.first_op);
        d["num_units"] = u.num_units();
        return d;
      },
      pb::arg("graph"),
      "The placement units (place/units.h): a colocation group is one unit, any other op its "
      "own; unit_of (N), first_op (U), units numbered in topological order of their first op.");
  m.def(
      "reference",
      [](const pb::handle& graph, const pb::handle& cluster, const pb::handle& profile,
         int64_t seed) {
        GraphPtr g = as_graph(graph);
        ClusterPtr c = as_cluster(cluster);
        CostPtr cost = as_cost(profile);
        const uint64_t s = as_seed(seed);
        rl::Reference ref;
        {
          pb::gil_scoped_release release;
          place::Problem problem(*g, *c, *cost);
          ref = rl::reference_placement(problem, s, g->name);
        }
        pb::dict d;
        d["placement"] = to_array(ref.placement.device);
        d["step_s"] = ref.step_s;
        d["method"] = ref.method;
        return d;
      },
      pb::arg("graph"), pb::arg("cluster"), pb::arg("profile") = pb::none(), pb::arg("seed") = 1,
      "The trainers' reference placement: human, else single, else round-robin, the first "
      "valid (placement, step_s, method).");
  m.def(
      "reward",
      [](double step_s, double reference_s, double invalid_penalty) {
        return rl::reward_of(step_s, reference_s, rl::RewardConfig{invalid_penalty});
      },
      pb::arg("step_s"), pb::arg("reference_s"),
      pb::arg("invalid_penalty") = rl::RewardConfig().invalid_penalty,
      "The trainers' reward (rl/run/reward.h): -sqrt(step_s / reference_s); invalid_penalty when "
      "step_s is not finite.");
  m.def(
      "rewards",
      [](const pb::array_t<double, pb::array::c_style | pb::array::forcecast>& step_s,
         double reference_s, double invalid_penalty) {
        std::vector<double> t(step_s.data(), step_s.data() + step_s.size());
        return to_array(rl::rewards_of(t, reference_s, rl::RewardConfig{invalid_penalty}));
      },
      pb::arg("step_s"), pb::arg("reference_s"),
      pb::arg("invalid_penalty") = rl::RewardConfig().invalid_penalty,
      "reward() of each step time of an array.");
}

}  // namespace gdp::py
