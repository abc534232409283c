// `metis`: the METIS graph partitioner (libmetis, C API) as a placement baseline
// (docs/baselines.md). The colocation units are contracted into one vertex each; the unit
// graph is undirected with, between units U and V, the bytes of every tensor produced in U and
// consumed in V (counted once per (tensor, consuming unit), the simulator's transfer rule),
// both directions summed. Two vertex weights (ncon = 2): the unit's op time (CostView mean
// over devices) and its conservative memory (CostView::op_memory_bytes), scaled to integers.
// One part per device; on a heterogeneous cluster the target share of time of device d is
// proportional to its speed (1 / the whole graph's op time on d) and the target share of
// memory to its capacity (when every capacity is finite); uniform otherwise. After METIS an
// optional greedy repair moves units off devices whose conservative memory estimate (op
// memory + received tensors, an upper bound of the simulator's peak) exceeds capacity. The
// placement is simulated once (one sample) for its step time. Not a search: the seed only
// feeds METIS_OPTION_SEED.
#include <metis.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "place/cost_view.h"
#include "place/methods.h"
#include "place/units.h"

namespace gdp::place {

namespace {

// Integer totals per vertex-weight constraint and for the edge weights (both directions):
// far enough below idx_t's range that METIS's sums (part weights, cuts, gains, times nparts
// in places) cannot overflow.
#if IDXTYPEWIDTH == 64
constexpr double kVertexTotal = 1099511627776.0;  // 2^40
constexpr double kEdgeTotal = 4398046511104.0;    // 2^42
#else
constexpr double kVertexTotal = 67108864.0;  // 2^26
constexpr double kEdgeTotal = 268435456.0;   // 2^28
#endif

const char* metis_code_name(int rc) {
  switch (rc) {
    case METIS_ERROR_INPUT:
      return "METIS_ERROR_INPUT";
    case METIS_ERROR_MEMORY:
      return "METIS_ERROR_MEMORY";
    case METIS_ERROR:
      return "METIS_ERROR";
    default:
      return "unknown METIS return code";
  }
}

// Positive values scaled so that they sum to about `total`, each to >= 1; zeros become
// `zero_value`. When every value is zero (or the sum is not finite), all 1s (METIS needs a
// positive total per constraint). Written to out[i * stride].
void scale_to_idx(const std::vector<double>& x, double total, idx_t zero_value, idx_t* out,
                  size_t stride) {
  double sum = 0;
  for (double v : x) sum += v;
  if (!(sum > 0) || !std::isfinite(sum)) {
    for (size_t i = 0; i < x.size(); ++i) out[i * stride] = 1;
    return;
  }
  const double scale = total / sum;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] > 0) {
      const double s = std::min(std::round(x[i] * scale), total);
      out[i * stride] = std::max<idx_t>(1, static_cast<idx_t>(s));
    } else {
      out[i * stride] = zero_value;
    }
  }
}

