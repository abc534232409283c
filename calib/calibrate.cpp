// The calibration runs (CPU benchmarks + fit, profile fit + held-out evaluation), their text
// reports and the checked writers.
#include "calib/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/io.h"

#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace gdp::calib {

namespace {

constexpr double kDefaultLaunchS = 5e-6;  // the presets' launch overhead (docs/cost-model.md)

std::string strf(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

std::string pct(double x) { return strf("%.1f%%", 100 * x); }

std::string time_str(double s) {
  if (s >= 1) return strf("%.3f s", s);
  if (s >= 1e-3) return strf("%.3f ms", s * 1e3);
  if (s >= 1e-6) return strf("%.3f us", s * 1e6);
  return strf("%.1f ns", s * 1e9);
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{1} << 34;
}

std::string worst_lines(const Evaluation& ev) {
  std::string out;
  for (const ClassEvaluation& ce : ev.classes) {
    if (ce.worst.empty()) continue;
    out += std::string("  ") + op_class_name(ce.op_class) + ":\n";
    for (const SampleError& e : ce.worst) {
      char buf[320];
      std::snprintf(buf, sizeof buf, "    %+7.1f%%  %-60s measured %s, predicted %s\n",
                    100 * e.rel_error, e.label.c_str(), time_str(e.measured_s).c_str(),
                    time_str(e.predicted_s).c_str());
      out += buf;
    }
  }
  return out;
}

const ClassFit* class_fit(const OpFit* fit, OpClass c) {
  if (!fit) return nullptr;
  for (const ClassFit& cf : fit->classes)
    if (cf.op_class == c) return &cf;
  return nullptr;
}

const char* short_term(TermFit t) {
  switch (t) {
    case TermFit::fitted:
      return "fit";
    case TermFit::at_peak:
      return "peak";
    case TermFit::not_binding:
      return "bound";
    case TermFit::no_data:
      return "base";
  }
  return "?";
}

}  // namespace

std::string error_table(const Evaluation& before, const Evaluation& after, const OpFit* fit) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-12s %6s  %-13s %-13s  %9s %9s  %9s %9s\n", "class", "n",
                fit ? "compute_eff" : "", fit ? "memory_eff" : "", "before", "", "after", "");
  out += buf;
  std::snprintf(buf, sizeof buf, "%-12s %6s  %-13s %-13s  %9s %9s  %9s %9s\n", "", "", "", "",
                "median", "p90", "median", "p90");
  out += buf;
  for (size_t k = 0; k < after.classes.size(); ++k) {
    const ClassEvaluation& b = before.classes[k];
    const ClassEvaluation& a = after.classes[k];
    const ClassFit* cf = class_fit(fit, a.op_class);
    std::string ce, me;
    if (cf) {
      ce = strf("%.4f", cf->compute_efficiency) + " " + short_term(cf->compute);
      me = strf("%.4f", cf->memory_efficiency) + " " + short_term(cf->memory);
    }
    if (a.error.n == 0) {
      std::snprintf(buf, sizeof buf, "%-12s %6d  %-13s %-13s  %9s %9s  %9s %9s\n",
                    op_class_name(a.op_class), 0, ce.c_str(), me.c_str(), "-", "-", "-", "-");
    } else {
      std::snprintf(buf, sizeof buf, "%-12s %6lld  %-13s %-13s  %9s %9s  %9s %9s\n",
                    op_class_name(a.op_class), static_cast<long long>(a.error.n), ce.c_str(),
                    me.c_str(), pct(b.error.median).c_str(), pct(b.error.p90).c_str(),
                    pct(a.error.median).c_str(), pct(a.error.p90).c_str());
    }
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%-12s %6lld  %-13s %-13s  %9s %9s  %9s %9s\n", "all",
                static_cast<long long>(after.overall.n), "", "", pct(before.overall.median).c_str(),
                pct(before.overall.p90).c_str(), pct(after.overall.median).c_str(),
                pct(after.overall.p90).c_str());
  out += buf;
  if (fit)
    out +=
        "(eff: fit = fitted; peak = clamped at 1; bound = never binding, the data only bound it; "
        "base = no data, the default kept)\n";
  return out;
}

void write_profile_file(const CostModel& model, const std::string& path) {
  write_text_file_atomic(path, model.to_json());
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) CostModel::from_json_file(path);
}

