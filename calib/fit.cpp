// Least-squares fits of the cost model's parameters: NNLS on the unknowns 1/efficiency - 1,
// with the roofline's max handled by alternating the binding term of each sample.
#include "calib/fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "calib/nnls.h"
#include "core/error.h"

namespace gdp::calib {

namespace {

constexpr int kClasses = 6;
int idx(OpClass c) { return static_cast<int>(c); }

const char* class_op_type(OpClass c) {
  switch (c) {
    case OpClass::matmul:
      return "MatMul";
    case OpClass::conv:
      return "Conv2D";
    case OpClass::elementwise:
      return "Add";
    case OpClass::reduction:
      return "Sum";
    case OpClass::memory:
      return "Copy";
    case OpClass::other:
      return "Other";
  }
  return "Other";
}

double eff_of(const std::map<OpClass, double>& m, OpClass c) {
  auto it = m.find(c);
  return it == m.end() ? 1.0 : it->second;
}

// The parameters of the model: L and, per class, a = 1/compute efficiency, b = 1/memory
// efficiency.
struct Params {
  double launch_s = 0;
  std::array<double, kClasses> a{}, b{};
};

// Which term of a sample's roofline is charged: compute, memory, both (sum model) or neither
// (no flops and no bytes: launch overhead only).
enum class Term : uint8_t { compute, memory, both, none };

struct Rows {
  std::vector<double> f, m, t;  // F / P and B / BW (seconds at peak), measured seconds
  std::vector<int> cls;
  std::array<bool, kClasses> has_f{}, has_m{};
  std::array<int64_t, kClasses> count{};
};

double predict(const Params& p, const Rows& r, size_t i, bool roofline_max) {
  const int c = r.cls[i];
  const double cf = p.a[c] * r.f[i], mm = p.b[c] * r.m[i];
  return p.launch_s + (roofline_max ? std::max(cf, mm) : cf + mm);
}

// Sum over samples of w_i e_i^2, e_i the relative error (weights given, else 1), or (log_l1)
// of |log(predicted_i / t_i)|.
double objective(const Params& p, const Rows& r, bool roofline_max,
                 const std::vector<double>* w = nullptr, bool log_l1 = false) {
  double s = 0;
  for (size_t i = 0; i < r.t.size(); ++i) {
    const double pred = predict(p, r, i, roofline_max);
    const double e = (pred - r.t[i]) / r.t[i];
    s += log_l1 ? std::abs(std::log(std::max(pred, 1e-300) / r.t[i])) : (w ? (*w)[i] : 1.0) * e * e;
  }
  return s;
}

std::vector<Term> assign(const Params& p, const Rows& r) {
  std::vector<Term> s(r.t.size());
  for (size_t i = 0; i < r.t.size(); ++i) {
    const int c = r.cls[i];
    if (r.f[i] <= 0 && r.m[i] <= 0)
      s[i] = Term::none;
    else if (r.m[i] <= 0)
      s[i] = Term::compute;
    else if (r.f[i] <= 0)
      s[i] = Term::memory;
    else
      s[i] = p.a[c] * r.f[i] >= p.b[c] * r.m[i] ? Term::compute : Term::memory;
  }
  return s;
}

// The linear least-squares problem for a fixed assignment, solved by NNLS. Unknowns: L (when
// fitted), then a - 1 and b - 1 of each class that has such a term; rows divided by t.
Params solve(const Rows& r, const std::vector<Term>& s, const Params& fixed,
             const OpFitOptions& opt, const std::vector<double>& w) {
  std::array<int, kClasses> col_a{}, col_b{};
  int n = 0;
  const int col_L = opt.fit_launch ? n++ : -1;
  for (int c = 0; c < kClasses; ++c) {
    col_a[c] = r.has_f[c] ? n++ : -1;
    col_b[c] = r.has_m[c] ? n++ : -1;
  }
  const auto m = static_cast<Eigen::Index>(r.t.size());
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(m, n);
  Eigen::VectorXd rhs(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const double t = r.t[i];
    const int c = r.cls[i];
    double known = opt.fit_launch ? 0.0 : fixed.launch_s;
    if (col_L >= 0) A(i, col_L) = 1.0 / t;
    if ((s[i] == Term::compute || s[i] == Term::both) && col_a[c] >= 0) {
      A(i, col_a[c]) = r.f[i] / t;
      known += r.f[i];
    }
    if ((s[i] == Term::memory || s[i] == Term::both) && col_b[c] >= 0) {
      A(i, col_b[c]) = r.m[i] / t;
      known += r.m[i];
    }
    rhs[i] = 1.0 - known / t;
    const double sw = std::sqrt(w[i]);
    A.row(i) *= sw;
    rhs[i] *= sw;
  }
  NnlsResult x = nnls(A, rhs);
  Params p = fixed;
  if (col_L >= 0) p.launch_s = x.x[col_L];
  for (int c = 0; c < kClasses; ++c) {
    if (col_a[c] >= 0) p.a[c] = 1.0 + x.x[col_a[c]];
    if (col_b[c] >= 0) p.b[c] = 1.0 + x.x[col_b[c]];
  }
  return p;
}

// For a fixed launch overhead, per class: the binding term of the max model is a threshold on
// the arithmetic intensity (compute binds iff a F / P >= b B / BW, i.e. F / B above the class's
// ridge). Tries the thresholds between consecutive intensities (at most ~200 per class); under
// each, a and b have closed forms (one-unknown weighted NNLS each); keeps the pair with the
// lowest weighted objective of the max model. The alternation alone can stop at a poor
// assignment; this search visits every assignment the roofline allows.
Params threshold_search(const Params& p0, const Rows& r, const std::vector<double>& w) {
  Params p = p0;
  const double L = p0.launch_s;
  for (int c = 0; c < kClasses; ++c) {
    std::vector<size_t> mixed, forced;
    for (size_t i = 0; i < r.t.size(); ++i) {
      if (r.cls[i] != c) continue;
      (r.f[i] > 0 && r.m[i] > 0 ? mixed : forced).push_back(i);
    }
    if (mixed.empty()) continue;
    std::sort(mixed.begin(), mixed.end(),
              [&](size_t x, size_t y) { return r.f[x] / r.m[x] < r.f[y] / r.m[y]; });
    const size_t stride = std::max<size_t>(1, mixed.size() / 200);
    // The incoming parameters are the bar: only a strictly better threshold replaces them (with
    // one intensity for all samples the two terms are indistinguishable; keep what the
    // alternation from the base profile found).
    auto class_objective = [&](const Params& q) {
      double obj = 0;
      for (const std::vector<size_t>* v : {&mixed, &forced})
        for (size_t i : *v) {
          const double e = (predict(q, r, i, true) - r.t[i]) / r.t[i];
          obj += w[i] * e * e;
        }
      return obj;
    };
    // One-unknown weighted NNLS of each term: a - 1 = max(0, sum w x y / sum w x^2) with
    // x = f / t, y = 1 - (L + f) / t over the compute-bound samples (b alike with m). Prefix sums
    // over the intensity order give every threshold's sums in O(1).
    auto term = [&](size_t i, bool compute, double* num, double* den) {
      const double v = compute ? r.f[i] : r.m[i];
      const double x = v / r.t[i], y = 1.0 - (L + v) / r.t[i];
      *num += w[i] * x * y;
      *den += w[i] * x * x;
    };
    const size_t n = mixed.size();
    std::vector<double> mem_num(n + 1, 0), mem_den(n + 1, 0), cmp_num(n + 1, 0), cmp_den(n + 1, 0);
    for (size_t j = 0; j < n; ++j) {  // memory-bound prefix [0, j + 1)
      mem_num[j + 1] = mem_num[j];
      mem_den[j + 1] = mem_den[j];
      term(mixed[j], false, &mem_num[j + 1], &mem_den[j + 1]);
    }
    for (size_t j = n; j-- > 0;) {  // compute-bound suffix [j, n)
      cmp_num[j] = cmp_num[j + 1];
      cmp_den[j] = cmp_den[j + 1];
      term(mixed[j], true, &cmp_num[j], &cmp_den[j]);
    }
    double f_num = 0, f_den = 0, g_num = 0, g_den = 0;  // forced rows: compute / memory
    for (size_t i : forced) {
      if (r.f[i] > 0) term(i, true, &f_num, &f_den);
      if (r.m[i] > 0 && r.f[i] <= 0) term(i, false, &g_num, &g_den);
    }
    double best_obj = class_objective(p0) * (1 - 1e-9);
    for (size_t k = 0; k <= n; k = (k == n ? k + 1 : std::min(k + stride, n))) {
      // mixed[0, k): memory bound; mixed[k, n): compute bound.
      const double nu = cmp_num[k] + f_num, du = cmp_den[k] + f_den;
      const double nv = mem_num[k] + g_num, dv = mem_den[k] + g_den;
      Params q = p;
      if (du > 0) q.a[c] = 1.0 + std::max(0.0, nu / du);
      if (dv > 0) q.b[c] = 1.0 + std::max(0.0, nv / dv);
      const double obj = class_objective(q);
      if (obj < best_obj) {
        best_obj = obj;
        p.a[c] = q.a[c];
        p.b[c] = q.b[c];
      }
    }
  }
  return p;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + h, v.end());
  return v[h];
}

// A robust start for the log-error fit, found without any least squares (so no outlier can
// pull it): L = 0 (when fitted) and, per class, for every threshold on the arithmetic intensity
// (the roofline's binding term), log a = median of log(t / f) over the compute-bound samples and
// log b = median of log(t / m) over the memory-bound ones (the least-absolute-deviation solution of
// each one-term model in log space); keeps the threshold with the lowest sum |log(pred / t)|.
Params log_median_start(const Params& base, const Rows& r, bool roofline_max, bool fit_launch) {
  Params p = base;
  if (fit_launch) p.launch_s = 0;
  for (int c = 0; c < kClasses; ++c) {
    std::vector<size_t> mixed, forced;
    for (size_t i = 0; i < r.t.size(); ++i) {
      if (r.cls[i] != c || (r.f[i] <= 0 && r.m[i] <= 0)) continue;
      (r.f[i] > 0 && r.m[i] > 0 ? mixed : forced).push_back(i);
    }
    if (mixed.empty() && forced.empty()) continue;
    std::sort(mixed.begin(), mixed.end(),
              [&](size_t x, size_t y) { return r.f[x] / r.m[x] < r.f[y] / r.m[y]; });
    const size_t stride = std::max<size_t>(1, mixed.size() / 200);
    double best = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k <= mixed.size();
         k = (k == mixed.size() ? k + 1 : std::min(k + stride, mixed.size()))) {
      std::vector<double> la, lb;
      auto put = [&](size_t i, bool compute) {
        (compute ? la : lb).push_back(std::log(r.t[i] / (compute ? r.f[i] : r.m[i])));
      };
      for (size_t j = 0; j < mixed.size(); ++j) put(mixed[j], j >= k);
      for (size_t i : forced) put(i, r.m[i] <= 0);
      Params q = p;
      if (!la.empty()) q.a[c] = std::max(1.0, std::exp(median_of(la)));
      if (!lb.empty()) q.b[c] = std::max(1.0, std::exp(median_of(lb)));
      double loss = 0;
      for (const std::vector<size_t>* v : {&mixed, &forced})
        for (size_t i : *v)
          loss += std::abs(std::log(std::max(predict(q, r, i, roofline_max), 1e-300) / r.t[i]));
      if (loss < best) {
        best = loss;
        p.a[c] = q.a[c];
        p.b[c] = q.b[c];
      }
    }
  }
  return p;
}

