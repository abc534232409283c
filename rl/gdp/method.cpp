// The GDP policy as a place/ method ("gdp"). From a checkpoint (by default the shipped
// pre-trained one, rl/gdp/pretrained.h) it places zero-shot (the best of the greedy placement
// and N samples) or fine-tunes from it within the budget; with checkpoint "none" it trains a
// fresh policy on the problem within the run's budget (GDP-one) and returns the best
// placement it simulated.
#include "rl/gdp/method.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "core/error.h"
#include "nn/autograd.h"
#include "place/registry.h"
#include "place/repair.h"
#include "rl/gdp/load.h"
#include "rl/gdp/pretrained.h"
#include "rl/gdp/trainer.h"

namespace gdp::rl {

namespace {

constexpr int64_t kDefaultSamples = 2000;  // GDP-one / fine-tuning with no budget given

class GdpPlacer : public place::Placer {
 public:
  explicit GdpPlacer(const place::Options& o)
      : checkpoint_(resolve_checkpoint(o.string("checkpoint"), "gdp")),
        samples_(o.integer("samples")),
        temperature_(o.number("temperature")),
        every_count_(o.boolean("every_count")),
        fine_tune_(o.boolean("fine_tune")),
        config_(TrainConfig::from_json(o.object("config"), "method 'gdp': options.config")) {
    if (fine_tune_ && checkpoint_.empty())
      throw InputError(
          "method 'gdp': options.fine_tune: needs a checkpoint (options.checkpoint is 'none')");
  }

  Placement place(place::Run& run) override {
    const place::Problem& pb = run.problem();
    std::unique_ptr<Policy> init;
    if (!checkpoint_.empty()) init = load_policy(checkpoint_);
    if (init && !fine_tune_) return zero_shot(run, *init);
    place::Budget budget = run.budget();
    if (!budget.limited()) budget.samples = kDefaultSamples;
    Trainer t(config_, {TrainGraph{pb.graph().name, &pb.graph(), &pb.cluster(), &run}}, pb.cost(),
              run.seed(), init.get());
    while (!t.done(budget)) {
      const auto rows = t.step();
      char msg[96];
      std::snprintf(msg, sizeof msg, "iteration %lld, entropy %.3f",
                    static_cast<long long>(rows[0].iteration), rows[0].entropy);
      run.progress(msg);
    }
    char note[192];
    std::snprintf(note, sizeof note,
                  "%s: %lld PPO iterations, best at sample %lld; reference %s %.4g s",
                  init ? "fine-tuned" : "GDP-one", static_cast<long long>(t.iteration()),
                  static_cast<long long>(t.samples_to_best(0)), t.reference_method(0).c_str(),
                  t.reference_step_s(0));
    run.set_note(note);
    if (run.has_best()) return run.best();
    return zero_shot_greedy(pb, t.policy());  // nothing valid was sampled
  }

 private:
  static Placement zero_shot_greedy(const place::Problem& pb, const Policy& policy) {
    nn::NoGradGuard no_grad;
    const PolicyInput in = policy.prepare(pb.graph(), pb.cluster(), pb.cost());
    const nn::Var logits = policy.forward(in);
    return placement_of(in, greedy_actions(logits.value()), 0);
  }