std::string human_bytes(double b) {
  char buf[32];
  const char* unit[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int k = 0;
  while (b >= 1000 && k < 5) {
    b /= 1000;
    ++k;
  }
  std::snprintf(buf, sizeof buf, k == 0 ? "%.0f %s" : "%.3g %s", b, unit[k]);
  return buf;
}

// The contracted problem: units, their weights, the undirected unit graph and the tensor
// tables the memory estimate needs.
struct UnitProblem {
  Units units;
  int32_t U = 0, D = 0;
  std::vector<int64_t> unit_ptr;  // (U + 1) ops of unit u: unit_ops[unit_ptr[u] ..)
  std::vector<int32_t> unit_ops;
  std::vector<double> time_s;      // (U) sum of mean op times
  std::vector<double> mem_bytes;   // (U) sum of conservative op memory
  std::vector<double> send_bytes;  // (U) bytes of its tensors consumed in other units
  std::vector<double> send_time;   // (U) the same as mean transfer times
  // Undirected CSR (both directions, merged, no self loops).
  std::vector<int64_t> xadj;
  std::vector<int32_t> adj;
  std::vector<double> adj_bytes, adj_time;
  // Tensors (op outputs): id = out_base[op] + output index.
  std::vector<int64_t> out_base;      // (ops + 1)
  std::vector<int64_t> tensor_bytes;  // max Edge::bytes over its edges (the transfer size)
  std::vector<int32_t> tensor_src;    // producing op
};

UnitProblem contract(const Graph& g, const CostView& cv) {
  UnitProblem p;
  p.units = Units::colocation(g);
  p.U = p.units.num_units();
  p.D = cv.num_devices();
  const int32_t N = g.num_ops();
  const auto& unit_of = p.units.unit_of;

  p.unit_ptr.assign(p.U + 1, 0);
  for (int32_t op = 0; op < N; ++op) ++p.unit_ptr[unit_of[op] + 1];
  for (int32_t u = 0; u < p.U; ++u) p.unit_ptr[u + 1] += p.unit_ptr[u];
  p.unit_ops.resize(N);
  {
    std::vector<int64_t> fill(p.unit_ptr.begin(), p.unit_ptr.end() - 1);
    for (int32_t op = 0; op < N; ++op) p.unit_ops[fill[unit_of[op]]++] = op;
  }
  p.time_s.assign(p.U, 0);
  p.mem_bytes.assign(p.U, 0);
  for (int32_t op = 0; op < N; ++op) {
    p.time_s[unit_of[op]] += cv.mean_time_s(op);
    p.mem_bytes[unit_of[op]] += static_cast<double>(cv.op_memory_bytes(op));
  }

  p.out_base.assign(N + 1, 0);
  for (int32_t op = 0; op < N; ++op)
    p.out_base[op + 1] = p.out_base[op] + static_cast<int64_t>(g.op(op).outputs.size());
  p.tensor_bytes.assign(p.out_base[N], 0);
  p.tensor_src.resize(p.out_base[N]);
  for (int32_t op = 0; op < N; ++op)
    for (int64_t t = p.out_base[op]; t < p.out_base[op + 1]; ++t) p.tensor_src[t] = op;
  for (const Edge& e : g.edges()) {
    int64_t& b = p.tensor_bytes[p.out_base[e.src] + e.src_output];
    b = std::max(b, e.bytes);
  }

  // Directed unit arcs, one per (tensor, consuming unit) outside the producing unit.
  struct Arc {
    int32_t a, b;
    double bytes, time;
  };
  std::vector<Arc> arcs;
  p.send_bytes.assign(p.U, 0);
  p.send_time.assign(p.U, 0);
  std::vector<std::pair<int32_t, int32_t>> outs;  // (output, consumer unit)
  for (int32_t op = 0; op < N; ++op) {
    const int32_t u = unit_of[op];
    outs.clear();
    for (int64_t k = g.out_ptr()[op]; k < g.out_ptr()[op + 1]; ++k) {
      const Edge& e = g.edges()[g.out_edge_ids()[k]];
      const int32_t v = unit_of[e.dst];
      if (v != u) outs.emplace_back(e.src_output, v);
    }
    std::sort(outs.begin(), outs.end());
    outs.erase(std::unique(outs.begin(), outs.end()), outs.end());
    int32_t last_output = -1;
    for (const auto& [o, v] : outs) {
      const int64_t bytes = p.tensor_bytes[p.out_base[op] + o];
      const double b = static_cast<double>(bytes);
      const double t = cv.mean_transfer_s(bytes);
      arcs.push_back({u, v, b, t});
      arcs.push_back({v, u, b, t});
      if (o != last_output) {  // a tensor sent elsewhere: its bytes once per unit (volume)
        p.send_bytes[u] += b;
        p.send_time[u] += t;
        last_output = o;
      }
    }
  }
  std::sort(arcs.begin(), arcs.end(),
            [](const Arc& x, const Arc& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
  p.xadj.assign(p.U + 1, 0);
  for (size_t i = 0; i < arcs.size();) {
    size_t j = i;
    double b = 0, t = 0;
    for (; j < arcs.size() && arcs[j].a == arcs[i].a && arcs[j].b == arcs[i].b; ++j) {
      b += arcs[j].bytes;
      t += arcs[j].time;
    }
    p.adj.push_back(arcs[i].b);
    p.adj_bytes.push_back(b);
    p.adj_time.push_back(t);
    ++p.xadj[arcs[i].a + 1];
    i = j;
  }
  for (int32_t u = 0; u < p.U; ++u) p.xadj[u + 1] += p.xadj[u];
  return p;
}

// Target shares per device: time by speed (1 / the graph's total op time there), memory by
// capacity when every capacity is finite. Uniform shares are returned empty (METIS's default).
struct Targets {
  std::vector<double> time, mem;  // (D) each sums to 1
  bool uniform = true;
};

Targets make_targets(const CostView& cv) {
  const int32_t D = cv.num_devices();
  Targets t;
  t.time.assign(D, 0);
  t.mem.assign(D, 0);
  std::vector<double> total(D, 0);
  for (int32_t op = 0; op < cv.num_ops(); ++op)
    for (int32_t d = 0; d < D; ++d) total[d] += cv.op_time_s(op, d);
  bool finite_caps = true;
  for (int32_t d = 0; d < D; ++d)
    finite_caps = finite_caps && cv.capacity_bytes(d) != std::numeric_limits<int64_t>::max();
  double st = 0, sm = 0;
  for (int32_t d = 0; d < D; ++d) {
    t.time[d] = total[d] > 0 ? 1.0 / total[d] : 1.0;
    t.mem[d] = finite_caps ? static_cast<double>(cv.capacity_bytes(d)) : 1.0;
    st += t.time[d];
    sm += t.mem[d];
  }
  for (int32_t d = 0; d < D; ++d) {
    t.time[d] /= st;
    t.mem[d] /= sm;
    if (t.time[d] != t.time[0] || t.mem[d] != t.mem[0]) t.uniform = false;
  }
  if (t.uniform) {
    std::fill(t.time.begin(), t.time.end(), 1.0 / D);
    std::fill(t.mem.begin(), t.mem.end(), 1.0 / D);
  }
  return t;
}

// The conservative memory estimate per device and its incremental update under unit moves:
// sum of the op memory of its units + every tensor it receives (once per (tensor, device),
// the transfer's bytes), which bounds the simulator's peak from above.
class MemoryEstimate {
 public:
  MemoryEstimate(const Graph& g, const UnitProblem& p, std::vector<int32_t>& unit_dev)
      : g_(g), p_(p), dev_(unit_dev), D_(p.D) {
    const int64_t T = static_cast<int64_t>(p.tensor_bytes.size());
    cnt_.assign(static_cast<size_t>(T) * D_, 0);
    k_.assign(T, -1);
    for (const Edge& e : g.edges())
      ++cnt_[static_cast<size_t>(p.out_base[e.src] + e.src_output) * D_ +
             dev_[p.units.unit_of[e.dst]]];
    load_.assign(D_, 0);
    for (int32_t u = 0; u < p.U; ++u) load_[dev_[u]] += p.mem_bytes[u];
    for (int64_t t = 0; t < T; ++t) {
      const int32_t src_dev = dev_[p.units.unit_of[p.tensor_src[t]]];
      for (int32_t d = 0; d < D_; ++d)
        if (d != src_dev && cnt_[static_cast<size_t>(t) * D_ + d] > 0)
          load_[d] += static_cast<double>(p.tensor_bytes[t]);
    }
  }

  double load(int32_t d) const { return load_[d]; }

  // Collects the tensors unit u touches (produces with consumers, or consumes) and, for each,
  // how many of its consumer edges end in u.
  void touch(int32_t u) {
    touched_.clear();
    for (int64_t i = p_.unit_ptr[u]; i < p_.unit_ptr[u + 1]; ++i) {
      const int32_t op = p_.unit_ops[i];
      for (int64_t k = g_.in_ptr()[op]; k < g_.in_ptr()[op + 1]; ++k) {
        const Edge& e = g_.edges()[g_.in_edge_ids()[k]];
        const int64_t t = p_.out_base[e.src] + e.src_output;
        if (k_[t] < 0) {
          k_[t] = 0;
          touched_.push_back(t);
        }
        ++k_[t];
      }
      for (int64_t k = g_.out_ptr()[op]; k < g_.out_ptr()[op + 1]; ++k) {
        const Edge& e = g_.edges()[g_.out_edge_ids()[k]];
        const int64_t t = p_.out_base[op] + e.src_output;
        if (k_[t] < 0) {
          k_[t] = 0;
          touched_.push_back(t);
        }
      }
    }
  }
  void untouch() {
    for (int64_t t : touched_) k_[t] = -1;
    touched_.clear();
  }

  // Load changes of devices s (u's device) and t when the touched unit u moves from s to t.
  void move_delta(int32_t u, int32_t t, double* ds, double* dt) const {
    const int32_t s = dev_[u];
    double a = -p_.mem_bytes[u], b = p_.mem_bytes[u];
    for (int64_t x : touched_) {
      const int32_t src_unit = p_.units.unit_of[p_.tensor_src[x]];
      const int32_t before = dev_[src_unit], after = src_unit == u ? t : before;
      const int32_t k = k_[x];
      const int32_t cs = cnt_[static_cast<size_t>(x) * D_ + s];
      const int32_t ct = cnt_[static_cast<size_t>(x) * D_ + t];
      const double bytes = static_cast<double>(p_.tensor_bytes[x]);
      a += bytes * ((cs - k > 0 && after != s) - (cs > 0 && before != s));
      b += bytes * ((ct + k > 0 && after != t) - (ct > 0 && before != t));
    }
    *ds = a;
    *dt = b;
  }

  // Moves the touched unit u to t (the caller untouches afterwards).
  void apply(int32_t u, int32_t t) {
    double ds = 0, dt = 0;
    move_delta(u, t, &ds, &dt);
    const int32_t s = dev_[u];
    load_[s] += ds;
    load_[t] += dt;
    for (int64_t x : touched_) {
      cnt_[static_cast<size_t>(x) * D_ + s] -= k_[x];
      cnt_[static_cast<size_t>(x) * D_ + t] += k_[x];
    }
    dev_[u] = t;
  }

 private:
  const Graph& g_;
  const UnitProblem& p_;
  std::vector<int32_t>& dev_;
  int32_t D_;
  std::vector<int32_t> cnt_;  // (tensors, devices) consumer edges of the tensor on the device
  std::vector<int32_t> k_;    // scratch: consumer edges into the touched unit; -1 = untouched
  std::vector<int64_t> touched_;
  std::vector<double> load_;
};

struct RepairResult {
  int64_t moved = 0;
  int32_t over_before = 0, over_after = 0;  // devices over capacity
};

// Greedy repair: while a device's estimate exceeds its capacity, move its units (in order of
// least added cut bytes per byte of memory freed) to the device with room that adds the least
// cut bytes, until it fits. Each move lowers the source's estimate and keeps the target within
// capacity, so the total overflow strictly falls; stops when a pass moves nothing.
RepairResult repair_memory(const Graph& g, const UnitProblem& p, const CostView& cv,
                           std::vector<int32_t>& unit_dev) {
  const int32_t D = p.D;
  MemoryEstimate est(g, p, unit_dev);
  auto cap = [&](int32_t d) { return static_cast<double>(cv.capacity_bytes(d)); };
  auto over = [&] {
    std::vector<int32_t> o;
    for (int32_t d = 0; d < D; ++d)
      if (est.load(d) > cap(d)) o.push_back(d);
    std::sort(o.begin(), o.end(), [&](int32_t a, int32_t b) {
      const double x = est.load(a) - cap(a), y = est.load(b) - cap(b);
      return x != y ? x > y : a < b;
    });
    return o;
  };
  RepairResult r;
  std::vector<int32_t> o = over();
  r.over_before = static_cast<int32_t>(o.size());
  std::vector<double> conn(D);
  // Best target of the touched unit u (on s): {score, target}; target -1 when none fits.
  auto best_target = [&](int32_t u) {
    const int32_t s = unit_dev[u];
    std::fill(conn.begin(), conn.end(), 0.0);
    for (int64_t k = p.xadj[u]; k < p.xadj[u + 1]; ++k) conn[unit_dev[p.adj[k]]] += p.adj_bytes[k];
    double best = std::numeric_limits<double>::infinity();
    int32_t bt = -1;
    for (int32_t t = 0; t < D; ++t) {
      if (t == s) continue;
      double ds = 0, dt = 0;
      est.move_delta(u, t, &ds, &dt);
      if (!(ds < 0) || est.load(t) + dt > cap(t)) continue;
      const double score = (conn[s] - conn[t]) / -ds;
      if (score < best) {
        best = score;
        bt = t;
      }
    }
    return std::pair<double, int32_t>(best, bt);
  };
  std::vector<uint32_t> stamp(p.U, 0);
  for (int pass = 0; pass < 4 * D + 8 && !o.empty(); ++pass) {
    bool progress = false;
    for (int32_t s : o) {
      if (est.load(s) <= cap(s)) continue;
      // Lazy min-heap of (score, unit, stamp): after a move the unit's neighbours on s are
      // scored again (their cut changes), so connected regions tend to move together.
      using Entry = std::tuple<double, int32_t, uint32_t>;
      std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
      auto score_of = [&](int32_t u) {
        est.touch(u);
        const auto bt = best_target(u);
        est.untouch();
        return bt;
      };
      for (int32_t u = 0; u < p.U; ++u) {
        if (unit_dev[u] != s || !(p.mem_bytes[u] > 0)) continue;
        const auto [score, t] = score_of(u);
        if (t >= 0) heap.emplace(score, u, ++stamp[u]);
      }
      while (!heap.empty() && est.load(s) > cap(s)) {
        const auto [old_score, u, st] = heap.top();
        heap.pop();
        if (st != stamp[u] || unit_dev[u] != s) continue;
        est.touch(u);
        const auto [score, t] = best_target(u);  // the state may have changed since
        if (t >= 0 && score > old_score) {
          heap.emplace(score, u, ++stamp[u]);
        } else if (t >= 0) {
          est.apply(u, t);
          ++r.moved;
          progress = true;
        }
        est.untouch();
        if (unit_dev[u] == s) continue;
        for (int64_t k = p.xadj[u]; k < p.xadj[u + 1]; ++k) {
          const int32_t v = p.adj[k];
          if (unit_dev[v] != s || !(p.mem_bytes[v] > 0)) continue;
          const auto [vs, vt] = score_of(v);
          ++stamp[v];
          if (vt >= 0) heap.emplace(vs, v, stamp[v]);
        }
      }
    }
    o = over();
    if (!progress) break;
  }
  r.over_after = static_cast<int32_t>(o.size());
  return r;
}

class MetisPlacer : public Placer {
 public:
  MetisPlacer(std::string scheme, std::string objective, std::string edge_weight, double imbalance,
              int64_t ncuts, bool repair)
      : scheme_(std::move(scheme)),
        objective_(std::move(objective)),
        edge_weight_(std::move(edge_weight)),
        imbalance_(imbalance),
        ncuts_(ncuts),
        repair_(repair) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const Graph& g = pb.graph();
    const int32_t D = pb.num_devices();
    if (g.num_ops() == 0) {
      run.set_note("empty graph");
      return Placement{};
    }
    if (D == 1) {
      Placement p{std::vector<int32_t>(g.num_ops(), 0)};
      finish(run, p, "one device: every op on it (METIS not called)");
      return p;
    }
    const CostView cv(pb);
    UnitProblem up = contract(g, cv);
    const Targets tg = make_targets(cv);
    std::vector<int32_t> unit_dev(up.U, 0);
    std::string how;
    if (up.U < D) {
      // Fewer units than parts: METIS is not defined for it (empty parts); one unit per
      // device instead, the longest unit on the fastest device.
      std::vector<int32_t> order(up.U), devs(D);
      std::iota(order.begin(), order.end(), 0);
      std::iota(devs.begin(), devs.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return up.time_s[a] > up.time_s[b]; });
      std::stable_sort(devs.begin(), devs.end(),
                       [&](int32_t a, int32_t b) { return tg.time[a] > tg.time[b]; });
      for (int32_t i = 0; i < up.U; ++i) unit_dev[order[i]] = devs[i];
      how = std::to_string(up.U) + " units < " + std::to_string(D) +
            " devices: one unit per device (METIS not called)";
    } else {
      partition(run, up, tg, unit_dev);
      how = "METIS " + scheme_ + " (" + objective_ + ", " + edge_weight_ + "), " +
            std::to_string(D) + " parts of " + std::to_string(up.U) + " units";
    }

    // The memory repair (or, without it, the count of devices over capacity).
    char buf[512];
    std::string repaired;
    if (repair_) {
      const RepairResult rr = repair_memory(g, up, cv, unit_dev);
      if (rr.over_before > 0) {
        std::snprintf(
            buf, sizeof buf, ", repair moved %lld units (%d devices over capacity%s)",
            static_cast<long long>(rr.moved), rr.over_before,
            rr.over_after > 0
                ? (", " + std::to_string(rr.over_after) + " still over: no fit found").c_str()
                : ", all fit now");
        repaired = buf;
      } else {
        repaired = ", memory estimate fits";
      }
    } else {
      std::vector<int32_t> copy = unit_dev;
      const MemoryEstimate est(g, up, copy);
      int32_t o = 0;
      for (int32_t d = 0; d < D; ++d) o += est.load(d) > static_cast<double>(cv.capacity_bytes(d));
      repaired = o > 0 ? ", no repair: " + std::to_string(o) + " devices over capacity"
                       : ", memory estimate fits";
    }
    // Summary of the final placement: cut and each constraint's balance against its targets.
    double cut = 0;
    std::vector<double> t_load(D, 0), m_load(D, 0);
    double t_total = 0, m_total = 0;
    for (int32_t u = 0; u < up.U; ++u) {
      for (int64_t k = up.xadj[u]; k < up.xadj[u + 1]; ++k)
        if (unit_dev[up.adj[k]] != unit_dev[u]) cut += up.adj_bytes[k];
      t_load[unit_dev[u]] += up.time_s[u];
      m_load[unit_dev[u]] += up.mem_bytes[u];
      t_total += up.time_s[u];
      m_total += up.mem_bytes[u];
    }
    double t_imb = 0, m_imb = 0;
    for (int32_t d = 0; d < D; ++d) {
      if (t_total > 0) t_imb = std::max(t_imb, t_load[d] / (tg.time[d] * t_total));
      if (m_total > 0) m_imb = std::max(m_imb, m_load[d] / (tg.mem[d] * m_total));
    }
    std::snprintf(buf, sizeof buf, ", cut %s, imbalance time %.3f memory %.3f%s",
                  human_bytes(cut / 2).c_str(), t_imb, m_imb,
                  tg.uniform ? "" : " (targets by speed and capacity)");
    Placement p = up.units.expand(unit_dev);
    finish(run, p, how + buf + repaired);
    return p;
  }

 private:
  void finish(Run& run, const Placement& p, const std::string& note) {
    std::string n = note;
    if (run.samples_left() > 0) {
      const double step = run.evaluate(p);
      char buf[64];
      if (std::isfinite(step))
        std::snprintf(buf, sizeof buf, "; step %.4g s", step);
      else
        std::snprintf(buf, sizeof buf, "; invalid in the simulator");
      n += buf;
    }
    run.set_note(n);
  }

  void partition(Run& run, const UnitProblem& up, const Targets& tg,
                 std::vector<int32_t>& unit_dev) {
    const int32_t U = up.U, D = up.D;
    idx_t nvtxs = U, ncon = 2, nparts = D, objval = 0;
    std::vector<idx_t> xadj(U + 1), vwgt(static_cast<size_t>(U) * 2), part(U, 0);
    for (int32_t u = 0; u <= U; ++u) xadj[u] = static_cast<idx_t>(up.xadj[u]);
    const size_t nnz = up.adj.size();
    // At least one entry so that the pointers are never null on an edgeless graph.
    std::vector<idx_t> adjncy(std::max<size_t>(nnz, 1), 0), adjwgt(std::max<size_t>(nnz, 1), 1);
    for (size_t k = 0; k < nnz; ++k) adjncy[k] = up.adj[k];
    scale_to_idx(edge_weight_ == "time" ? up.adj_time : up.adj_bytes,
                 kEdgeTotal - static_cast<double>(nnz), 1, adjwgt.data(), 1);
    for (size_t k = 0; k < nnz; ++k) adjwgt[k] = std::max<idx_t>(1, adjwgt[k]);
    scale_to_idx(up.time_s, kVertexTotal, 0, vwgt.data(), 2);
    scale_to_idx(up.mem_bytes, kVertexTotal, 0, vwgt.data() + 1, 2);
    std::vector<idx_t> vsize;
    if (objective_ == "volume") {
      vsize.assign(U, 1);
      scale_to_idx(edge_weight_ == "time" ? up.send_time : up.send_bytes, kEdgeTotal / 4, 1,
                   vsize.data(), 1);
    }
    std::vector<real_t> tpwgts;
    if (!tg.uniform) {
      tpwgts.resize(static_cast<size_t>(D) * 2);
      double st = 0, sm = 0;
      for (int32_t d = 0; d < D; ++d) {
        tpwgts[2 * d] = static_cast<real_t>(std::max(tg.time[d], 1e-6));
        tpwgts[2 * d + 1] = static_cast<real_t>(std::max(tg.mem[d], 1e-6));
        if (d + 1 < D) {
          st += tpwgts[2 * d];
          sm += tpwgts[2 * d + 1];
        }
      }
      // The last part takes the rest so that each constraint sums to 1 in real_t.
      tpwgts[2 * (D - 1)] = static_cast<real_t>(std::max(1.0 - st, 1e-6));
      tpwgts[2 * (D - 1) + 1] = static_cast<real_t>(std::max(1.0 - sm, 1e-6));
    }
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_OBJTYPE] = objective_ == "volume" ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
    options[METIS_OPTION_UFACTOR] =
        std::max<idx_t>(1, static_cast<idx_t>(std::llround(imbalance_ * 1000)));
    options[METIS_OPTION_NCUTS] = static_cast<idx_t>(ncuts_);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(run.seed() % 2147483647u);
    options[METIS_OPTION_NUMBERING] = 0;
    options[METIS_OPTION_DBGLVL] = 0;
    // METIS keeps its random state in process globals (GKlib), so two partitions computed
    // at once (the evaluator's parallel cells) would interleave their random streams and
    // neither would be deterministic: one METIS call at a time.
    static std::mutex metis_mutex;
    std::unique_lock<std::mutex> metis_lock(metis_mutex);
    const int rc =
        scheme_ == "recursive"
            ? METIS_PartGraphRecursive(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(),
                                       vsize.empty() ? nullptr : vsize.data(), adjwgt.data(),
                                       &nparts, tpwgts.empty() ? nullptr : tpwgts.data(), nullptr,
                                       options, &objval, part.data())
            : METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(),
                                  vsize.empty() ? nullptr : vsize.data(), adjwgt.data(), &nparts,
                                  tpwgts.empty() ? nullptr : tpwgts.data(), nullptr, options,
                                  &objval, part.data());
    metis_lock.unlock();
    if (rc != METIS_OK)
      throw InputError("metis: METIS_PartGraph" +
                       std::string(scheme_ == "recursive" ? "Recursive" : "Kway") +
                       " failed with " + metis_code_name(rc) + " (" + std::to_string(rc) + ") on " +
                       std::to_string(U) + " units, " + std::to_string(nnz / 2) + " edges, " +
                       std::to_string(D) + " parts");
    for (int32_t u = 0; u < U; ++u) {
      if (part[u] < 0 || part[u] >= D)
        throw InputError("metis: METIS returned part " + std::to_string(part[u]) + " for unit " +
                         std::to_string(u) + " (expected 0.." + std::to_string(D - 1) + ")");
      unit_dev[u] = static_cast<int32_t>(part[u]);
    }
  }

  std::string scheme_, objective_, edge_weight_;
  double imbalance_;
  int64_t ncuts_;
  bool repair_;
};

}  // namespace

