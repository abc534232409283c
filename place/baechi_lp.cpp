// m-SCT's favourite children: Hanen & Munier's LP relaxation through GLPK, and the
// transfer-size approximation (place/baechi.h, favourite_children).
#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <limits>
#include <mutex>
#include <queue>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "place/baechi.h"
#include "place/baechi_detail.h"

namespace gdp::place::baechi {

using namespace detail;

// m-SCT's favourite children

namespace {

// Distinct (parent, child) pairs with the bytes of the distinct tensors between them.
struct Pair {
  int32_t src, dst;
  int64_t bytes;
  bool inter;  // the two ops are in different groups (edges inside a group cost nothing)
};

std::vector<Pair> make_pairs(const Graph& g, const Groups& groups) {
  const Tensors tensors = make_tensors(g);
  std::vector<Pair> pairs;
  std::vector<std::pair<int32_t, int32_t>> outs;  // (dst, src_output)
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    outs.clear();
    for (int64_t k = g.out_ptr()[i]; k < g.out_ptr()[i + 1]; ++k) {
      const Edge& e = g.edges()[g.out_edge_ids()[k]];
      outs.emplace_back(e.dst, e.src_output);
    }
    std::sort(outs.begin(), outs.end());
    for (size_t a = 0; a < outs.size();) {
      size_t b = a;
      int64_t bytes = 0;
      for (; b < outs.size() && outs[b].first == outs[a].first; ++b) {
        if (b > a && outs[b].second == outs[b - 1].second) continue;
        bytes += tensors.bytes[tensors.base[i] + outs[b].second];
      }
      const int32_t j = outs[a].first;
      pairs.push_back({i, j, bytes, groups.group_of[i] != groups.group_of[j]});
      a = b;
    }
  }
  return pairs;
}

}  // namespace

