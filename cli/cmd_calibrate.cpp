// `gdp calibrate`: a device profile (and a cluster) from micro-benchmarks of this machine's CPU,
// or fitted to measured per-layer profiles (calib/calibrate.h, docs/calibration.md).
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "calib/calibrate.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"

namespace gdp::cli {

namespace {

void print_help() {
  std::printf(
      "usage: gdp calibrate --backend cpu --out PROFILE.json [--cluster-out CLUSTER.json]\n"
      "                     [--quick | --size tiny|quick|full] [--devices N] [--roofline max|sum]\n"
      "       gdp calibrate --backend cuda --out PROFILE.json [--cluster-out CLUSTER.json]\n"
      "                     [--quick | --size tiny|quick|full] [--roofline max|sum]\n"
      "       gdp calibrate --from-profile FILE... --out PROFILE.json [--device-kind K]\n"
      "                     [--cluster C] [--cluster-out CLUSTER.json] [--peak fp32|fp16|best]\n"
      "                     [--eval FILE[,FILE...]] [--roofline max|sum]\n\n"
      "Fits the cost model's per-op-class compute and memory efficiencies and the launch\n"
      "overhead by non-negative least squares on relative errors, prints the fit's error per\n"
      "op class (median, p90) and the worst-fitting shapes, and writes a device profile for\n"
      "`gdp simulate --profile` (docs/calibration.md).\n"
      "  --backend cpu     micro-benchmarks of this machine's CPU, one thread per device (GEMMs,\n"
      "                    convolutions, element-wise, reductions, softmax, layer norm, copies,\n"
      "                    dispatch, thread-to-thread copies); progress on stderr\n"
      "  --backend cuda    GPU micro-benchmarks (CUDA events): cuBLAS GEMMs, convolutions as\n"
      "                    im2col-shaped GEMMs, element-wise, reductions, softmax, layer norm,\n"
      "                    transpose, D2D/H2D/D2H copies, launch, peer copies between every\n"
      "                    GPU pair; --cluster-out writes the GPUs with the measured links.\n"
      "                    Needs a CUDA build and a GPU (else exit 1)\n"
      "  --quick           the short benchmark set (~10-20 s on a CPU, < 1 min on a GPU);\n"
      "                    --size tiny is for tests\n"
      "  --cluster-out F   write a cluster: N devices of kind \"cpu\" with the measured peaks and\n"
      "                    fitted launch overhead, linked by the fitted thread-to-thread copy;\n"
      "                    with --from-profile: --cluster with the fitted launch overhead\n"
      "  --devices N       CPU devices (threads) in the cluster (default: hardware threads)\n"
      "  --from-profile    fit against measured per-layer times: PipeDream profiles (graph.txt)\n"
      "                    or gdp graph JSON whose ops carry `measured` times\n"
      "  --device-kind K   whose peaks the efficiencies are relative to (default V100; the\n"
      "                    PipeDream profiles do not name their GPU)\n"
      "  --cluster C       take the kind's peaks from this cluster (file or preset)\n"
      "  --peak P          price flops at the fp32 or fp16 peak, or the better fit (default)\n"
      "  --eval FILES      also report the fitted model's error on these (not fitted on)\n"
      "  --roofline R      the profile's equation: max(compute, memory) (default) or the sum\n"
      "Exit status: 0 ok; 1 bad input or no usable backend; 2 bad usage.\n");
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ','))
    if (!part.empty()) v.push_back(part);
  return v;
}

bool roofline_max(const Args& a) {
  const std::string r = a.get("--roofline", "max");
  if (r != "max" && r != "sum") throw UsageError("--roofline expects max or sum, got '" + r + "'");
  return r == "max";
}

// Fails early (before minutes of benchmarks) on an output path that cannot be written.
void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(path + ": is a directory; expected a file path to write");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw InputError(path + ": the directory " + parent.string() + " does not exist");
}

void progress_line(const std::string& s) {
  std::fprintf(stderr, "calibrate: %s\n", s.c_str());
  std::fflush(stderr);
}

}  // namespace

