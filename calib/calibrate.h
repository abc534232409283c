// `gdp calibrate` as a library: calibrate this machine's CPU as a device kind (benchmarks,
// fit, a cluster of CPU threads), fit against measured per-layer profiles, and the reports.
// The CLI (cli/cmd_calibrate.cpp) only parses flags and writes files.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "calib/cpu_bench.h"
#include "calib/cuda_bench.h"
#include "calib/fit.h"
#include "calib/profile_samples.h"
#include "core/cluster.h"
#include "sim/cost_model.h"

namespace gdp::calib {

// ---- the CPU backend

struct CpuCalibrationOptions {
  BenchSize size = BenchSize::full;
  int32_t devices = 0;       // CPU devices (threads) in the cluster; 0 = hardware threads
  bool roofline_max = true;  // the profile's equation
  std::function<void(const std::string&)> progress;  // may be empty
};

struct CpuCalibration {
  CpuBenchResult bench;
  DeviceSpec device;  // kind "cpu": measured peaks, fitted launch overhead
  OpFit fit;
  Evaluation before, after;  // the default profile (and 5 us launch) vs the fitted one
  LinkFit link;              // thread-to-thread copies
  Cluster cluster;           // `devices` CPU devices, a link between every pair
  CostModel model;           // the default profile plus the fitted "cpu" profile
  BenchSize size = BenchSize::full;
};

// Runs the benchmarks and the fits. Deterministic apart from the timings.
CpuCalibration calibrate_cpu(const CpuCalibrationOptions& opt);

// N devices "cpu0".."cpuN-1" of `dev`, with a full-duplex link (the fitted thread-to-thread
// copy) between every pair; each device gets an equal share of the physical memory.
Cluster make_cpu_cluster(int32_t devices, const DeviceSpec& dev, const LinkFit& link);
std::string cpu_report(const CpuCalibration& c);

// ---- fitting against measured profiles

enum class PeakChoice : uint8_t { fp32, fp16, best };  // best: the lower fit objective

struct ProfileFitOptions {
  std::string device_kind = "V100";  // whose peaks the efficiencies are relative to
  std::optional<Cluster> cluster;    // take the kind's DeviceSpec from here (else a preset)
  PeakChoice peak = PeakChoice::best;
  bool roofline_max = true;
  bool robust = true;  // OpFitOptions::robust
};

struct HeldOut {
  ProfileSamples samples;
  Evaluation before, after;
};

struct ProfileCalibration {
  DeviceSpec device;  // of device_kind, launch overhead as given (before fitting)
  std::vector<ProfileSamples> inputs;
  std::vector<OpSample> samples;  // all inputs' samples
  OpFit fit;
  OpFitOptions fit_options;
  double objective_fp32 = -1, objective_fp16 = -1;  // -1: not tried
  Evaluation before, after;                         // on the fitted samples
  std::vector<HeldOut> held_out;
  CostModel model;  // the default profile plus the fitted one for device_kind
};

// Fits against `files` and evaluates on `eval_files` (never fitted on). InputError for bad
// files (named), an unknown kind, or no usable sample.
ProfileCalibration calibrate_from_profiles(const std::vector<std::string>& files,
                                           const std::vector<std::string>& eval_files,
                                           const ProfileFitOptions& opt);
std::string profile_report(const ProfileCalibration& c);

// ---- the CUDA backend

// Throws InputError with the reason when no CUDA GPU can be calibrated: a build without the
// CUDA backend, or no visible GPU.
void check_cuda_backend();

// The device kind of a CUDA device name: the cluster presets' kind it names ("NVIDIA H200" ->
// "H200"; H200, H100, A100, V100, P100, K80), else the name itself.
std::string cuda_device_kind(const std::string& cuda_name);

struct CudaCalibrationOptions {
  BenchSize size = BenchSize::full;
  bool roofline_max = true;
  std::function<void(const std::string&)> progress;  // may be empty
};

// A fitted link between two GPUs of the cluster (both directions' copies).
struct PeerLinkFit {
  int a = 0, b = 0;
  bool direct = false;  // peer access (else staged through the host)
  LinkFit link;
};

struct CudaCalibration {
  CudaBenchResult bench;
  DeviceSpec device;            // the GPU's kind: the kind sheet's peaks when known, else measured
  bool peaks_measured = false;  // not a known kind: peaks are the best GEMM and D2D copy
  OpFit fit;
  Evaluation before, after;
  LinkFit host_link;               // host <-> GPU (H2D and D2H copies)
  std::vector<PeerLinkFit> peers;  // a < b, every pair of GPUs
  Cluster cluster;                 // the GPUs, a "host" switch, the measured links
  CostModel model;                 // the default profile plus the fitted one for the kind
  BenchSize size = BenchSize::full;
};

// Runs the GPU benchmarks (check_cuda_backend first) and the fits. Throws InputError without a
// usable GPU.
CudaCalibration calibrate_cuda(const CudaCalibrationOptions& opt);
std::string cuda_report(const CudaCalibration& c);

// ---- shared

// The per-class table: samples, fitted efficiencies (with how each was fitted), and the median
// and p90 relative error before and after. `fit` may be null (no efficiency columns).
std::string error_table(const Evaluation& before, const Evaluation& after, const OpFit* fit);
// Writes `model` atomically and reads it back through CostModel::from_json_file.
void write_profile_file(const CostModel& model, const std::string& path);
// Writes `cluster` atomically and reads it back through the strict cluster reader.
void write_cluster_file(const Cluster& cluster, const std::string& path);

}  // namespace gdp::calib