  Placement zero_shot(place::Run& run, const Policy& policy) {
    const place::Problem& pb = run.problem();
    nn::NoGradGuard no_grad;
    const PolicyInput in = policy.prepare(pb.graph(), pb.cluster(), pb.cost());
    const nn::Var logits = policy.forward(in);
    const std::vector<int32_t> greedy = greedy_actions(logits.value());
    const int32_t greedy_used = in.devices_used ? greedy.back() + 1 : in.num_devices;
    std::vector<Placement> ps{placement_of(in, greedy, 0)};
    int32_t n = static_cast<int32_t>(
        std::min<int64_t>(samples_, std::max<int64_t>(0, run.samples_left() - 1)));
    // The greedy positions read at every other device count the mask allows, in place of as
    // many samples: the one decision with few values is enumerated, the units' are not. The
    // counts nearest the greedy one first; a count that decodes to a placement already in
    // the list is skipped.
    int32_t counts = 0;
    if (in.devices_used && every_count_) {
      const nn::Tensor mask = in.mask.cpu();
      const int64_t A = mask.dim(1), row = static_cast<int64_t>(in.num_units()) * A;
      std::vector<int32_t> order;
      for (int32_t L = 1; L <= in.num_devices; ++L)
        if (L != greedy_used && mask[row + L - 1] > kMaskedLogit / 2) order.push_back(L);
      std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
        return std::abs(x - greedy_used) < std::abs(y - greedy_used);
      });
      std::set<std::vector<int32_t>> seen{unit_devices(in, greedy, 0)};
      std::vector<int32_t> g = greedy;
      for (int32_t L : order) {
        if (counts >= n) break;
        g.back() = L - 1;
        if (!seen.insert(unit_devices(in, g, 0)).second) continue;
        ps.push_back(placement_of(in, g, 0));
        ++counts;
      }
      n -= counts;
    }
    Rng rng(run.seed());
    const std::vector<int32_t> acts = sample_actions(logits.value(), n, rng, temperature_);
    for (int32_t k = 0; k < n; ++k) ps.push_back(placement_of(in, acts, k));
    const std::vector<double> t = run.evaluate(ps);
    int32_t raw_valid = 0;
    for (double x : t) raw_valid += std::isfinite(x);
    // Nothing the network gave fits: repair the greedy placement, then the samples in order,
    // until one fits (place/repair.h), every simulation counted.
    std::string repaired;
    if (!run.has_best()) {
      std::vector<double> key(static_cast<size_t>(pb.graph().num_ops()));
      for (size_t v = 0; v < key.size(); ++v)
        key[v] = in.features.x[static_cast<int64_t>(v) * kNodeFeatures + feat::stage_time];
      for (size_t k = 0; k < ps.size() && !run.has_best(); ++k) {
        const place::RepairResult r = place::repair_memory(pb, ps[k], key);
        run.count_samples(r.simulations - 1);  // its last simulation is the evaluation below
        if (r.valid) {
          run.evaluate(r.placement);
          repaired = "; " + std::string(k == 0 ? "the greedy placement" : "a candidate") +
                     " repaired (" + std::to_string(r.moved_ops) + " ops moved)";
        } else {
          run.count_samples(1);
        }
        if (k >= 8) break;  // repair is a fallback, not a search
      }
    }
    run.set_note("zero-shot: greedy" +
                 (counts ? " at " + std::to_string(counts + 1) + " device counts" : std::string()) +
                 (n ? " and " + std::to_string(n) + " samples" : std::string()) + " from " +
                 checkpoint_ + ", " + std::to_string(in.num_units()) + " decisions" +
                 (in.devices_used ? ", greedy on " + std::to_string(greedy_used) + " of " +
                                        std::to_string(in.num_devices) + " devices"
                                  : std::string()) +
                 "; " + std::to_string(raw_valid) + "/" + std::to_string(ps.size()) +
                 " valid as decoded" + repaired);
    return run.has_best() ? run.best() : ps[0];
  }

  std::string checkpoint_;
  int64_t samples_;
  double temperature_;
  bool every_count_;
  bool fine_tune_;
  TrainConfig config_;
};

}  // namespace

void gdp_places(place::Registry& r) {
  r.add(place::MethodInfo{
      "gdp",
      "the GDP policy (GraphSAGE + segment-recurrent attention + superposition, PPO): trains on "
      "the graph within the budget, or places zero-shot / fine-tunes from a checkpoint",
      {place::string_option("checkpoint", "pretrained", {},
                            "'pretrained' (the shipped policy, models/gdp-pretrained), a `gdp "
                            "train` output DIR (or DIR/ckpt-N.bin), or 'none': train a fresh "
                            "policy on the graph (GDP-one)"),
       place::integer_option("samples", 63, 0, int64_t{1} << 30,
                             "zero-shot: the best of the greedy placement and N samples"),
       place::number_option("temperature", 1, 0.05, 100,
                            "zero-shot: the samples are drawn from softmax(logits / T); the "
                            "greedy placement is unchanged"),
       place::boolean_option("every_count", true,
                             "zero-shot, with a devices-used policy: the greedy positions at "
                             "every device count the memory bound allows are candidates too, "
                             "in place of as many of the N samples"),
       place::boolean_option("fine_tune", false, "train from the checkpoint within the budget"),
       place::object_option("config", "training configuration (rl/gdp/config.h TrainConfig)")},
      true,
      [](const place::Options& o) { return std::make_unique<GdpPlacer>(o); }});
  r.add(gdp_anneal_method());
}

}  // namespace gdp::rl