std::vector<int32_t> favourite_children_by_bytes(const Graph& g, const Groups& groups) {
  const int32_t n = g.num_ops();
  const std::vector<Pair> pairs = make_pairs(g, groups);
  std::vector<int64_t> first(n + 1, 0);
  for (const Pair& p : pairs) ++first[p.src + 1];
  for (int32_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<int32_t> child(n, kNone);
  std::vector<uint8_t> has_parent(n, 0);
  for (int32_t i : g.topo_order()) {
    int32_t best = kNone;
    int64_t best_bytes = -1;
    for (int64_t k = first[i]; k < first[i + 1]; ++k) {  // pairs of i, by child index
      const Pair& p = pairs[k];
      if (!p.inter || has_parent[p.dst]) continue;
      if (p.bytes > best_bytes) {
        best = p.dst;
        best_bytes = p.bytes;
      }
    }
    if (best != kNone) {
      child[i] = best;
      has_parent[best] = 1;
    }
  }
  return child;
}

namespace {

// GLPK reports an internal error by calling its error hook and, without one, aborting the
// process. This hook frees GLPK's environment (the problem object with it, as GLPK's manual
// prescribes) and jumps back to favourite_children, which then falls back like a failed LP.
// Only GLPK's C frames lie between, so no C++ destructor is skipped.
thread_local std::jmp_buf* glpk_escape = nullptr;

void glpk_error_hook(void*) {
  if (glpk_escape) {
    glp_free_env();
    std::longjmp(*glpk_escape, 1);
  }
}

struct LpOutcome {
  bool escaped = false;  // GLPK raised an internal error (its environment was freed)
  int rc = 0;            // glp_simplex's return code
  int status = 0;        // glp_get_status when rc == 0
  double objective = 0;
};

// min column n+1 (1-based: columns 1..n start times, n+1 makespan, the rest x in [0, 1]) s.t.
// row r >= lower[r-1], coefficients (ia, ja, ar) 1-based as GLPK takes them. Fills (*x)[c] for
// every column c on success. Only plain locals live across setjmp here.
LpOutcome solve_lp(int32_t n, int32_t cols, int32_t rows, const std::vector<double>& lower,
                   std::vector<int>& ia, std::vector<int>& ja, std::vector<double>& ar,
                   double time_limit_s, std::vector<double>* x) {
  // GLPK's environment is per thread only where it was built with thread-local storage;
  // one LP at a time keeps the evaluator's parallel cells safe either way.
  static std::mutex glpk_mutex;
  std::lock_guard<std::mutex> glpk_lock(glpk_mutex);
  LpOutcome out;
  std::jmp_buf escape;
  if (setjmp(escape) != 0) {
    glpk_escape = nullptr;
    glp_error_hook(nullptr, nullptr);
    LpOutcome failed;
    failed.escaped = true;
    return failed;
  }
  glpk_escape = &escape;
  glp_error_hook(glpk_error_hook, nullptr);
  glp_term_out(GLP_OFF);
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_cols(lp, cols);
  for (int32_t c = 1; c <= n + 1; ++c) glp_set_col_bnds(lp, c, GLP_LO, 0, 0);
  for (int32_t c = n + 2; c <= cols; ++c) glp_set_col_bnds(lp, c, GLP_DB, 0, 1);
  glp_set_obj_coef(lp, n + 1, 1);
  if (rows > 0) {
    glp_add_rows(lp, rows);
    for (int32_t r = 1; r <= rows; ++r) glp_set_row_bnds(lp, r, GLP_LO, lower[r - 1], 0);
    glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  parm.tm_lim = static_cast<int>(std::min(time_limit_s * 1000, 2.0e9));
  out.rc = glp_simplex(lp, &parm);
  out.status = out.rc == 0 ? glp_get_status(lp) : GLP_UNDEF;
  if (out.rc == 0 && out.status == GLP_OPT) {
    out.objective = glp_get_obj_val(lp);
    x->assign(static_cast<size_t>(cols) + 1, 0);
    for (int32_t c = 1; c <= cols; ++c) (*x)[c] = glp_get_col_prim(lp, c);
  }
  glp_delete_prob(lp);
  glpk_escape = nullptr;
  glp_error_hook(nullptr, nullptr);
  return out;
}

}  // namespace

Favourites favourite_children(const Graph& g, const CostView& cv, const Groups& groups,
                              int64_t lp_max_ops, double lp_time_limit_s, double threshold) {
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t n = g.num_ops();
  Favourites fav;
  auto fallback = [&](std::string why) {
    fav.child = favourite_children_by_bytes(g, groups);
    fav.from_lp = false;
    fav.why = std::move(why);
    fav.lp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return fav;
  };
  if (n > lp_max_ops)
    return fallback(std::to_string(n) + " ops > lp_max_ops " + std::to_string(lp_max_ops));

  const std::vector<Pair> pairs = make_pairs(g, groups);
  constexpr double kUs = 1e6;  // the LP in microseconds, as Baechi's, for GLPK's tolerances
  std::vector<int32_t> out_inter(n, 0), in_inter(n, 0), out_all(n, 0);
  for (const Pair& p : pairs) {
    ++out_all[p.src];
    if (p.inter) {
      ++out_inter[p.src];
      ++in_inter[p.dst];
    }
  }
  // Columns: s_i (1..n), w (n + 1), x of each inter-group pair (n + 2 ...).
  std::vector<int32_t> xcol(pairs.size(), 0);
  int32_t cols = n + 1;
  for (size_t k = 0; k < pairs.size(); ++k)
    if (pairs[k].inter) xcol[k] = ++cols;
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  int32_t rows = 0;
  auto add = [&](int r, int c, double v) {
    ia.push_back(r);
    ja.push_back(c);
    ar.push_back(v);
  };
  std::vector<double> lower;
  // s_j - s_i - c_ij x_ij >= p_i for every pair.
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Pair& p = pairs[k];
    ++rows;
    add(rows, p.dst + 1, 1);
    add(rows, p.src + 1, -1);
    if (p.inter) add(rows, xcol[k], -cv.mean_transfer_s(p.bytes) * kUs);
    lower.push_back(cv.mean_time_s(p.src) * kUs);
  }
  // w - s_i >= p_i for the sinks (the other ops are bounded through their children).
  for (int32_t i = 0; i < n; ++i) {
    if (out_all[i] > 0) continue;
    ++rows;
    add(rows, n + 1, 1);
    add(rows, i + 1, -1);
    lower.push_back(cv.mean_time_s(i) * kUs);
  }
  // At most one favourite child: sum of x over out-pairs >= outdeg - 1; one favourite parent.
  std::vector<std::vector<int32_t>> in_cols(n);
  std::vector<std::vector<int32_t>> out_cols(n);
  for (size_t k = 0; k < pairs.size(); ++k)
    if (pairs[k].inter) {
      out_cols[pairs[k].src].push_back(xcol[k]);
      in_cols[pairs[k].dst].push_back(xcol[k]);
    }
  for (auto* side : {&out_cols, &in_cols})
    for (int32_t i = 0; i < n; ++i) {
      const auto& cs = (*side)[i];
      if (cs.size() < 2) continue;
      ++rows;
      for (int32_t c : cs) add(rows, c, 1);
      lower.push_back(static_cast<double>(cs.size()) - 1);
    }

  std::vector<double> x;
  const LpOutcome lp = solve_lp(n, cols, rows, lower, ia, ja, ar, lp_time_limit_s, &x);
  fav.lp_rows = rows;
  fav.lp_cols = cols;
  if (lp.escaped) return fallback("GLPK stopped with an internal error");
  if (lp.rc != 0 || lp.status != GLP_OPT) {
    char why[160];
    std::snprintf(why, sizeof why, "the LP (%d rows, %d columns) %s", rows, cols,
                  lp.rc == GLP_ETMLIM                              ? "ran past lp_time_limit_s"
                  : lp.rc == GLP_EITLIM                            ? "ran past the iteration limit"
                  : lp.status == GLP_NOFEAS || lp.rc == GLP_ENOPFS ? "is infeasible"
                                                                   : "did not reach an optimum");
    return fallback(why);
  }
  fav.lp_makespan_s = lp.objective / kUs;
  // x_ij < threshold: j is i's favourite child; keep one per parent and one favourite parent
  // per child, smallest x first (ties: parent, then child index).
  struct Cand {
    double x;
    int32_t src, dst;
  };
  std::vector<Cand> cands;
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (!pairs[k].inter) continue;
    const double xk = x[xcol[k]];
    if (xk < threshold) cands.push_back({xk, pairs[k].src, pairs[k].dst});
  }
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.x != b.x ? a.x < b.x : a.src != b.src ? a.src < b.src : a.dst < b.dst;
  });
  fav.child.assign(n, kNone);
  std::vector<uint8_t> has_parent(n, 0);
  for (const Cand& c : cands) {
    if (fav.child[c.src] != kNone || has_parent[c.dst]) continue;
    fav.child[c.src] = c.dst;
    has_parent[c.dst] = 1;
  }
  fav.from_lp = true;
  fav.lp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return fav;
}

}  // namespace gdp::place::baechi
