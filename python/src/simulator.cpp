// gdp.Simulator and gdp.SimResult: one training step of placed graphs, one placement at a time
// or K at once (OpenMP over every core, without the GIL), with the full result (validity and
// reason, per-device busy time and peak memory, link bytes, critical path) and a Chrome trace.
// A placement of the wrong length or with a device outside the cluster raises gdp.InputError
// with the simulator's reason; an out-of-memory or split-colocation placement is a result
// (step time inf, valid False). Only step_times (const, a state per OpenMP thread) runs without
// the GIL; the calls on the simulator's own state hold it, so Python threads may share one.
#include "sim/simulator.h"

#include <omp.h>

#include <limits>

#include "convert.h"
#include "core/error.h"
#include "sim/lower_bound.h"

namespace gdp::py {

namespace {

// A result with what it needs to name devices, links and ops.
struct Result {
  SimResult r;
  GraphPtr g;
  ClusterPtr c;
};

template <typename F>
pb::array_t<int64_t> per_device_i(const Result& x, F f) {
  std::vector<int64_t> v;
  for (const DeviceStats& s : x.r.devices) v.push_back(f(s));
  return to_array(v);
}

class PySimulator {
 public:
  PySimulator(GraphPtr g, ClusterPtr c, CostPtr cost, SimOptions opt)
      : g_(std::move(g)), c_(std::move(c)), cost_(std::move(cost)), opt_(opt) {
    pb::gil_scoped_release release;
    sim_ = std::make_unique<Simulator>(*g_, *c_, *cost_, opt_);
    state_ = sim_->make_state();
  }

  const GraphPtr& graph() const { return g_; }
  const ClusterPtr& cluster() const { return c_; }
  const Simulator& sim() const { return *sim_; }

  // InputError with the simulator's reason when p is malformed (wrong length, device out of
  // range); `which` prefixes the message for one of many placements.
  void check(const Placement& p, const std::string& which) const {
    const int32_t D = c_->num_devices();
    bool ok = static_cast<int64_t>(p.device.size()) == g_->num_ops();
    for (size_t i = 0; ok && i < p.device.size(); ++i) ok = p.device[i] >= 0 && p.device[i] < D;
    if (ok) return;
    const SimResult r = sim_->run(p, *state_);  // builds the reason
    throw InputError(which + r.reason);
  }

  double step_time(const pb::handle& obj, double limit) {
    const Placement p = as_placement(obj);
    check(p, "");
    return sim_->step_time(p, *state_, limit);
  }

  pb::array_t<double> step_times(const pb::handle& obj, const pb::object& limits_obj) {
    const std::vector<Placement> ps = as_placements(obj);
    for (size_t k = 0; k < ps.size(); ++k) check(ps[k], "placements[" + std::to_string(k) + "]: ");
    std::vector<double> limits;
    if (!limits_obj.is_none()) {
      const auto a =
          pb::array_t<double, pb::array::c_style | pb::array::forcecast>::ensure(limits_obj);
      if (!a || a.ndim() != 1 || static_cast<size_t>(a.shape(0)) != ps.size())
        throw InputError("limits: expected " + std::to_string(ps.size()) +
                         " numbers (one per placement), or None");
      limits.assign(a.data(), a.data() + a.shape(0));
    }
    std::vector<double> t;
    {
      pb::gil_scoped_release release;
      t = sim_->step_times(ps, limits);
    }
    return to_array(t);
  }

  Result run(const pb::handle& obj, bool op_times) {
    const Placement p = as_placement(obj);
    check(p, "");
    Result x{SimResult(), g_, c_};
    if (op_times && !opt_.record_op_times) {
      SimOptions o = opt_;
      o.record_op_times = true;
      pb::gil_scoped_release release;
      x.r = Simulator(*g_, *c_, *cost_, o).run(p);
    } else {
      x.r = sim_->run(p, *state_);
    }
    return x;
  }

