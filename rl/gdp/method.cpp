// The GDP policy as a place/ method ("gdp"). From a checkpoint (by default the shipped
// pre-trained one, rl/gdp/pretrained.h) it places zero-shot (the best of the greedy placement
// and N samples) or fine-tunes from it within the budget; with checkpoint "none" it trains a
// fresh policy on the problem within the run's budget (GDP-one) and returns the best
// placement it simulated.
#include "rl/gdp/method.h"

#include <cstdio>

#include "core/error.h"
#include "nn/autograd.h"
#include "place/registry.h"
#include "rl/gdp/load.h"
#include "rl/gdp/pretrained.h"
#include "rl/gdp/trainer.h"
#include "rl/gdp/zero_shot.h"

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
        decode_(o.string("decode")),
        allocate_(o.string("allocate")),
        also_(resolve_checkpoint(o.string("also"), "gdp")),
        fine_tune_(o.boolean("fine_tune")),
        config_(TrainConfig::from_json(o.object("config"), "method 'gdp': options.config")) {
    // Fine-tuning's seeds are the zero-shot placement this method would give: its options win
    // over a config's section (a run's config.json, passed whole, carries one).
    config_.fine_tune_zero_shot = zero_shot_options();
    if (fine_tune_ && checkpoint_.empty())
      throw InputError(
          "method 'gdp': options.fine_tune: needs a checkpoint (options.checkpoint is 'none')");
    if (!also_.empty() && (checkpoint_.empty() || fine_tune_))
      throw InputError(
          "method 'gdp': options.also: reads a second policy zero-shot only (needs "
          "a checkpoint and no fine_tune)");
  }

  Placement place(place::Run& run) override {
    const place::Problem& pb = run.problem();
    std::unique_ptr<Policy> init;
    if (!checkpoint_.empty()) init = load_policy(checkpoint_);
    if (init && !fine_tune_) {
      std::unique_ptr<Policy> also;
      if (!also_.empty()) also = load_policy(also_);
      return zero_shot(run, *init, also.get());
    }
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

  ZeroShotOptions zero_shot_options() const {
    ZeroShotOptions o;
    o.samples = samples_;
    o.temperature = temperature_;
    o.every_count = every_count_;
    o.decode = decode_;
    o.allocate = allocate_;
    o.source = checkpoint_;
    o.also = also_;
    return o;
  }

  Placement zero_shot(place::Run& run, const Policy& policy, const Policy* also) const {
    ZeroShotResult r = rl::zero_shot(run, policy, zero_shot_options(), also);
    run.set_note(r.note);
    return run.has_best() ? run.best() : r.candidates.at(0);
  }

  std::string checkpoint_;
  int64_t samples_;
  double temperature_;
  bool every_count_;
  std::string decode_;
  std::string allocate_;
  std::string also_;
  bool fine_tune_;
  TrainConfig config_;
};

}  // namespace

void gdp_places(place::Registry& r) {
  const ZeroShotOptions zs;  // the zero-shot defaults, shared with fine-tuning's seeds
  r.add(place::MethodInfo{
      "gdp",
      "the GDP policy (GraphSAGE + segment-recurrent attention + superposition, PPO): trains on "
      "the graph within the budget, or places zero-shot / fine-tunes from a checkpoint",
      {place::string_option("checkpoint", "pretrained", {},
                            "'pretrained' (the shipped policy, models/gdp-pretrained), a `gdp "
                            "train` output DIR (or DIR/ckpt-N.bin), or 'none': train a fresh "
                            "policy on the graph (GDP-one)"),
       place::integer_option("samples", zs.samples, 0, int64_t{1} << 30,
                             "zero-shot: the best of the greedy placement and N samples (1 + N "
                             "candidates; with decode both, each decoding's greedy placement "
                             "and its counts count among them)"),
       place::number_option("temperature", zs.temperature, 0.05, 100,
                            "zero-shot: the samples are drawn from softmax(logits / T); the "
                            "greedy placement is unchanged"),
       place::boolean_option("every_count", zs.every_count,
                             "zero-shot: the greedy placement read at every device count the "
                             "memory bound allows is a candidate too (with a devices-used policy "
                             "its count row set; without one its labels coarsened, floor(a L / "
                             "D)), in place of as many of the N samples"),
       place::string_option("decode", zs.decode, kZeroShotDecodes,
                            "zero-shot: what one decision places when the network is read: the "
                            "policy's own decisions, op, stage, cut (its cut head over the "
                            "stages), mix (its mix head: a blend of stage coordinates), both "
                            "(the policy's own and the other of op and stage) or all (op, stage "
                            "and the cut and mix heads the policy has): each "
                            "reading's greedy placement and counts, and a share of the samples "
                            "(allocate)"),
       place::string_option("allocate", zs.allocate, kZeroShotAllocations,
                            "zero-shot with several decodings: how the samples are split "
                            "between them: best (rounds of about N / 8, one to each decoding, "
                            "then each round to the decoding whose fastest candidate so far is "
                            "the fastest; measured better on pipedream.json at 3 seeds, "
                            "docs/results.md), or even"),
       place::string_option("also", "", {},
                            "zero-shot: a second checkpoint (a `gdp train` output DIR, or "
                            "'pretrained'), every reading of which adds its greedy placement "
                            "and its device counts to the candidates, in place of as many "
                            "samples ('': none)"),
       place::boolean_option("fine_tune", false,
                             "train from the checkpoint within the budget, its elites seeded "
                             "from the zero-shot candidates these options give"),
       place::object_option("config", "training configuration (rl/gdp/config.h TrainConfig)")},
      true,
      [](const place::Options& o) { return std::make_unique<GdpPlacer>(o); }});
  r.add(gdp_anneal_method());
}

}  // namespace gdp::rl
