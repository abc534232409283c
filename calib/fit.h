// The calibration fit: per-op-class compute and memory efficiencies and the launch overhead of
// the cost model (sim/cost_model.h) from measured op times, and a link's latency and bandwidth
// from copy times, by non-negative least squares on relative errors (docs/calibration.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "sim/cost_model.h"

namespace gdp::calib {

// One op measured on a device: what the cost model sees of it and its measured time.
struct OpSample {
  std::string label;  // what was measured, e.g. "matmul 512x512x512", "vgg16 node12/forward"
  OpClass op_class = OpClass::other;
  double flops = 0;   // floating point operations
  double bytes = 0;   // bytes read + written (Op::bytes_accessed)
  double time_s = 0;  // measured; samples with time_s <= 0 are skipped by fits and errors
};

// One copy measured over a link: bytes moved and the time from start to arrival.
struct CopySample {
  std::string label;
  double bytes = 0;
  double time_s = 0;
};

// Relative errors |predicted - measured| / measured over a set of samples.
struct ErrorStats {
  int64_t n = 0;
  double median = 0, p90 = 0, max = 0;
};
ErrorStats error_stats(std::vector<double> abs_rel_errors);  // p90: nearest rank

struct SampleError {
  std::string label;
  double measured_s = 0, predicted_s = 0;
  double rel_error = 0;  // signed: (predicted - measured) / measured
};

struct ClassEvaluation {
  OpClass op_class = OpClass::other;
  ErrorStats error;                // n = 0: no sample of the class
  std::vector<SampleError> worst;  // largest |rel_error| first
};
struct Evaluation {
  std::vector<ClassEvaluation> classes;  // the six classes, in all_op_classes() order
  ErrorStats overall;
  int64_t skipped = 0;  // samples with time_s <= 0
};

// An op of the sample's class ("MatMul", "Conv2D", "Add", "Sum", "Copy", "Other") with its
// flops and bytes, priced by the cost model itself: the errors reported are the simulator's.
Op sample_op(const OpSample& s);
double predict_s(const OpSample& s, const CostModel& model, const DeviceSpec& dev);
Evaluation evaluate(const std::vector<OpSample>& samples, const CostModel& model,
                    const DeviceSpec& dev, int worst_per_class = 3);

// How a fitted term came out.
enum class TermFit : uint8_t {
  fitted,       // binding for some samples: efficiency fitted in (0, 1)
  at_peak,      // binding, and the data want the peak or more: clamped to 1
  not_binding,  // (roofline max) binding for no sample: the data only bound it; the base value
                // is kept when it stays non-binding, else the bound
  no_data,      // no sample of the class has that term (no flops / no bytes): the base value
};
const char* term_fit_name(TermFit t);

struct ClassFit {
  OpClass op_class = OpClass::other;
  int64_t samples = 0;
  double compute_efficiency = 1, memory_efficiency = 1;
  TermFit compute = TermFit::no_data, memory = TermFit::no_data;
};

struct OpFitOptions {
  bool roofline_max = true;    // the profile's equation: max (roofline) or sum
  bool use_fp16_peak = false;  // price flops at the device's fp16 peak (when it has one)
  bool fit_launch = true;      // false: keep the device's launch_overhead_s
  DeviceProfile base = default_device_profile();  // for classes and terms without data
  int max_rounds = 30;  // roofline max: alternations of binding-term assignment and NNLS
  // Minimise sum |log(predicted / measured)| (iteratively reweighted least squares) rather than
  // the sum of squared relative errors: over- and under-prediction by the same factor cost the
  // same (a relative error is unbounded above but at most 1 below, so a few spurious near-zero
  // measurements would otherwise pull every prediction down), and a few samples of another
  // regime (a cache level, a slow kernel) do not drag the fit of the rest.
  bool robust = true;
  int robust_rounds = 20;
};

struct OpFit {
  DeviceProfile profile;  // device_kind = the device's kind
  double launch_overhead_s = 0;
  std::vector<ClassFit> classes;  // the six classes, in all_op_classes() order
  double objective = 0;           // the loss: sum of |log(predicted / measured)| (robust) or of
                                  // squared relative errors, over the samples used
  int64_t used = 0, skipped = 0;  // samples with time_s > 0 / <= 0
};

// Fits L >= 0 and, per class c, a_c = 1/e_c >= 1 and b_c = 1/m_c >= 1 of the cost model
//   t = L + max(a_c F / P, b_c B / BW)      (roofline_max)
//   t = L + a_c F / P + b_c B / BW          (otherwise)
// minimising sum |log(predicted / t)| (robust, by IRLS) or sum ((predicted - t) / t)^2, each
// weighted least-squares step solved by NNLS; P and BW are the device's (P: fp16 peak when
// use_fp16_peak and the device has one). Throws InputError for a sample with negative or
// non-finite figures, when no sample has a positive time, or when the device lacks a peak or
// bandwidth that the samples need.
OpFit fit_ops(const std::vector<OpSample>& samples, const DeviceSpec& dev,
              const OpFitOptions& opt = {});

struct LinkFit {
  double latency_s = 0, bandwidth_Bps = 0;
  std::string note;  // set when the figures are a fallback, not a fit (why)
  ErrorStats error;
  std::vector<SampleError> worst;  // up to 3, largest |rel_error| first
};
// t = latency + bytes / bandwidth by relative least squares, latency >= 0. Throws InputError
// when the bandwidth is not identified (no two distinct sizes, or times that do not grow with
// the size).
LinkFit fit_link(const std::vector<CopySample>& samples);

}  // namespace gdp::calib