void check_sample(const OpSample& s) {
  auto bad = [&](const char* field, double v) {
    if (!std::isfinite(v) || v < 0)
      throw InputError("calibration sample '" + s.label + "': " + field +
                       " must be a finite number >= 0, got " + std::to_string(v));
  };
  bad("flops", s.flops);
  bad("bytes", s.bytes);
  if (std::isnan(s.time_s) || std::isinf(s.time_s))
    throw InputError("calibration sample '" + s.label + "': time_s is not finite");
}

}  // namespace

ErrorStats error_stats(std::vector<double> e) {
  ErrorStats s;
  s.n = static_cast<int64_t>(e.size());
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  const size_t n = e.size();
  s.median = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
  size_t k = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  s.p90 = e[std::max<size_t>(k, 1) - 1];
  s.max = e.back();
  return s;
}

const char* term_fit_name(TermFit t) {
  switch (t) {
    case TermFit::fitted:
      return "fitted";
    case TermFit::at_peak:
      return "at peak (clamped to 1)";
    case TermFit::not_binding:
      return "never binding (bound only)";
    case TermFit::no_data:
      return "no data (base value)";
  }
  return "?";
}

Op sample_op(const OpSample& s) {
  Op op;
  op.name = s.label;
  op.type = class_op_type(s.op_class);
  op.flops = s.flops;
  op.bytes_accessed = s.bytes;
  return op;
}

