// `gdp-anneal`: simulated annealing guided by a GDP policy (REGAL's idea: a graph network sets
// the proposal distributions of a search). The policy is read from a checkpoint (the shipped
// pre-trained one by default) and run once on the problem:
//   start: the best of the policy's greedy placement, `policy_samples` samples from it, and the
//          anneal start methods (init_methods), each simulated and counted in the budget;
//   moves: the anneal moves (place/anneal.h), where "move" and "scope" draw the new device of a
//          unit from (1 - mix) policy + mix uniform, when the policy's best start is within
//          `gate` of the best start (else the policy knows the graph less well than the start
//          methods, and the moves are uniform).
// mix = 1 with policy_samples = 0 is plain anneal with the policy's greedy placement as one
// more start.
#include "rl/gdp/guided.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "nn/autograd.h"
#include "place/anneal.h"
#include "place/registry.h"
#include "rl/gdp/load.h"
#include "rl/gdp/method.h"
#include "rl/gdp/ppo.h"
#include "rl/gdp/pretrained.h"

namespace gdp::rl {

place::AnnealGuide guide_of(const nn::Tensor& logits, bool anchored, double mix) {
  const nn::Tensor host = logits.cpu().contiguous();
  const int32_t U = static_cast<int32_t>(host.dim(0)), A = static_cast<int32_t>(host.dim(1));
  place::AnnealGuide g;
  g.columns = A;
  g.anchored = anchored;
  g.mix = mix;
  g.probs.assign(static_cast<size_t>(U) * static_cast<size_t>(A), 0.0f);
  const float* z = host.data();
  for (int32_t u = 0; u < U; ++u) {
    const float* row = z + static_cast<size_t>(u) * static_cast<size_t>(A);
    float* p = g.probs.data() + static_cast<size_t>(u) * static_cast<size_t>(A);
    masked_softmax_row(row, A, p);
  }
  return g;
}

place::GuidePlan policy_plan(const Policy& policy, place::Run& run, const place::Units& units,
                             int64_t samples, double mix, const std::string& label) {
  const place::Problem& pb = run.problem();
  nn::NoGradGuard no_grad;
  const PolicyInput in = policy.prepare(pb.graph(), pb.cluster(), pb.cost());
  const nn::Var logits = policy.forward(in);
  place::GuidePlan plan;
  if (in.units.unit_of == units.unit_of) {
    plan.guide = guide_of(unit_rows(logits.value(), in), in.anchored, mix);
  } else {
    // A policy of coarser decisions (PolicyConfig::decision "stage": unions of colocation
    // units, numbered alike, so anneal's unit 0 is in the policy's unit 0): each of anneal's
    // units is guided by the row of the policy's unit that holds it.
    const nn::Tensor host = unit_rows(logits.value(), in);
    const int64_t A = host.dim(1);
    nn::Tensor rows({units.num_units(), A});
    for (int32_t u = 0; u < units.num_units(); ++u) {
      const int32_t pu = in.units.unit_of[static_cast<size_t>(units.first_op[u])];
      for (int64_t c = 0; c < A; ++c) rows[u * A + c] = host[pu * A + c];
    }
    plan.guide = guide_of(rows, in.anchored, mix);
  }
  plan.starts.push_back(placement_of(in, greedy_actions(logits.value()), 0));
  plan.start_names.push_back("policy greedy");
  // The samples leave room for the start methods and a few moves.
  const int64_t room = std::max<int64_t>(0, run.samples_left() - 8);
  const int32_t n = static_cast<int32_t>(std::min(samples, room));
  Rng rng(run.seed() ^ 0x6a09e667f3bcc909ull);
  const std::vector<int32_t> acts = sample_actions(logits.value(), n, rng);
  for (int32_t k = 0; k < n; ++k) {
    plan.starts.push_back(placement_of(in, acts, k));
    plan.start_names.push_back("policy sample " + std::to_string(k + 1));
  }
  char mix_s[32];
  std::snprintf(mix_s, sizeof mix_s, "%.3g", mix);
  plan.note = "; policy " + label + ", mix " + mix_s;
  return plan;
}

place::MethodInfo gdp_anneal_method() {
  std::vector<place::OptionSpec> opts = place::anneal_options();
  opts.push_back(place::string_option(
      "checkpoint", "pretrained", {},
      "the policy: a `gdp train` output DIR (or DIR/ckpt-N.bin), or 'pretrained' (the shipped "
      "checkpoint, models/gdp-pretrained)"));
  opts.push_back(place::integer_option(
      "policy_samples", 16, 0, int64_t{1} << 20,
      "samples from the policy offered as starts beside its greedy placement (counted)"));
  opts.push_back(place::number_option(
      "gate", 0.1, 0, 1e9,
      "the policy steers the moves only if its best start is within this relative margin of "
      "the best start (else uniform moves: a policy that places the graph worse than the "
      "heuristics do); 1e9 = always"));
  opts.push_back(place::number_option(
      "mix", 0.5, 0, 1,
      "weight of the uniform draw in the moves' device distribution ((1 - mix) policy + mix "
      "uniform); 1 = unguided moves"));
  return place::MethodInfo{
      "gdp-anneal",
      "annealing guided by a GDP policy: starts from the best of its greedy placement, its "
      "samples and the anneal start methods; moves draw devices from the policy",
      std::move(opts), true, [](const place::Options& o) {
        place::AnnealConfig c = place::anneal_config(o, "gdp-anneal");
        const std::string checkpoint = resolve_checkpoint(o.string("checkpoint"), "gdp-anneal");
        const int64_t policy_samples = o.integer("policy_samples");
        const double mix = o.number("mix");
        const double gate = o.number("gate");
        // Loaded now, so that a missing or corrupt checkpoint fails before anything runs.
        std::shared_ptr<const Policy> policy = load_policy(checkpoint);
        place::GuideFn guide = [policy, checkpoint, policy_samples, mix, gate](
                                   place::Run& run, const place::Units& units) {
          place::GuidePlan plan = policy_plan(*policy, run, units, policy_samples, mix, checkpoint);
          plan.gate = gate >= 1e9 ? std::numeric_limits<double>::infinity() : gate;
          return plan;
        };
        return place::make_anneal_placer(std::move(c), std::move(guide), "gdp-anneal");
      }};
}

}  // namespace gdp::rl