void write_cluster_file(const Cluster& cluster, const std::string& path) {
  write_text_file_atomic(path, cluster_to_json(cluster));
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) parse_cluster_json(read_text_file(path), path);
}

// ---- CPU

Cluster make_cpu_cluster(int32_t devices, const DeviceSpec& dev, const LinkFit& link) {
  if (devices < 1) throw InputError("cpu cluster: expected at least one device");
  Cluster c;
  c.name = "cpux" + std::to_string(devices) + "-threads";
  for (int32_t d = 0; d < devices; ++d) {
    DeviceSpec s = dev;
    s.name = "cpu" + std::to_string(d);
    c.devices.push_back(s);
  }
  for (int32_t a = 0; a < devices; ++a)
    for (int32_t b = a + 1; b < devices; ++b)
      c.links.push_back(LinkSpec{a, b, link.bandwidth_Bps, link.latency_s});
  c.finalize();
  return c;
}

CpuCalibration calibrate_cpu(const CpuCalibrationOptions& opt) {
  CpuCalibration c;
  c.size = opt.size;
  CpuBenchOptions bo;
  bo.size = opt.size;
  bo.progress = opt.progress;
  c.bench = run_cpu_benchmarks(bo);
  const int32_t n =
      opt.devices > 0
          ? opt.devices
          : std::max<int32_t>(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  c.device.name = "cpu";
  c.device.kind = "cpu";
  c.device.peak_fp32_flops = c.bench.peak_flops;
  c.device.peak_fp16_flops = c.bench.peak_flops;  // no faster half-precision path on the CPU
  c.device.mem_bandwidth_Bps = c.bench.bandwidth_Bps;
  c.device.memory_bytes = std::max<int64_t>(1, physical_memory_bytes() / n);
  c.device.launch_overhead_s = kDefaultLaunchS;
  c.before = evaluate(c.bench.ops, CostModel(), c.device);
  OpFitOptions fo;
  fo.roofline_max = opt.roofline_max;
  c.fit = fit_ops(c.bench.ops, c.device, fo);
  c.device.launch_overhead_s = c.fit.launch_overhead_s;
  c.model.set_profile(c.fit.profile);
  c.after = evaluate(c.bench.ops, c.model, c.device);
  try {
    c.link = fit_link(c.bench.copies);
  } catch (const InputError& e) {
    // Timings too noisy to separate latency from bandwidth (a loaded machine, the tiny size):
    // the largest copy's rate as the bandwidth, no latency, and the report says so.
    const CopySample* big = nullptr;
    for (const CopySample& s : c.bench.copies)
      if (s.time_s > 0 && (!big || s.bytes > big->bytes)) big = &s;
    if (!big || !(big->bytes > 0)) throw;
    c.link = LinkFit();
    c.link.bandwidth_Bps = big->bytes / big->time_s;
    c.link.note = std::string(e.what()) + "; fell back to the largest copy's rate, latency 0";
  }
  c.cluster = make_cpu_cluster(n, c.device, c.link);
  return c;
}

std::string cpu_report(const CpuCalibration& c) {
  std::string out;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "CPU calibration (%s): %zu op measurements + %zu thread copies in %.1f s, one "
                "thread per device\n",
                bench_size_name(c.size), c.bench.ops.size(), c.bench.copies.size(), c.bench.wall_s);
  out += buf;
  std::snprintf(buf, sizeof buf, "peak flop/s      %.2f GFLOP/s   (best GEMM: %s)\n",
                c.bench.peak_flops / 1e9, c.bench.peak_from.c_str());
  out += buf;
  std::snprintf(buf, sizeof buf,
                "memory bandwidth %.2f GB/s      (best streaming copy: %s; largest copy %.2f "
                "GB/s; bytes read + written)\n",
                c.bench.bandwidth_Bps / 1e9, c.bench.bandwidth_from.c_str(),
                c.bench.dram_bandwidth_Bps / 1e9);
  out += buf;
  std::snprintf(buf, sizeof buf,
                "dispatch         %s (1-element add through a kernel table, measured)\n"
                "launch overhead  %s (fitted; the cluster's launch_overhead_us)\n",
                time_str(c.bench.dispatch_s).c_str(), time_str(c.fit.launch_overhead_s).c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "roofline         %s\n\n",
                c.fit.profile.roofline_max ? "max(compute, memory)" : "compute + memory");
  out += buf;
  out +=
      "relative error of the cost model on the measurements: before = the default profile\n"
      "with the measured peaks and a 5 us launch overhead; after = the fitted profile\n";
  out += error_table(c.before, c.after, &c.fit);
  out += "\nworst-fitting shapes after the fit:\n" + worst_lines(c.after);
  std::snprintf(buf, sizeof buf,
                "\nlinks (thread-to-thread copy, t = latency + bytes / bandwidth): latency %s, "
                "bandwidth %.2f GB/s; error median %s, p90 %s over %lld sizes\n",
                time_str(c.link.latency_s).c_str(), c.link.bandwidth_Bps / 1e9,
                pct(c.link.error.median).c_str(), pct(c.link.error.p90).c_str(),
                static_cast<long long>(c.link.error.n));
  out += buf;
  if (!c.link.note.empty()) out += "  NOTE: " + c.link.note + "\n";
  for (const SampleError& e : c.link.worst) {
    std::snprintf(buf, sizeof buf, "    %+7.1f%%  %-30s measured %s, predicted %s\n",
                  100 * e.rel_error, e.label.c_str(), time_str(e.measured_s).c_str(),
                  time_str(e.predicted_s).c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "cluster          %s: %d devices of kind \"cpu\", %zu links\n",
                c.cluster.name.c_str(), c.cluster.num_devices(), c.cluster.links.size());
  out += buf;
  return out;
}

// ---- profiles

ProfileCalibration calibrate_from_profiles(const std::vector<std::string>& files,
                                           const std::vector<std::string>& eval_files,
                                           const ProfileFitOptions& opt) {
  if (files.empty()) throw InputError("calibrate: no profile to fit");
  ProfileCalibration c;
  if (opt.cluster) {
    const DeviceSpec* hit = nullptr;
    for (const DeviceSpec& d : opt.cluster->devices)
      if (d.kind == opt.device_kind || opt.device_kind.empty()) {
        hit = &d;
        break;
      }
    if (!hit)
      throw InputError("calibrate: cluster '" + opt.cluster->name + "' has no device of kind '" +
                       opt.device_kind + "'");
    c.device = *hit;
  } else {
    c.device = device_preset(opt.device_kind);
  }
  for (const std::string& f : files) {
    c.inputs.push_back(read_profile_samples(f, c.device.kind));
    for (const OpSample& s : c.inputs.back().samples) c.samples.push_back(s);
  }
  bool any = false;
  for (const OpSample& s : c.samples) any = any || s.time_s > 0;
  if (!any)
    throw InputError(files[0] + (files.size() > 1 ? " (and the other files)" : "") +
                     ": no op with a positive measured time for device kind '" + c.device.kind +
                     "'");
  c.before = evaluate(c.samples, CostModel(), c.device);
  OpFitOptions fo;
  fo.roofline_max = opt.roofline_max;
  fo.robust = opt.robust;
  c.fit_options = fo;
  const bool has_fp16 = c.device.peak_fp16_flops > 0;
  if (opt.peak == PeakChoice::fp16 && !has_fp16)
    throw InputError("calibrate: device kind '" + c.device.kind + "' has no fp16 peak");
  OpFit fp32, fp16;
  if (opt.peak != PeakChoice::fp16) {
    fo.use_fp16_peak = false;
    fp32 = fit_ops(c.samples, c.device, fo);
    c.objective_fp32 = fp32.objective;
  }
  if (opt.peak != PeakChoice::fp32 && has_fp16) {
    fo.use_fp16_peak = true;
    fp16 = fit_ops(c.samples, c.device, fo);
    c.objective_fp16 = fp16.objective;
  }
  if (c.objective_fp16 >= 0 && (c.objective_fp32 < 0 || c.objective_fp16 < c.objective_fp32))
    c.fit = fp16;
  else
    c.fit = fp32;
  DeviceSpec fitted = c.device;
  fitted.launch_overhead_s = c.fit.launch_overhead_s;
  c.model.set_profile(c.fit.profile);
  c.after = evaluate(c.samples, c.model, fitted);
  for (const std::string& f : eval_files) {
    HeldOut h;
    h.samples = read_profile_samples(f, c.device.kind);
    h.before = evaluate(h.samples.samples, CostModel(), c.device);
    h.after = evaluate(h.samples.samples, c.model, fitted);
    c.held_out.push_back(std::move(h));
  }
  return c;
}

std::string profile_report(const ProfileCalibration& c) {
  std::string out;
  char buf[400];
  int64_t zero = 0, unmeasured = 0, inputs = 0;
  for (const ProfileSamples& p : c.inputs) {
    zero += p.zero_time;
    unmeasured += p.unmeasured;
    inputs += p.inputs;
    std::snprintf(buf, sizeof buf, "input %s (%s, graph %s): %zu measured ops, %lld at 0 s\n",
                  p.source.c_str(), p.pipedream ? "PipeDream profile" : "gdp graph",
                  p.graph.c_str(), p.samples.size(), static_cast<long long>(p.zero_time));
    out += buf;
  }
  std::snprintf(
      buf, sizeof buf,
      "fitted on %lld ops (%lld measured at 0 s skipped, %lld without a measurement, %lld "
      "PipeDream Input layers left out: their time is the data loader's)\n",
      static_cast<long long>(c.fit.used), static_cast<long long>(zero),
      static_cast<long long>(unmeasured), static_cast<long long>(inputs));
  out += buf;
  std::snprintf(buf, sizeof buf,
                "device kind %s: peak fp32 %.2f TFLOP/s, fp16 %.2f TFLOP/s, memory %.0f GB/s\n",
                c.device.kind.c_str(), c.device.peak_fp32_flops / 1e12,
                c.device.peak_fp16_flops / 1e12, c.device.mem_bandwidth_Bps / 1e9);
  out += buf;
  std::string objs;
  if (c.objective_fp32 >= 0) objs += strf("fp32 %.4g", c.objective_fp32);
  if (c.objective_fp16 >= 0)
    objs += (objs.empty() ? "" : ", ") + strf("fp16 %.4g", c.objective_fp16);
  std::snprintf(
      buf, sizeof buf, "flops priced at the %s peak (the fit's loss, %s: %s)\n",
      c.fit.profile.use_fp16_peak ? "fp16" : "fp32",
      c.fit_options.robust ? "sum |log(predicted / measured)|" : "sum of squared relative errors",
      objs.c_str());
  out += buf;
  std::snprintf(
      buf, sizeof buf, "launch overhead  %s -> %s (fitted; the cluster's launch_overhead_us)\n",
      time_str(c.device.launch_overhead_s).c_str(), time_str(c.fit.launch_overhead_s).c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "roofline         %s\n\n",
                c.fit.profile.roofline_max ? "max(compute, memory)" : "compute + memory");
  out += buf;
  out +=
      "relative error of the cost model on the measured ops: before = the default profile,\n"
      "after = the fitted profile and launch overhead\n";
  out += error_table(c.before, c.after, &c.fit);
  out += "\nworst-fitting ops after the fit:\n" + worst_lines(c.after);
  for (const HeldOut& h : c.held_out) {
    std::snprintf(buf, sizeof buf, "\nheld out (not fitted on): %s (graph %s), %zu measured ops\n",
                  h.samples.source.c_str(), h.samples.graph.c_str(), h.samples.samples.size());
    out += buf;
    out += error_table(h.before, h.after, nullptr);
  }
  return out;
}

// ---- CUDA

void check_cuda_backend() {
#ifdef GDP_HAVE_CUDA
  if (cuda::cuda_device_count() == 0)
    throw InputError("backend cuda: no GPU is visible (" + cuda::cuda_last_error_string() +
                     "); use --backend cpu, or --from-profile with per-layer times measured on "
                     "the GPU");
#else
  throw InputError(
      "backend cuda: this build has no CUDA backend (nvcc was not found at build time); use "
      "--backend cpu, or --from-profile with per-layer times measured on the GPU");
#endif
}

std::string cuda_device_kind(const std::string& cuda_name) {
  std::string up = cuda_name;
  for (char& ch : up)
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
  for (const char* kind : {"H200", "H100", "A100", "V100", "P100", "K80"})
    if (up.find(kind) != std::string::npos) return kind;
  return cuda_name;
}

#ifdef GDP_HAVE_CUDA
namespace {

// fit_link, or (timings that do not separate latency from bandwidth) the largest copy's rate
// with no latency, saying so in the note.
LinkFit fit_link_or_rate(const std::vector<CopySample>& samples) {
  try {
    return fit_link(samples);
  } catch (const InputError& e) {
    const CopySample* big = nullptr;
    for (const CopySample& s : samples)
      if (s.time_s > 0 && (!big || s.bytes > big->bytes)) big = &s;
    if (!big || !(big->bytes > 0)) throw;
    LinkFit l;
    l.bandwidth_Bps = big->bytes / big->time_s;
    l.note = std::string(e.what()) + "; fell back to the largest copy's rate, latency 0";
    return l;
  }
}

}  // namespace
#endif

CudaCalibration calibrate_cuda(const CudaCalibrationOptions& opt) {
  check_cuda_backend();
#ifdef GDP_HAVE_CUDA
  CudaCalibration c;
  c.size = opt.size;
  CudaBenchOptions bo;
  bo.size = opt.size;
  bo.progress = opt.progress;
  try {
    c.bench = run_cuda_benchmarks(bo);
  } catch (const std::runtime_error& e) {
    throw InputError(std::string("backend cuda: the GPU benchmarks failed: ") + e.what());
  }
  const std::string kind = cuda_device_kind(c.bench.names[c.bench.device]);
  try {
    c.device = device_preset(kind);
  } catch (const InputError&) {
    c.peaks_measured = true;
    c.device = DeviceSpec();
    c.device.kind = kind;
    c.device.peak_fp32_flops = c.bench.peak_flops;
    c.device.peak_fp16_flops = c.bench.peak_flops;  // fp32 GEMMs only were measured
    c.device.mem_bandwidth_Bps = c.bench.bandwidth_Bps;
  }
  c.device.name = "gpu" + std::to_string(c.bench.device);
  c.device.memory_bytes = c.bench.memory_bytes[c.bench.device];
  c.device.launch_overhead_s = kDefaultLaunchS;
  c.before = evaluate(c.bench.ops, CostModel(), c.device);
  OpFitOptions fo;
  fo.roofline_max = opt.roofline_max;
  c.fit = fit_ops(c.bench.ops, c.device, fo);
  c.device.launch_overhead_s = c.fit.launch_overhead_s;
  c.model.set_profile(c.fit.profile);
  c.after = evaluate(c.bench.ops, c.model, c.device);
  std::vector<CopySample> host = c.bench.h2d;
  host.insert(host.end(), c.bench.d2h.begin(), c.bench.d2h.end());
  c.host_link = fit_link_or_rate(host);
  for (int a = 0; a < c.bench.gpus; ++a)
    for (int b = a + 1; b < c.bench.gpus; ++b) {
      PeerLinkFit pl;
      pl.a = a;
      pl.b = b;
      std::vector<CopySample> both;
      bool any = false;
      for (const PeerCopies& pc : c.bench.peers)
        if ((pc.src == a && pc.dst == b) || (pc.src == b && pc.dst == a)) {
          both.insert(both.end(), pc.copies.begin(), pc.copies.end());
          pl.direct = pc.direct;
          any = true;
        }
      if (!any) continue;
      pl.link = fit_link_or_rate(both);
      c.peers.push_back(pl);
    }
  // The cluster: every GPU of the machine as the measured kind (the ops were measured on one
  // GPU), a "host" switch linked to each GPU by the fitted host copies, and a direct link per
  // measured GPU pair (an NVLink or PCIe peer copy, or a host round trip: what a copy between
  // the two took).
  Cluster& cl = c.cluster;
  cl.name = std::to_string(c.bench.gpus) + "x" + kind + "-measured";
  for (int d = 0; d < c.bench.gpus; ++d) {
    DeviceSpec s = c.device;
    s.name = "gpu" + std::to_string(d);
    s.memory_bytes = c.bench.memory_bytes[d];
    cl.devices.push_back(s);
  }
  cl.switches.push_back("host");
  const double host_bw = c.host_link.bandwidth_Bps > 0 ? c.host_link.bandwidth_Bps : 1e9;
  for (int d = 0; d < c.bench.gpus; ++d)
    cl.links.push_back(LinkSpec{d, c.bench.gpus, host_bw, c.host_link.latency_s});
  for (const PeerLinkFit& pl : c.peers)
    if (pl.link.bandwidth_Bps > 0)
      cl.links.push_back(LinkSpec{pl.a, pl.b, pl.link.bandwidth_Bps, pl.link.latency_s});
  cl.finalize();
  return c;
#else
  (void)opt;
  throw InputError("backend cuda: this build has no CUDA backend");
#endif
}

std::string cuda_report(const CudaCalibration& c) {
  std::string out;
  char buf[400];
  const CudaBenchResult& b = c.bench;
  std::snprintf(
      buf, sizeof buf,
      "GPU calibration (%s): %zu op measurements on gpu%d (%s, %d SMs), %zu host and "
      "%zu peer copies in %.1f s\n",
      bench_size_name(c.size), b.ops.size(), b.device,
      b.names.empty() ? "?" : b.names[b.device].c_str(), b.sm_count, b.h2d.size() + b.d2h.size(),
      [&] {
        size_t n = 0;
        for (const PeerCopies& p : b.peers) n += p.copies.size();
        return n;
      }(),
      b.wall_s);
  out += buf;
  std::snprintf(
      buf, sizeof buf, "device kind      %s (%s)\n", c.device.kind.c_str(),
      c.peaks_measured ? "not a known kind: peaks measured" : "peaks from the kind sheet");
  out += buf;
  std::snprintf(buf, sizeof buf,
                "peaks            fp32 %.2f TFLOP/s, memory %.0f GB/s (profile's reference)\n",
                c.device.peak_fp32_flops / 1e12, c.device.mem_bandwidth_Bps / 1e9);
  out += buf;
  std::snprintf(buf, sizeof buf, "measured         best GEMM %.2f TFLOP/s (%s)\n",
                b.peak_flops / 1e12, b.peak_from.c_str());
  out += buf;
  std::snprintf(buf, sizeof buf,
                "                 best D2D copy %.0f GB/s (%s; bytes read + written)\n",
                b.bandwidth_Bps / 1e9, b.bandwidth_from.c_str());
  out += buf;
  std::snprintf(buf, sizeof buf,
                "launch           %s (1-element kernel back to back, measured)\n"
                "launch overhead  %s (fitted; the cluster's launch_overhead_us)\n",
                time_str(b.launch_s).c_str(), time_str(c.fit.launch_overhead_s).c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "roofline         %s\n\n",
                c.fit.profile.roofline_max ? "max(compute, memory)" : "compute + memory");
  out += buf;
  out +=
      "relative error of the cost model on the measurements: before = the default profile\n"
      "with the kind's peaks and a 5 us launch overhead; after = the fitted profile\n";
  out += error_table(c.before, c.after, &c.fit);
  out += "\nworst-fitting shapes after the fit:\n" + worst_lines(c.after);
  auto link_line = [&](const std::string& what, const LinkFit& l) {
    std::snprintf(buf, sizeof buf,
                  "%s: latency %s, bandwidth %.2f GB/s; error median %s, p90 %s over %lld "
                  "copies\n",
                  what.c_str(), time_str(l.latency_s).c_str(), l.bandwidth_Bps / 1e9,
                  pct(l.error.median).c_str(), pct(l.error.p90).c_str(),
                  static_cast<long long>(l.error.n));
    out += buf;
    if (!l.note.empty()) out += "  NOTE: " + l.note + "\n";
  };
  out += "\nlinks (t = latency + bytes / bandwidth):\n";
  link_line("  host <-> gpu (h2d + d2h, pinned)", c.host_link);
  for (const PeerLinkFit& p : c.peers)
    link_line("  gpu" + std::to_string(p.a) + " <-> gpu" + std::to_string(p.b) +
                  (p.direct ? " (peer)" : " (via host)"),
              p.link);
  if (b.gpus >= 2 && !b.peers.empty()) {
    out += "\npeer bandwidth matrix (GB/s, largest copy; row = source):\n        ";
    for (int d = 0; d < b.gpus; ++d) {
      std::snprintf(buf, sizeof buf, " %8s", ("gpu" + std::to_string(d)).c_str());
      out += buf;
    }
    out += "\n";
    for (int a = 0; a < b.gpus; ++a) {
      std::snprintf(buf, sizeof buf, "%-8s", ("gpu" + std::to_string(a)).c_str());
      out += buf;
      for (int d = 0; d < b.gpus; ++d) {
        double bw = 0;
        for (const PeerCopies& p : b.peers)
          if (p.src == a && p.dst == d && !p.copies.empty() && p.copies.back().time_s > 0)
            bw = p.copies.back().bytes / p.copies.back().time_s;
        std::snprintf(buf, sizeof buf, " %8s", a == d ? "-" : strf("%.1f", bw / 1e9).c_str());
        out += buf;
      }
      out += "\n";
    }
  }
  std::snprintf(buf, sizeof buf,
                "cluster          %s: %d devices of kind \"%s\", a host switch, %zu links\n",
                c.cluster.name.c_str(), c.cluster.num_devices(), c.device.kind.c_str(),
                c.cluster.links.size());
  out += buf;
  return out;
}

}  // namespace gdp::calib