  std::string trace_json(const pb::handle& obj) {
    const Placement p = as_placement(obj);
    check(p, "");
    // The GIL stays held: trace_sim_ and its internal state serve one call at a time.
    if (!trace_sim_) {
      SimOptions o = opt_;
      o.record_trace = true;
      trace_sim_ = std::make_unique<Simulator>(*g_, *c_, *cost_, o);
    }
    return trace_to_chrome_json(trace_sim_->run(p), *c_);
  }

 private:
  GraphPtr g_;
  ClusterPtr c_;
  CostPtr cost_;
  SimOptions opt_;
  std::unique_ptr<Simulator> sim_;
  std::unique_ptr<SimState> state_;
  std::unique_ptr<Simulator> trace_sim_;  // built on the first trace
};

}  // namespace

void bind_simulator(pb::module_& m) {
  pb::class_<Result>(m, "SimResult", "The simulated step of one placement.")
      .def_property_readonly(
          "step_time_s", [](const Result& x) { return x.r.step_time_s; },
          "end of the last op (s); inf when malformed or split; for an out-"
          "of-memory placement the time ignoring capacity")
      .def_property_readonly("valid", [](const Result& x) { return x.r.valid; })
      .def_property_readonly(
          "status", [](const Result& x) { return std::string(sim_status_name(x.r.status)); })
      .def_property_readonly("reason", [](const Result& x) { return x.r.reason; })
      .def_property_readonly("busy_s",
                             [](const Result& x) {
                               std::vector<double> v;
                               for (const DeviceStats& s : x.r.devices) v.push_back(s.busy_s);
                               return to_array(v);
                             })
      .def_property_readonly("peak_memory_bytes",
                             [](const Result& x) {
                               return per_device_i(
                                   x, [](const DeviceStats& s) { return s.peak_memory_bytes; });
                             })
      .def_property_readonly("resident_bytes",
                             [](const Result& x) {
                               return per_device_i(
                                   x, [](const DeviceStats& s) { return s.resident_bytes; });
                             })
      .def_property_readonly("end_memory_bytes",
                             [](const Result& x) {
                               return per_device_i(
                                   x, [](const DeviceStats& s) { return s.end_memory_bytes; });
                             })
      .def_property_readonly("device_ops",
                             [](const Result& x) {
                               return per_device_i(x, [](const DeviceStats& s) { return s.ops; });
                             })
      .def_property_readonly(
          "link_bytes", [](const Result& x) { return to_array(x.r.link_bytes); },
          "(2 * links) bytes per directed link (Cluster.link_names)")
      .def_property_readonly(
          "critical_path", [](const Result& x) { return to_array(x.r.critical_path); },
          "op indices, first to last")
      .def_property_readonly("critical_path_names",
                             [](const Result& x) {
                               std::vector<std::string> r;
                               for (int32_t i : x.r.critical_path) r.push_back(x.g->op(i).name);
                               return r;
                             })
      .def_property_readonly("transfers", [](const Result& x) { return x.r.transfers; })
      .def_property_readonly("ops_run", [](const Result& x) { return x.r.ops_run; })
      .def_property_readonly(
          "op_start_s", [](const Result& x) { return to_array(x.r.op_start_s); },
          "(N) with run(..., op_times=True), else empty")
      .def_property_readonly("op_end_s", [](const Result& x) { return to_array(x.r.op_end_s); })
      .def(
          "to_json", [](const Result& x) { return sim_result_to_json(x.r, *x.c, *x.g); },
          "`gdp simulate --json`'s text")
      .def(
          "to_dict",
          [](const Result& x) {
            return from_json(nlohmann::ordered_json::parse(sim_result_to_json(x.r, *x.c, *x.g)));
          },
          "`gdp simulate --json` as a dict")
      .def("__repr__", [](const Result& x) {
        return "<gdp.SimResult " + std::string(sim_status_name(x.r.status)) +
               " step_time_s=" + pb::repr(pb::float_(x.r.step_time_s)).cast<std::string>() + ">";
      });

  pb::class_<PySimulator>(m, "Simulator",
                          "The discrete-event simulator of one training step (docs/cost-model.md).")
      .def(pb::init([](const pb::handle& graph, const pb::handle& cluster,
                       const pb::handle& profile, const std::string& queue, bool check_memory) {
             SimOptions o;
             if (!parse_queue_policy(queue, &o.queue_policy))
               throw InputError("queue: expected fifo or topo, got '" + queue + "'");
             o.check_memory = check_memory;
             return std::make_unique<PySimulator>(as_graph(graph), as_cluster(cluster),
                                                  as_cost(profile), o);
           }),
           pb::arg("graph"), pb::arg("cluster"), pb::arg("profile") = pb::none(),
           pb::arg("queue") = "fifo", pb::arg("check_memory") = true,
           "graph: a gdp.Graph or a graph file; cluster: a gdp.Cluster, preset or file; profile: "
           "None (built-in), a gdp.Profile or a profile file; queue: fifo or topo.")
      .def_property_readonly(
          "graph", [](const PySimulator& s) { return std::const_pointer_cast<Graph>(s.graph()); })
      .def_property_readonly(
          "cluster",
          [](const PySimulator& s) { return std::const_pointer_cast<Cluster>(s.cluster()); })
      .def_property_readonly("num_ops", [](const PySimulator& s) { return s.graph()->num_ops(); })
      .def_property_readonly("num_devices",
                             [](const PySimulator& s) { return s.cluster()->num_devices(); })
      .def("step_time", &PySimulator::step_time, pb::arg("placement"),
           pb::arg("limit") = std::numeric_limits<double>::infinity(),
           "Step time (s) of a placement (N ints: a device per op); inf when invalid (out of "
           "memory, split colocation group). With a limit: exact when at most the limit, else "
           "some number above it (the simulation may stop early: a lower bound).")
      .def("step_times", &PySimulator::step_times, pb::arg("placements"),
           pb::arg("limits") = pb::none(),
           "Step times (K) of K placements (K, N), in parallel on every core (OpenMP, "
           "gdp.set_num_threads), without the GIL; limits (K numbers) as step_time's.")
      .def("run", &PySimulator::run, pb::arg("placement"), pb::arg("op_times") = false,
           "The full result: validity and reason, per-device figures, link bytes, critical "
           "path (op_times: also every op's start and end).")
      .def("trace_json", &PySimulator::trace_json, pb::arg("placement"),
           "Chrome trace JSON of the step (`gdp simulate --trace`; opens in Perfetto).")
      .def(
          "op_time",
          [](const PySimulator& s, int32_t op, int32_t device) {
            if (op < 0 || op >= s.graph()->num_ops() || device < 0 ||
                device >= s.cluster()->num_devices())
              throw InputError("op_time: op " + std::to_string(op) + " or device " +
                               std::to_string(device) + " out of range");
            return s.sim().op_time_s(op, device);
          },
          pb::arg("op"), pb::arg("device"), "Time (s) of op on device, as simulated.")
      .def(
          "op_times",
          [](const PySimulator& s) {
            const int32_t N = s.graph()->num_ops(), D = s.cluster()->num_devices();
            pb::array_t<double> a({static_cast<pb::ssize_t>(N), static_cast<pb::ssize_t>(D)});
            double* v = a.mutable_data();
            for (int32_t i = 0; i < N; ++i)
              for (int32_t d = 0; d < D; ++d)
                v[static_cast<int64_t>(i) * D + d] = s.sim().op_time_s(i, d);
            return a;
          },
          "(N, D) op time table (s).")
      .def(
          "lower_bound",
          [](const PySimulator& s) {
            const StepBound b = step_time_lower_bound(s.sim());
            pb::dict d;
            d["lower_bound_s"] = b.bound_s;
            d["critical_path_s"] = b.critical_path_s;
            d["work_bound_s"] = b.work_s;
            return d;
          },
          "The step-time lower bound (`gdp info --cluster`).");

  m.def(
      "set_num_threads",
      [](int n) {
        if (n < 1) throw InputError("set_num_threads: expected n >= 1, got " + std::to_string(n));
        omp_set_num_threads(n);
      },
      pb::arg("n"), "Threads of Simulator.step_times and the placers (OpenMP).");
  m.def("get_num_threads", []() { return omp_get_max_threads(); });
}

}  // namespace gdp::py