double predict_s(const OpSample& s, const CostModel& model, const DeviceSpec& dev) {
  return model.op_time_s(sample_op(s), dev);
}

Evaluation evaluate(const std::vector<OpSample>& samples, const CostModel& model,
                    const DeviceSpec& dev, int worst_per_class) {
  Evaluation ev;
  std::array<std::vector<double>, kClasses> rel;
  std::array<std::vector<SampleError>, kClasses> errs;
  std::vector<double> all;
  for (const OpSample& s : samples) {
    check_sample(s);
    if (!(s.time_s > 0)) {
      ++ev.skipped;
      continue;
    }
    const double pred = predict_s(s, model, dev);
    const double e = (pred - s.time_s) / s.time_s;
    rel[idx(s.op_class)].push_back(std::abs(e));
    errs[idx(s.op_class)].push_back({s.label, s.time_s, pred, e});
    all.push_back(std::abs(e));
  }
  for (OpClass c : all_op_classes()) {
    ClassEvaluation ce;
    ce.op_class = c;
    ce.error = error_stats(rel[idx(c)]);
    auto& v = errs[idx(c)];
    std::stable_sort(v.begin(), v.end(), [](const SampleError& x, const SampleError& y) {
      return std::abs(x.rel_error) > std::abs(y.rel_error);
    });
    if (static_cast<int>(v.size()) > worst_per_class) v.resize(std::max(0, worst_per_class));
    ce.worst = std::move(v);
    ev.classes.push_back(std::move(ce));
  }
  ev.overall = error_stats(all);
  return ev;
}