int cmd_calibrate(int argc, char** argv) {
  Args a(argc, argv,
         {"--backend", "--out", "--cluster-out", "--size", "--devices", "--roofline",
          "--device-kind", "--cluster", "--peak", "--eval"},
         {"--quick", "--from-profile"});
  if (a.help()) {
    print_help();
    return 0;
  }
  const bool from_profile = a.has("--from-profile");
  if (from_profile == a.has("--backend"))
    throw UsageError("expected exactly one of --backend cpu|cuda and --from-profile (see --help)");
  const bool max_roofline = roofline_max(a);

  if (!from_profile) {
    if (!a.positional().empty())
      throw UsageError("unexpected argument '" + a.positional()[0] + "'");
    for (const char* f : {"--device-kind", "--cluster", "--peak", "--eval"})
      if (a.has(f)) throw UsageError(std::string(f) + " goes with --from-profile");
    const std::string backend = a.get("--backend");
    if (backend != "cpu" && backend != "cuda")
      throw UsageError("--backend expects cpu or cuda, got '" + backend + "'");
    const std::string out = a.require("--out");
    calib::BenchSize bench_size = calib::BenchSize::full;
    std::string size = a.get("--size", a.has("--quick") ? "quick" : "full");
    if (a.has("--quick") && a.has("--size") && size != "quick")
      throw UsageError("--quick and --size " + size + " contradict each other");
    if (size == "tiny")
      bench_size = calib::BenchSize::tiny;
    else if (size == "quick")
      bench_size = calib::BenchSize::quick;
    else if (size == "full")
      bench_size = calib::BenchSize::full;
    else
      throw UsageError("--size expects tiny, quick or full, got '" + size + "'");
    if (backend == "cuda") {
      if (a.has("--devices"))
        throw UsageError("--devices goes with --backend cpu (the cuda cluster has the GPUs)");
      calib::check_cuda_backend();  // throws InputError: exit 1 with the reason
      check_output_path(out);
      if (a.has("--cluster-out")) check_output_path(a.get("--cluster-out"));
      calib::CudaCalibrationOptions co;
      co.size = bench_size;
      co.roofline_max = max_roofline;
      co.progress = progress_line;
      calib::CudaCalibration c = calib::calibrate_cuda(co);
      calib::write_profile_file(c.model, out);
      std::printf("%s", calib::cuda_report(c).c_str());
      std::printf("wrote profile %s (device kind \"%s\")\n", out.c_str(), c.device.kind.c_str());
      if (a.has("--cluster-out")) {
        calib::write_cluster_file(c.cluster, a.get("--cluster-out"));
        std::printf("wrote cluster %s; simulate with: gdp simulate --cluster %s --profile %s ...\n",
                    a.get("--cluster-out").c_str(), a.get("--cluster-out").c_str(), out.c_str());
      }
      return 0;
    }
    calib::CpuCalibrationOptions o;
    o.size = bench_size;
    o.devices = static_cast<int32_t>(a.integer("--devices", 0, 1, 4096));
    o.roofline_max = max_roofline;
    o.progress = progress_line;
    check_output_path(out);
    if (a.has("--cluster-out")) check_output_path(a.get("--cluster-out"));
    calib::CpuCalibration c = calib::calibrate_cpu(o);
    calib::write_profile_file(c.model, out);
    std::printf("%s", calib::cpu_report(c).c_str());
    std::printf("wrote profile %s (device kind \"cpu\")\n", out.c_str());
    if (a.has("--cluster-out")) {
      calib::write_cluster_file(c.cluster, a.get("--cluster-out"));
      std::printf("wrote cluster %s; simulate with: gdp simulate --cluster %s --profile %s ...\n",
                  a.get("--cluster-out").c_str(), a.get("--cluster-out").c_str(), out.c_str());
    }
    return 0;
  }

  for (const char* f : {"--size", "--quick", "--devices"})
    if (a.has(f)) throw UsageError(std::string(f) + " goes with --backend cpu");
  if (a.positional().empty()) throw UsageError("--from-profile expects at least one file");
  const std::string out = a.require("--out");
  if (a.has("--cluster-out") && !a.has("--cluster"))
    throw UsageError("--cluster-out with --from-profile needs --cluster (the cluster to update)");
  calib::ProfileFitOptions o;
  const std::string peak = a.get("--peak", "best");
  if (peak == "fp32")
    o.peak = calib::PeakChoice::fp32;
  else if (peak == "fp16")
    o.peak = calib::PeakChoice::fp16;
  else if (peak == "best")
    o.peak = calib::PeakChoice::best;
  else
    throw UsageError("--peak expects fp32, fp16 or best, got '" + peak + "'");
  o.roofline_max = max_roofline;
  check_output_path(out);
  if (a.has("--cluster-out")) check_output_path(a.get("--cluster-out"));
  o.device_kind = a.get("--device-kind", "V100");
  if (a.has("--cluster")) o.cluster = read_cluster(a.get("--cluster"));
  calib::ProfileCalibration c =
      calib::calibrate_from_profiles(a.positional(), split_commas(a.get("--eval")), o);
  calib::write_profile_file(c.model, out);
  std::printf("%s", calib::profile_report(c).c_str());
  std::printf("wrote profile %s (device kind \"%s\")\n", out.c_str(), c.device.kind.c_str());
  if (a.has("--cluster-out")) {
    Cluster cl = *o.cluster;
    for (DeviceSpec& d : cl.devices)
      if (d.kind == c.device.kind) d.launch_overhead_s = c.fit.launch_overhead_s;
    calib::write_cluster_file(cl, a.get("--cluster-out"));
    std::printf("wrote cluster %s (launch overhead of the %s devices fitted)\n",
                a.get("--cluster-out").c_str(), c.device.kind.c_str());
  }
  return 0;
}

}  // namespace gdp::cli
