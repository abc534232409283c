// `gdp validate`: runs a placed graph on this machine's devices (CPU threads as devices) and
// prints the measured step time beside the simulator's prediction (validate/validate.h).
#include <cmath>
#include <cstdio>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"
#include "place/registry.h"
#include "sim/simulator.h"
#include "validate/validate.h"

namespace gdp::cli {

namespace {

// A placement file, or the name of a method (run with its default options and seed 1).
Placement placement_from(const std::string& spec, const Graph& g, const Cluster& c,
                         const CostModel& cost) {
  const place::Registry& reg = place::registry();
  if (!reg.find(spec)) return read_placement_file(spec, g, c.num_devices());
  place::Problem problem(g, c, cost);
  return place::place(place::prepare(reg, spec), problem, place::Budget(), 1).placement;
}

std::string percent(double rel) {
  if (!std::isfinite(rel)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * rel);
  return buf;
}

}  // namespace

int cmd_validate(int argc, char** argv) {
  Args a(argc, argv,
         {"--graph", "--placement", "--cluster", "--devices", "--profile", "--backend", "--runs",
          "--warmup", "--scale", "--max-memory-mib", "--queue", "--spin-us", "--trace-out",
          "--sim-trace-out"},
         {"--json"});
  if (a.help()) {
    std::printf(
        "usage: gdp validate --graph G --placement P [--cluster C | --devices N] [--profile F]\n"
        "                    [--backend cpu|cuda] [--runs N] [--warmup N] [--scale S]\n"
        "                    [--max-memory-mib M] [--queue fifo|topo] [--spin-us U]\n"
        "                    [--trace-out REAL.json] [--sim-trace-out SIM.json] [--json]\n\n"
        "Runs one training step of graph G, placed by P, for real on this machine and prints the\n"
        "measured step time (median, min, max over the runs) beside the simulator's prediction\n"
        "for the same graph, cluster and profile, with the relative error in total and per op\n"
        "class. Backend cpu: each device of the cluster is a worker thread, each op runs a real\n"
        "kernel of its class and size, the kernels `gdp calibrate` timed (a GEMM of the op's\n"
        "flops for matmul, an im2col convolution for conv, a streaming kernel chosen by op type\n"
        "over its bytes for the others), each cross-device tensor a memcpy on a copy thread per\n"
        "device pair (docs/validation.md).\n"
        "  --graph G          gdp-graph JSON or PipeDream profile\n"
        "  --placement P      placement JSON or a method (default options, seed 1), e.g.\n"
        "                     round-robin\n"
        "  --cluster C        cluster JSON (e.g. from `gdp calibrate --cluster-out`) or preset;\n"
        "                     default: N nominal (uncalibrated) CPU devices, see --devices\n"
        "  --devices N        devices of the default cluster (default 2; not with --cluster)\n"
        "  --profile F        device profile JSON for the prediction (default: built-in)\n"
        "  --backend B        cpu (default), or cuda: device d of the cluster on GPU d %% (GPUs),\n"
        "                     its ops in order on that GPU's stream (cuBLAS GEMMs, the library's\n"
        "                     element-wise/reduction kernels), cross-device tensors as peer\n"
        "                     copies (host round trips without peer access), CUDA-event times;\n"
        "                     needs a CUDA build and a GPU (else exit 1)\n"
        "  --runs N           timed runs (default 5); --warmup N untimed runs first (default 1)\n"
        "  --scale S          divide every op's flops and bytes and every edge's bytes by S >= 1\n"
        "                     (default 1) to run a large workload on a laptop; the prediction\n"
        "                     is computed on the same scaled graph\n"
        "  --max-memory-mib M refuse a real run needing more buffers (default 4096)\n"
        "  --queue Q          ready-queue order per device, for both runs: fifo (default), topo\n"
        "  --spin-us U        an idle thread polls for work U us before it sleeps (default 50;\n"
        "                     0 sleeps at once: fewer cycles taken, slower wake-ups)\n"
        "  --trace-out F      Chrome trace of the real run (the median one)\n"
        "  --sim-trace-out F  Chrome trace of the simulated run\n"
        "  --json             print the report as one JSON object\n"
        "Exit status: 0 ok; 1 bad input (files, placement, backend, memory limit); 2 bad usage.\n");
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  const std::string backend = a.get("--backend", "cpu");
  validate::check_backend(backend);
  if (a.has("--cluster") && a.has("--devices"))
    throw UsageError("--devices sets the size of the default cluster; not with --cluster");
  validate::ValidateOptions opt;
  opt.runs = static_cast<int32_t>(a.integer("--runs", 5, 1, 100000));
  opt.warmup = static_cast<int32_t>(a.integer("--warmup", 1, 0, 100000));
  opt.exec.max_buffer_bytes = a.integer("--max-memory-mib", 4096, 1, int64_t{1} << 30) << 20;
  const std::string q = a.get("--queue", "fifo");
  if (q == "fifo")
    opt.exec.queue_policy = QueuePolicy::fifo;
  else if (q == "topo")
    opt.exec.queue_policy = QueuePolicy::topo_priority;
  else
    throw UsageError("--queue expects fifo or topo, got '" + q + "'");
  opt.exec.spin_s = a.number("--spin-us", 50, 0, 1e6) * 1e-6;
  const double scale = a.number("--scale", 1, 1, 1e15);
  const int32_t devices = static_cast<int32_t>(a.integer("--devices", 2, 1, 1024));

  const Graph g = validate::scale_graph(read_graph_file(a.require("--graph")), scale);
  const Cluster c = a.has("--cluster") ? read_cluster(a.get("--cluster"))
                                       : validate::nominal_cpu_cluster(devices);
  const CostModel cost =
      a.has("--profile") ? CostModel::from_json_file(a.get("--profile")) : CostModel();
  const Placement p = placement_from(a.require("--placement"), g, c, cost);

  validate::ValidationReport r = backend == "cuda" ? validate::validate_cuda(g, p, c, cost, opt)
                                                   : validate::validate_cpu(g, p, c, cost, opt);
  if (a.has("--trace-out"))
    write_text_file_atomic(
        a.get("--trace-out"),
        trace_to_chrome_json(validate::real_run_trace(r.median_run, r.transfers, g, p, c), c));
  if (a.has("--sim-trace-out"))
    write_text_file_atomic(a.get("--sim-trace-out"), trace_to_chrome_json(r.sim, c));
  if (a.has("--json")) {
    std::printf("%s", validate::report_to_json(r).c_str());
    return 0;
  }

  std::printf("graph %s (%d ops) on %s (%d devices), backend %s, scale %g\n", g.name.c_str(),
              g.num_ops(), c.name.c_str(), c.num_devices(), backend.c_str(), scale);
  if (backend == "cuda") {
    std::printf(
        "real run: %d GPU(s), %d compute + %d copy streams, %.1f MiB of buffers, %d warm-up + "
        "%d timed runs\n",
        r.gpus, r.device_threads, r.copy_threads, r.buffer_bytes / 1048576.0, opt.warmup, opt.runs);
    if (r.gpus < c.num_devices())
      std::printf(
          "note: the cluster has %d devices and %d GPU(s) are used: devices share GPUs (device d "
          "on GPU d %% %d), so their ops serialise there\n",
          c.num_devices(), r.gpus, r.gpus);
  } else {
    std::printf(
        "real run: %d device + %d copy threads on %u hardware threads, %.1f MiB of "
        "buffers, %d warm-up + %d timed runs\n",
        r.device_threads, r.copy_threads, r.hardware_threads, r.buffer_bytes / 1048576.0,
        opt.warmup, opt.runs);
  }
  if (backend == "cpu" && r.hardware_threads > 0 &&
      static_cast<unsigned>(r.device_threads) > r.hardware_threads)
    std::printf(
        "note: more device threads than hardware threads: devices share cores, so the "
        "measured times include that contention\n");
  std::printf("measured step   %.6f s (median; min %.6f, max %.6f)\n", r.measured_median_s,
              r.measured_min_s, r.measured_max_s);
  std::printf("predicted step  %.6f s (profile: %s)\n", r.predicted_s,
              a.has("--profile") ? a.get("--profile").c_str() : "built-in default");
  if (!r.predicted_valid)
    std::printf("note: the simulator finds the placement invalid: %s\n", r.sim.reason.c_str());
  std::printf("relative error  %s ((predicted - measured) / measured)\n",
              percent(r.rel_error).c_str());
  std::printf("\n%-12s %7s %14s %14s %10s\n", "class", "count", "measured_s", "predicted_s",
              "rel_error");
  for (const validate::ClassComparison& row : r.classes)
    std::printf("%-12s %7d %14.6f %14.6f %10s\n", row.name.c_str(), row.count, row.measured_s,
                row.predicted_s, percent(row.rel_error()).c_str());
  std::printf(
      "(op classes: sums of the ops' median real durations vs the simulator's op times;\n"
      " copies: memcpy durations vs bytes / link bandwidth; delivery: producer's end to the\n"
      " tensor's arrival, real vs simulated)\n");
  return 0;
}

}  // namespace gdp::cli