OpFit fit_ops(const std::vector<OpSample>& samples, const DeviceSpec& dev,
              const OpFitOptions& opt) {
  const double P =
      (opt.use_fp16_peak && dev.peak_fp16_flops > 0) ? dev.peak_fp16_flops : dev.peak_fp32_flops;
  const double BW = dev.mem_bandwidth_Bps;
  OpFit fit;
  Rows r;
  for (const OpSample& s : samples) {
    check_sample(s);
    if (!(s.time_s > 0)) {
      ++fit.skipped;
      continue;
    }
    if (s.flops > 0 && !(P > 0))
      throw InputError("calibration: device kind '" + dev.kind +
                       "' has no positive peak flop/s, needed for sample '" + s.label + "'");
    if (s.bytes > 0 && !(BW > 0))
      throw InputError("calibration: device kind '" + dev.kind +
                       "' has no positive memory bandwidth, needed for sample '" + s.label + "'");
    const int c = idx(s.op_class);
    r.f.push_back(s.flops > 0 ? s.flops / P : 0.0);
    r.m.push_back(s.bytes > 0 ? s.bytes / BW : 0.0);
    r.t.push_back(s.time_s);
    r.cls.push_back(c);
    r.has_f[c] = r.has_f[c] || s.flops > 0;
    r.has_m[c] = r.has_m[c] || s.bytes > 0;
    ++r.count[c];
  }
  fit.used = static_cast<int64_t>(r.t.size());
  if (r.t.empty()) throw InputError("calibration: no sample with a positive measured time");

  Params base;
  base.launch_s = dev.launch_overhead_s;
  for (OpClass c : all_op_classes()) {
    base.a[idx(c)] = 1.0 / eff_of(opt.base.compute_efficiency, c);
    base.b[idx(c)] = 1.0 / eff_of(opt.base.memory_efficiency, c);
  }

  std::vector<Term> both(r.t.size(), Term::both);
  for (size_t i = 0; i < r.t.size(); ++i)
    if (r.f[i] <= 0 && r.m[i] <= 0) both[i] = Term::none;
  // One weighted least-squares fit. Sum model: linear, one NNLS. Roofline max: alternate between
  // charging each sample its binding term under the current parameters and solving the linear
  // problem, until the assignment repeats; from several starts (the base profile, the sum
  // model's fit, the peaks, `extra`), keeping the lowest weighted objective of the max model.
  auto weighted_fit = [&](const std::vector<double>& w, const Params* extra) {
    Params sum_fit = solve(r, both, base, opt, w);
    if (!opt.roofline_max) return sum_fit;
    Params peaks = base;
    peaks.a.fill(1.0);
    peaks.b.fill(1.0);
    std::vector<Params> starts = {base, sum_fit, peaks};
    if (extra) starts.push_back(*extra);
    Params best = base;
    double best_obj = std::numeric_limits<double>::infinity();
    auto descend = [&](const Params& start) {
      Params p = start;
      std::vector<Term> prev;
      for (int round = 0; round < opt.max_rounds; ++round) {
        std::vector<Term> s = assign(p, r);
        if (s == prev) break;
        p = solve(r, s, base, opt, w);
        const double obj = objective(p, r, true, &w);
        if (obj < best_obj) {
          best_obj = obj;
          best = p;
        }
        prev = std::move(s);
      }
    };
    for (const Params& start : starts) descend(start);
    // Then the exhaustive threshold search at the best launch overhead, and descend from it.
    for (int k = 0; k < 3; ++k) {
      const double before = best_obj;
      descend(threshold_search(best, r, w));
      if (!(best_obj < before * (1 - 1e-12))) break;
    }
    return best;
  };
  std::vector<double> w(r.t.size(), 1.0);
  Params best = weighted_fit(w, nullptr);
  if (opt.robust) {
    // Least absolute log error by iteratively reweighted least squares: with e_i the relative
    // error and l_i = log(predicted_i / t_i), w_i = |l_i| / e_i^2 makes the weighted squares
    // equal sum |l_i| at the current point (capped at 1e4); keep the parameters of the lowest
    // sum |l_i|.
    // Start from the better (by that loss) of the plain fit and the log-median start.
    const Params start = log_median_start(base, r, opt.roofline_max, opt.fit_launch);
    double best_loss = objective(best, r, opt.roofline_max, nullptr, true);
    if (objective(start, r, opt.roofline_max, nullptr, true) < best_loss) {
      best = start;
      best_loss = objective(start, r, opt.roofline_max, nullptr, true);
    }
    Params p = best;
    int stalled = 0;
    for (int it = 0; it < opt.robust_rounds && stalled < 3; ++it) {
      for (size_t i = 0; i < r.t.size(); ++i) {
        const double pred = std::max(predict(p, r, i, opt.roofline_max), 1e-300);
        const double e = (pred - r.t[i]) / r.t[i], l = std::abs(std::log(pred / r.t[i]));
        w[i] = e * e > 0 ? std::min(1e4, l / (e * e)) : 1e4;
      }
      p = weighted_fit(w, &p);
      const double loss = objective(p, r, opt.roofline_max, nullptr, true);
      if (loss < best_loss * (1 - 1e-9)) {
        best_loss = loss;
        best = p;
        stalled = 0;
      } else {
        ++stalled;
      }
    }
  }

  // Term status; a never-binding term keeps the base value when that stays non-binding, else
  // the least efficiency that does (the data only bound it).
  std::vector<Term> s = opt.roofline_max ? assign(best, r) : both;
  std::array<bool, kClasses> bind_f{}, bind_m{};
  std::array<double, kClasses> max_a, max_b;
  max_a.fill(std::numeric_limits<double>::infinity());
  max_b.fill(std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < r.t.size(); ++i) {
    const int c = r.cls[i];
    bind_f[c] = bind_f[c] || s[i] == Term::compute || (s[i] == Term::both && r.f[i] > 0);
    bind_m[c] = bind_m[c] || s[i] == Term::memory || (s[i] == Term::both && r.m[i] > 0);
    if (r.f[i] > 0 && r.m[i] > 0) {
      max_a[c] = std::min(max_a[c], best.b[c] * r.m[i] / r.f[i]);
      max_b[c] = std::min(max_b[c], best.a[c] * r.f[i] / r.m[i]);
    }
  }
  auto settle = [](bool has, bool binds, double fitted, double base_v, double bound, TermFit* how) {
    if (!has) {
      *how = TermFit::no_data;
      return base_v;
    }
    if (!binds) {
      *how = TermFit::not_binding;
      return base_v <= bound ? base_v : std::max(1.0, bound);
    }
    *how = fitted <= 1.0 + 1e-12 ? TermFit::at_peak : TermFit::fitted;
    return fitted;
  };
  fit.profile.device_kind = dev.kind;
  fit.profile.use_fp16_peak = opt.use_fp16_peak;
  fit.profile.roofline_max = opt.roofline_max;
  Params final_p = best;
  for (OpClass oc : all_op_classes()) {
    const int c = idx(oc);
    ClassFit cf;
    cf.op_class = oc;
    cf.samples = r.count[c];
    final_p.a[c] = settle(r.has_f[c], bind_f[c], best.a[c], base.a[c], max_a[c], &cf.compute);
    final_p.b[c] = settle(r.has_m[c], bind_m[c], best.b[c], base.b[c], max_b[c], &cf.memory);
    cf.compute_efficiency = 1.0 / final_p.a[c];
    cf.memory_efficiency = 1.0 / final_p.b[c];
    fit.profile.compute_efficiency[oc] = cf.compute_efficiency;
    fit.profile.memory_efficiency[oc] = cf.memory_efficiency;
    fit.classes.push_back(cf);
  }
  fit.launch_overhead_s = final_p.launch_s;
  fit.objective = objective(final_p, r, opt.roofline_max, nullptr, opt.robust);
  return fit;
}

