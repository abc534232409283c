// Measured step against the simulator's prediction (validate/validate.h).
#include "validate/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"

#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"
#include "validate/cuda_executor.h"
#endif

namespace gdp::validate {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int64_t scaled_bytes(int64_t b, double s) { return std::llround(static_cast<double>(b) / s); }

// Uncontended time of a transfer on its route: the sum of latencies plus bytes over the
// bottleneck bandwidth (cut-through, docs/cost-model.md §3).
double route_time_s(const Cluster& c, int32_t src, int32_t dst, int64_t bytes) {
  return c.route_cost(src, dst).time_s(bytes);
}

std::string transfer_name(const Graph& g, const Cluster& c, const RealTransfer& x) {
  return g.op(x.src_op).name + ":" + std::to_string(x.output) + " -> " +
         c.devices[x.dst_device].name;
}

}  // namespace

double ClassComparison::rel_error() const {
  return measured_s > 0 ? (predicted_s - measured_s) / measured_s : kNaN;
}

void check_backend(const std::string& backend) {
  if (backend == "cpu") return;
  if (backend != "cuda") throw InputError("--backend: expected cpu or cuda, got '" + backend + "'");
#ifdef GDP_HAVE_CUDA
  if (cuda::cuda_device_count() == 0)
    throw InputError("--backend cuda: no GPU is visible (" + cuda::cuda_last_error_string() +
                     "); use --backend cpu");
#else
  throw InputError(
      "--backend cuda: this build has no CUDA backend (nvcc was not found at build time); use "
      "--backend cpu");
#endif
}

Graph scale_graph(const Graph& g, double scale) {
  if (!(scale >= 1) || !std::isfinite(scale))
    throw InputError("--scale: expected a number >= 1, got " + std::to_string(scale));
  if (scale == 1) return g;
  Graph out;
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "/%g", scale);
  out.name = g.name + suffix;
  for (Op op : g.ops()) {
    op.flops /= scale;
    op.bytes_accessed /= scale;
    for (TensorSpec& t : op.outputs) t.bytes = scaled_bytes(t.bytes, scale);
    op.param_bytes = scaled_bytes(op.param_bytes, scale);
    op.optimizer_bytes = scaled_bytes(op.optimizer_bytes, scale);
    op.temp_bytes = scaled_bytes(op.temp_bytes, scale);
    op.measured.clear();  // a measured time does not scale
    out.add_op(std::move(op));
  }
  for (const Edge& e : g.edges())
    out.add_edge(e.src, e.src_output, e.dst, scaled_bytes(e.bytes, scale));
  out.finalize();
  return out;
}

Cluster nominal_cpu_cluster(int32_t devices) {
  if (devices < 1)
    throw InputError("--devices: expected at least 1, got " + std::to_string(devices));
  Cluster c;
  c.name = "cpu" + std::to_string(devices) + "-nominal";
  for (int32_t i = 0; i < devices; ++i) {
    DeviceSpec d;
    d.name = "cpu" + std::to_string(i);
    d.kind = "cpu";
    d.peak_fp32_flops = 50e9;
    d.peak_fp16_flops = 50e9;  // no faster half precision on a CPU core
    d.mem_bandwidth_Bps = 20e9;
    d.memory_bytes = int64_t{8} << 30;
    d.launch_overhead_s = 2e-6;
    c.devices.push_back(d);
  }
  for (int32_t i = 0; i < devices; ++i)
    for (int32_t j = i + 1; j < devices; ++j) c.links.push_back(LinkSpec{i, j, 10e9, 1e-6});
  c.finalize();
  return c;
}

SimResult real_run_trace(const RealStep& r, const std::vector<RealTransfer>& transfers,
                         const Graph& g, const Placement& p, const Cluster& c) {
  SimResult s;
  s.step_time_s = r.step_s;
  const int32_t D = c.num_devices();
  for (int32_t i = 0; i < g.num_ops(); ++i)
    s.trace.push_back(TraceEvent{g.op(i).name, p.device[i], r.op_start_s[i], r.op_end_s[i]});
  for (size_t x = 0; x < transfers.size(); ++x) {
    const RealTransfer& t = transfers[x];
    const auto& route = c.route(t.src_device, t.dst_device);
    s.trace.push_back(TraceEvent{transfer_name(g, c, t), D + (route.empty() ? 0 : route[0]),
                                 r.xfer_start_s[x], r.xfer_end_s[x]});
  }
  s.transfers = static_cast<int32_t>(transfers.size());
  s.ops_run = g.num_ops();
  return s;
}

