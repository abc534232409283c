// Zero-shot placement (rl/gdp/zero_shot.h): every reading of the network, its greedy
// placements and samples, simulated through the run.
#include "rl/gdp/zero_shot.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "nn/autograd.h"
#include "place/repair.h"
#include "sim/lower_bound.h"

namespace gdp::rl {

namespace {

// One way of reading the network: what one decision places ("op", "stage", "cut" or "mix"),
// the input pooled that way, its unit logits and their greedy actions.
struct Decoding {
  std::string decision;
  PolicyInput in;
  nn::Tensor logits;
  std::vector<int32_t> greedy;
  int32_t greedy_used = 0;   // the devices its greedy placement's count names (D without a row)
  bool greedy_only = false;  // a second policy's reading: its greedy placements, no samples
};

// The unit devices of one sample's actions `a` read at L devices: with the devices-used row,
// the row set to L; without it, the labels coarsened by the row's own rule, floor(a L / D):
// L = 1 is one device. (Merging the labels in the order of their units' mean topological
// position instead measured no better: docs/results.md, "Op decisions, plain PPO".)
std::vector<int32_t> devices_at(const PolicyInput& in, std::vector<int32_t> a, int32_t L) {
  if (in.devices_used) {
    a.back() = L - 1;
    return unit_devices(in, a, 0);
  }
  std::vector<int32_t> d = unit_devices(in, a, 0);  // a mix's bins read as devices first
  for (int32_t& x : d) x = static_cast<int32_t>(int64_t{x} * L / in.num_devices);
  return d;
}

// The readings, the policy's own first: "both" is own and the other of op and stage; "all"
// every reading the network has (op, stage, cut where it has a cut head, mix where it has
// a mix head).
std::vector<std::string> decisions(const Policy& policy, const ZeroShotOptions& o) {
  const PolicyConfig& pc = policy.config();
  const std::string& own = pc.decision;
  auto has = [&](const std::string& x) {
    return (x != "cut" || pc.cut_head) && (x != "mix" || pc.mix_head);
  };
  if (o.decode == "own") return {own};
  if (o.decode == "both") return {own, own == "op" ? "stage" : "op"};
  if (o.decode == "all") {
    std::vector<std::string> d{own};
    for (const char* x : {"op", "stage", "cut", "mix"})
      if (x != own && has(x)) d.push_back(x);
    return d;
  }
  if (!has(o.decode))
    throw InputError("method 'gdp': options.decode: \"" + o.decode + "\" needs a policy with a " +
                     o.decode + " head (" + o.source + " has none)");
  return {o.decode};
}

}  // namespace

ZeroShotResult zero_shot(place::Run& run, const Policy& policy, const ZeroShotOptions& o,
                         const Policy* also) {
  const place::Problem& pb = run.problem();
  const int32_t D = pb.cluster().num_devices();
  nn::NoGradGuard no_grad;
  std::vector<Decoding> dec;
  auto read = [&](const Policy& p, const std::string& d, bool greedy_only) {
    Decoding x{d, p.prepare(pb.graph(), pb.cluster(), pb.cost(), d), {}, {}, D, greedy_only};
    x.logits = p.forward(x.in).value().cpu();
    x.greedy = greedy_actions(x.logits);
    if (x.in.devices_used) x.greedy_used = x.greedy.back() + 1;
    if (greedy_only) x.decision = "the second policy's " + d;
    dec.push_back(std::move(x));
  };
  for (const std::string& d : decisions(policy, o)) read(policy, d, false);
  if (also) {
    ZeroShotOptions every = o;
    every.decode = "all";
    for (const std::string& d : decisions(*also, every)) read(*also, d, true);
  }
  // A budget too small for every decoding's greedy placement keeps the first ones.
  dec.erase(
      dec.begin() + std::clamp<int64_t>(run.samples_left(), 1, static_cast<int64_t>(dec.size())),
      dec.end());
  const size_t G = dec.size();
  // Candidates, each with where it came from (for the note): every decoding's greedy
  // placement first; then, with every_count, the greedy labels read at every other device
  // count the memory bound allows (nearest the greedy count first, the decodings taking
  // turns; a placement already listed is skipped), in place of as many samples; then
  // samples, split between the decodings as `allocate` says (to the leading one by default).
  std::vector<Placement> ps;
  std::vector<std::string> from;
  std::vector<size_t> source;  // the decoding of each candidate
  std::set<std::vector<int32_t>> seen;
  for (const Decoding& x : dec) {
    source.push_back(static_cast<size_t>(&x - dec.data()));
    ps.push_back(placement_of(x.in, x.greedy, 0));
    from.push_back(x.decision + " decisions' greedy on " + std::to_string(x.greedy_used));
    seen.insert(ps.back().device);
  }
  // 1 + samples candidates in all, as with one decoding: the other decodings' greedy
  // placements take samples' places (and are kept when samples is 0).
  const int64_t extra = static_cast<int64_t>(G) - 1;
  int32_t n = static_cast<int32_t>(
      std::max<int64_t>(0, std::min<int64_t>(o.samples, run.samples_left() - 1) - extra));
  std::vector<int32_t> counts(G, 0), drawn(G, 0);
  if (o.every_count) {
    const int32_t least =
        fewest_devices_holding(pb.cluster(), memory_lower_bound_bytes(pb.graph()));
    std::vector<std::vector<int32_t>> order(G);
    size_t longest = 0;
    for (size_t i = 0; i < G; ++i) {
      for (int32_t L = 1; L <= D; ++L)
        if (L != dec[i].greedy_used && (L == D || (least > 0 && L >= least))) order[i].push_back(L);
      const int32_t used = dec[i].greedy_used;
      std::stable_sort(order[i].begin(), order[i].end(), [used](int32_t x, int32_t y) {
        return std::abs(x - used) < std::abs(y - used);
      });
      longest = std::max(longest, order[i].size());
    }
    int32_t total = 0;
    for (size_t r = 0; r < longest && total < n; ++r)
      for (size_t i = 0; i < G && total < n; ++i) {
        if (r >= order[i].size()) continue;
        const int32_t L = order[i][r];
        Placement p = dec[i].in.units.expand(devices_at(dec[i].in, dec[i].greedy, L));
        if (!seen.insert(p.device).second) continue;
        ps.push_back(std::move(p));
        source.push_back(i);
        from.push_back(dec[i].decision + " decisions' greedy on " + std::to_string(L));
        ++counts[i];
        ++total;
      }
    n -= total;
  }
  Rng rng(run.seed());
  std::vector<double> t = run.evaluate(ps);  // the greedy placements and their counts
  // count samples of decoding i, simulated: placements not seen before only (a repeat tells
  // nothing and costs a simulation), drawn one at a time (the same rng sequence as drawing
  // them at once), at most 4 count + 16 draws; returns how many it simulated.
  // A second policy's decodings draw none: exhausted from the start. S: the others (the first
  // policy's, listed first; at least one).
  std::vector<char> exhausted(G, 0);
  for (size_t i = 0; i < G; ++i) exhausted[i] = dec[i].greedy_only;
  const int32_t S = static_cast<int32_t>(std::count(exhausted.begin(), exhausted.end(), 0));
  // While nothing valid has been found, the last sample of the budget stays in reserve for the
  // memory repair below (its valid placement is one simulation); `held` ends the drawing.
  bool held = false;
  auto draw = [&](size_t i, int32_t count) -> int32_t {
    if (!run.has_best())
      count = static_cast<int32_t>(std::min<int64_t>(count, run.samples_left() - 1));
    if (count <= 0) {
      held = true;
      return 0;
    }
    std::vector<Placement> batch;
    for (int32_t tries = 0; static_cast<int32_t>(batch.size()) < count && tries < 4 * count + 16;
         ++tries) {
      Placement p =
          placement_of(dec[i].in, sample_actions(dec[i].logits, 1, rng, o.temperature), 0);
      if (!seen.insert(p.device).second) continue;
      batch.push_back(std::move(p));
      from.push_back(dec[i].decision + " decisions' sample");
      source.push_back(i);
    }
    const std::vector<double> tb = run.evaluate(batch);
    t.insert(t.end(), tb.begin(), tb.end());
    for (Placement& p : batch) ps.push_back(std::move(p));
    const int32_t got = static_cast<int32_t>(batch.size());
    drawn[i] += got;
    if (got < count) exhausted[i] = 1;  // its distribution holds few other placements
    return got;
  };
  if (o.allocate == "even" || S == 1) {
    int32_t left = n;
    for (int32_t i = 0; i < S; ++i) left -= draw(static_cast<size_t>(i), n / S + (i < n % S));
    // What an exhausted decoding could not use goes to the others, one sample each in turn.
    while (left > 0 && !held && std::find(exhausted.begin(), exhausted.end(), 0) != exhausted.end())
      for (size_t i = 0; i < G && left > 0 && !held; ++i)
        if (!exhausted[i]) left -= draw(i, 1);
  } else {
    // "best": rounds of about n / 8 samples, one to each decoding in turn, then each next
    // round to the decoding whose fastest candidate so far is the fastest (ties: the
    // earlier one), so that the samples go where the network's reading is best.
    // An exhausted decoding leaves the lead to the next fastest; what it could not draw
    // stays in the budget.
    const int32_t chunk = std::max(1, n / 8);
    int32_t left = n;
    for (size_t i = 0; i < G && left > 0 && !held; ++i)
      if (!dec[i].greedy_only) left -= draw(i, std::min(chunk, left));
    while (left > 0 && !held &&
           std::find(exhausted.begin(), exhausted.end(), 0) != exhausted.end()) {
      std::vector<double> fastest(G, std::numeric_limits<double>::infinity());
      for (size_t k = 0; k < t.size(); ++k)
        if (std::isfinite(t[k]) && !exhausted[source[k]])
          fastest[source[k]] = std::min(fastest[source[k]], t[k]);
      size_t lead = 0;  // the fastest open decoding (ties, or nothing valid yet: the earliest)
      while (exhausted[lead]) ++lead;
      for (size_t i = 0; i < G; ++i)
        if (!exhausted[i] && fastest[i] < fastest[lead]) lead = i;
      left -= draw(lead, std::min(chunk, left));
    }
  }
  int32_t raw_valid = 0;
  size_t best = 0;
  for (size_t k = 0; k < t.size(); ++k) {
    raw_valid += std::isfinite(t[k]);
    if (std::isfinite(t[k]) && !(t[k] >= t[best] && std::isfinite(t[best]))) best = k;
  }
  // Nothing the network gave fits: repair the greedy placement, then the samples in order,
  // until one fits (place/repair.h), every simulation counted.
  std::string repaired;
  if (!run.has_best()) {
    const PolicyInput& in = dec[0].in;
    std::vector<double> key(static_cast<size_t>(pb.graph().num_ops()));
    for (size_t v = 0; v < key.size(); ++v)
      key[v] = in.features.x[static_cast<int64_t>(v) * kNodeFeatures + feat::stage_time];
    for (size_t k = 0; k < ps.size() && !run.has_best(); ++k) {
      const place::RepairResult r = place::repair_memory(pb, ps[k], key);
      if (r.valid && run.samples_left() > 0) {
        run.evaluate(r.placement);  // its last simulation; the earlier ones are counted after
        run.count_samples(r.simulations - 1);
        repaired = "; " + std::string(k == 0 ? "the greedy placement" : "a candidate") +
                   " repaired (" + std::to_string(r.moved_ops) + " ops moved)";
      } else {
        run.count_samples(r.simulations);
      }
      if (k >= 8) break;  // repair is a fallback, not a search
    }
  }
  auto part = [&](size_t i) {
    return "greedy" +
           (counts[i] ? " at " + std::to_string(counts[i] + 1) + " device counts" : std::string()) +
           (drawn[i] ? " and " + std::to_string(drawn[i]) + " samples" : std::string());
  };
  std::string note;
  if (G == 1) {
    const Decoding& x = dec[0];
    note = "zero-shot: " + part(0) + " from " + o.source + ", " + std::to_string(x.in.num_units()) +
           " decisions" +
           (x.in.devices_used ? ", greedy on " + std::to_string(x.greedy_used) + " of " +
                                    std::to_string(D) + " devices"
                              : std::string());
  } else {
    note = "zero-shot from " + o.source + (also ? " and " + o.also : std::string()) + ":";
    for (size_t i = 0; i < G; ++i)
      note += std::string(i ? ";" : "") + " " + dec[i].decision + " decisions (" +
              std::to_string(dec[i].in.num_units()) + "): " + part(i);
  }
  note += "; " + std::to_string(raw_valid) + "/" + std::to_string(ps.size()) + " valid as decoded" +
          (raw_valid ? "; best: " + from[best] : std::string()) + repaired;
  return ZeroShotResult{std::move(ps), std::move(t), std::move(note)};
}

}  // namespace gdp::rl