LinkFit fit_link(const std::vector<CopySample>& samples) {
  std::vector<const CopySample*> rows;
  for (const CopySample& s : samples) {
    if (!std::isfinite(s.bytes) || s.bytes < 0 || !std::isfinite(s.time_s))
      throw InputError("link sample '" + s.label +
                       "': bytes and time_s must be finite, bytes >= 0");
    if (s.time_s > 0) rows.push_back(&s);
  }
  const auto m = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd A(m, 2);
  Eigen::VectorXd rhs = Eigen::VectorXd::Ones(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    A(i, 0) = 1.0 / rows[i]->time_s;
    A(i, 1) = rows[i]->bytes / rows[i]->time_s;
  }
  NnlsResult x = nnls(A, rhs);
  if (m < 2 || !(x.x[1] > 0))
    throw InputError(
        "link fit: the bandwidth is not identified (expected copies of at least two sizes whose "
        "times grow with the size)");
  LinkFit f;
  f.latency_s = x.x[0];
  f.bandwidth_Bps = 1.0 / x.x[1];
  std::vector<double> rel;
  for (const CopySample* s : rows) {
    const double pred = f.latency_s + s->bytes / f.bandwidth_Bps;
    const double e = (pred - s->time_s) / s->time_s;
    rel.push_back(std::abs(e));
    f.worst.push_back({s->label, s->time_s, pred, e});
  }
  f.error = error_stats(rel);
  std::stable_sort(f.worst.begin(), f.worst.end(), [](const SampleError& a, const SampleError& b) {
    return std::abs(a.rel_error) > std::abs(b.rel_error);
  });
  if (f.worst.size() > 3) f.worst.resize(3);
  return f;
}

}  // namespace gdp::calib