namespace {

// The real runs of one backend: constructs its executor, sets the executor's figures in `rep`
// (whose prediction `rep.sim` is already there), runs the warm-up and returns the timed runs.
using RealRunner = std::function<std::vector<RealStep>(ValidationReport& rep)>;

ValidationReport validate_with(const Graph& g, const Placement& p, const Cluster& c,
                               const CostModel& cost, const ValidateOptions& opt,
                               const RealRunner& run_real);

// opt.warmup untimed steps, then opt.runs timed ones, of a CpuExecutor or CudaExecutor.
template <typename Executor>
std::vector<RealStep> timed_runs(Executor& exec, const ValidateOptions& opt) {
  for (int32_t k = 0; k < opt.warmup; ++k) exec.run_step();
  std::vector<RealStep> runs;
  for (int32_t k = 0; k < opt.runs; ++k) runs.push_back(exec.run_step());
  return runs;
}

}  // namespace

ValidationReport validate_cpu(const Graph& g, const Placement& p, const Cluster& c,
                              const CostModel& cost, const ValidateOptions& opt) {
  return validate_with(g, p, c, cost, opt, [&](ValidationReport& rep) {
    CpuExecutor exec(g, p, c, opt.exec);
    rep.backend = "cpu";
    rep.device_threads = exec.device_threads();
    rep.copy_threads = exec.copy_threads();
    rep.buffer_bytes = exec.buffer_bytes();
    rep.transfers = exec.transfers();
    return timed_runs(exec, opt);
  });
}

ValidationReport validate_cuda(const Graph& g, const Placement& p, const Cluster& c,
                               const CostModel& cost, const ValidateOptions& opt) {
  check_backend("cuda");
#ifdef GDP_HAVE_CUDA
  return validate_with(g, p, c, cost, opt, [&](ValidationReport& rep) {
    CudaExecOptions eo;
    eo.max_buffer_bytes = opt.exec.max_buffer_bytes;
    if (static_cast<int32_t>(rep.sim.op_start_s.size()) == g.num_ops())
      eo.priority = rep.sim.op_start_s;  // the simulator's schedule, as far as it is topological
    CudaExecutor exec(g, p, c, eo);
    rep.backend = "cuda";
    rep.gpus = exec.gpus();
    rep.device_threads = exec.compute_streams();
    rep.copy_threads = exec.copy_streams();
    rep.buffer_bytes = exec.buffer_bytes();
    rep.transfers = exec.transfers();
    return timed_runs(exec, opt);
  });
#else
  (void)g, (void)p, (void)c, (void)cost, (void)opt;
  throw InputError("--backend cuda: this build has no CUDA backend");
#endif
}