MethodInfo metis_method() {
  return MethodInfo{
      "metis",
      "METIS k-way partition of the colocation-unit graph (time and memory balanced, cut bytes "
      "minimized), then a greedy memory repair",
      {string_option("scheme", "kway", {"kway", "recursive"},
                     "METIS_PartGraphKway or METIS_PartGraphRecursive (recursive bisection)"),
       string_option("objective", "cut", {"cut", "volume"},
                     "minimize the edge cut or the communication volume (kway only)"),
       string_option("edge_weight", "bytes", {"bytes", "time"},
                     "edge weights: tensor bytes, or mean uncontended transfer time"),
       number_option("imbalance", 0.03, 0.001, 10,
                     "allowed imbalance per constraint (METIS ufactor / 1000): 0.03 = 3%"),
       integer_option("ncuts", 1, 1, 100, "partitions METIS computes, keeping the best cut"),
       boolean_option("repair", true,
                      "move units off devices whose memory estimate exceeds capacity")},
      false,
      [](const Options& o) {
        if (o.string("objective") == "volume" && o.string("scheme") == "recursive")
          throw InputError(
              "method 'metis': options.objective 'volume' needs options.scheme 'kway' "
              "(METIS_PartGraphRecursive minimizes the cut only)");
        return std::make_unique<MetisPlacer>(o.string("scheme"), o.string("objective"),
                                             o.string("edge_weight"), o.number("imbalance"),
                                             o.integer("ncuts"), o.boolean("repair"));
      }};
}

}  // namespace gdp::place