namespace {

ValidationReport validate_with(const Graph& g, const Placement& p, const Cluster& c,
                               const CostModel& cost, const ValidateOptions& opt,
                               const RealRunner& run_real) {
  if (opt.runs < 1)
    throw InputError("--runs: expected at least 1, got " + std::to_string(opt.runs));
  if (opt.warmup < 0)
    throw InputError("--warmup: expected at least 0, got " + std::to_string(opt.warmup));
  ValidationReport rep;
  rep.graph_name = g.name;
  rep.ops = g.num_ops();
  rep.devices = c.num_devices();
  rep.hardware_threads = std::thread::hardware_concurrency();

  // The prediction first: it also checks the placement against the graph and the cluster.
  SimOptions so;
  so.queue_policy = opt.exec.queue_policy;
  so.record_trace = true;
  so.record_op_times = true;
  Simulator sim(g, c, cost, so);
  rep.sim = sim.run(p);
  if (rep.sim.status == SimStatus::malformed_placement)
    throw InputError("placement does not fit: " + rep.sim.reason);
  rep.predicted_valid = rep.sim.valid;
  rep.predicted_s = rep.sim.step_time_s;  // out of memory: the time ignoring capacity

  // The real runs.
  std::vector<RealStep> runs = run_real(rep);
  for (const RealStep& r : runs) rep.step_s.push_back(r.step_s);
  rep.measured_median_s = median(rep.step_s);
  rep.measured_min_s = *std::min_element(rep.step_s.begin(), rep.step_s.end());
  rep.measured_max_s = *std::max_element(rep.step_s.begin(), rep.step_s.end());
  size_t mid = 0;  // the run closest to the median
  for (size_t k = 1; k < runs.size(); ++k)
    if (std::abs(runs[k].step_s - rep.measured_median_s) <
        std::abs(runs[mid].step_s - rep.measured_median_s))
      mid = k;
  rep.median_run = runs[mid];
  rep.rel_error = rep.measured_median_s > 0 && std::isfinite(rep.predicted_s)
                      ? (rep.predicted_s - rep.measured_median_s) / rep.measured_median_s
                      : kNaN;

  // Per class: the median duration of each op over the runs, summed, against the simulator's
  // op time on the op's device.
  const auto classes = all_op_classes();
  std::vector<ClassComparison> rows(classes.size());
  for (size_t k = 0; k < classes.size(); ++k) rows[k].name = op_class_name(classes[k]);
  std::vector<double> d(runs.size());
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    for (size_t k = 0; k < runs.size(); ++k) d[k] = runs[k].op_end_s[i] - runs[k].op_start_s[i];
    ClassComparison& row = rows[static_cast<size_t>(classify_op(g.op(i).type))];
    row.count++;
    row.measured_s += median(d);
    row.predicted_s += sim.op_time_s(i, p.device[i]);
  }
  for (ClassComparison& row : rows)
    if (row.count > 0) rep.classes.push_back(row);
  if (!rep.transfers.empty()) {
    // copies: the link's occupancy, memcpy durations against bytes / bottleneck bandwidth.
    // delivery: from the producer's end to the tensor's arrival at its destination (waiting
    // for the link or the copy thread, latency, the copy), real against simulated.
    const int32_t D = c.num_devices();
    std::map<std::pair<std::string, int32_t>, double> hop_end;  // (name, row) -> end
    for (const TraceEvent& e : rep.sim.trace)
      if (e.row >= D) hop_end[{e.name, e.row}] = e.end_s;
    ClassComparison copies, delivery;
    copies.name = "copies";
    delivery.name = "delivery";
    for (size_t x = 0; x < rep.transfers.size(); ++x) {
      const RealTransfer& t = rep.transfers[x];
      const auto& route = c.route(t.src_device, t.dst_device);
      const double bw = c.route_cost(t.src_device, t.dst_device).bottleneck_Bps;
      for (size_t k = 0; k < runs.size(); ++k)
        d[k] = runs[k].xfer_end_s[x] - runs[k].xfer_start_s[x];
      copies.count++;
      copies.measured_s += median(d);
      copies.predicted_s += static_cast<double>(t.bytes) / bw;
      for (size_t k = 0; k < runs.size(); ++k)
        d[k] = runs[k].xfer_end_s[x] - runs[k].op_end_s[t.src_op];
      delivery.count++;
      delivery.measured_s += median(d);
      // The simulated arrival: the last hop's end plus its latency (docs/cost-model.md §3);
      // without a simulated schedule (an invalid placement), the uncontended route time.
      auto it = hop_end.find({transfer_name(g, c, t), D + route.back()});
      if (it != hop_end.end() && !rep.sim.op_end_s.empty())
        delivery.predicted_s +=
            it->second + c.links[route.back() / 2].latency_s - rep.sim.op_end_s[t.src_op];
      else
        delivery.predicted_s += route_time_s(c, t.src_device, t.dst_device, t.bytes);
    }
    rep.classes.push_back(copies);
    rep.classes.push_back(delivery);
  }
  return rep;
}

}  // namespace

std::string report_to_json(const ValidationReport& r) {
  using nlohmann::json;
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json j = json::object();
  j["graph"] = r.graph_name;
  j["ops"] = r.ops;
  j["devices"] = r.devices;
  j["transfers"] = r.transfers.size();
  j["measured_step_s"] = {{"median", num(r.measured_median_s)},
                          {"min", num(r.measured_min_s)},
                          {"max", num(r.measured_max_s)},
                          {"runs", r.step_s}};
  j["predicted_step_s"] = num(r.predicted_s);
  j["predicted_valid"] = r.predicted_valid;
  j["predicted_reason"] = r.sim.reason;
  j["rel_error"] = num(r.rel_error);
  json rows = json::array();
  for (const ClassComparison& c : r.classes)
    rows.push_back({{"class", c.name},
                    {"count", c.count},
                    {"measured_s", num(c.measured_s)},
                    {"predicted_s", num(c.predicted_s)},
                    {"rel_error", num(c.rel_error())}});
  j["classes"] = rows;
  j["backend"] = r.backend;
  j["device_threads"] = r.device_threads;
  j["copy_threads"] = r.copy_threads;
  j["hardware_threads"] = r.hardware_threads;
  j["buffer_bytes"] = r.buffer_bytes;
  return j.dump(2) + "\n";
}

}  // namespace gdp::validate
