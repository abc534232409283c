// "hdp": the hierarchical device placer of Mirhoseini et al. (2018) as a place/ method. It
// trains a fresh grouper + seq2seq placer by REINFORCE on the problem within the run's budget
// (rl/hdp/hdp.h) and returns the best placement it simulated.
#include "rl/hdp/method.h"

#include <cstdio>
#include <memory>

#include "core/error.h"
#include "rl/hdp/hdp.h"

namespace gdp::rl {

namespace {

constexpr int64_t kDefaultSamples = 2000;  // with no budget given (as "gdp")

class HdpPlacer : public place::Placer {
 public:
  explicit HdpPlacer(const place::Options& o) : config_(hdp_config(o)) {}

  Placement place(place::Run& run) override {
    if (run.problem().num_devices() == 1) {  // one placement exists: simulate it once
      Placement p{std::vector<int32_t>(run.problem().graph().num_ops(), 0)};
      if (run.samples_left() > 0) run.evaluate(p);
      run.set_note("HDP: one device, nothing to learn");
      return p;
    }
    const place::Budget& b = run.budget();
    const int64_t max_samples =
        b.samples > 0 ? b.samples : (b.limited() ? INT64_MAX : kDefaultSamples);
    const HdpTrainResult r = train_hdp(run, config_, max_samples);
    char note[224];
    std::snprintf(note, sizeof note,
                  "HDP: %lld REINFORCE iterations x %d, final placer entropy %.3f, best %.4g s%s",
                  static_cast<long long>(r.iterations), config_.num_children, r.entropy,
                  run.best_step_s(), run.has_best() ? "" : " (none valid: returned the last)");
    run.set_note(note);
    if (!run.has_best() && r.last.device.empty())
      throw InputError("hdp: the budget allowed no sample");
    return run.has_best() ? run.best() : r.last;
  }

 private:
  HdpConfig config_;
};

}  // namespace

place::MethodInfo hdp_method() {
  const HdpConfig d;
  return place::MethodInfo{
      "hdp",
      "HDP (Mirhoseini et al. 2018): feed-forward grouper + seq2seq LSTM placer with attention, "
      "REINFORCE on sqrt(step time) within the budget",
      {place::string_option("preset", "tuned", {"tuned", "reference"},
                            "tuned: the defaults here (H 128, 4 placements, lr 0.01); reference: "
                            "hierarchical_controller.py's H 512, 1 placement, lr 0.1 for the "
                            "keys not given"),
       place::integer_option("hidden_size", d.hidden_size, 2, 4096,
                             "LSTM width H (even; H/2 per encoder direction)"),
       place::integer_option("grouping_hidden_size", d.grouping_hidden_size, 1, 4096,
                             "grouper feed-forward width"),
       place::integer_option("num_groups", d.num_groups, 0, 4096,
                             "groups G; 0 = min(256, 20 x devices)"),
       place::integer_option("adj_embed_dim", d.adj_embed_dim, 0, 1024,
                             "adjacency entries in the op embedding"),
       place::integer_option("num_children", d.num_children, 1, 1024,
                             "placements sampled per policy update"),
       place::number_option("lr", d.lr, 0, 10, "Adam learning rate"),
       place::number_option("lr_dec", d.lr_dec, 0, 1, "staircase decay factor"),
       place::integer_option("start_decay_step", d.start_decay_step, 0, int64_t{1} << 40,
                             "iteration the decay starts at"),
       place::integer_option("decay_steps", d.decay_steps, 1, int64_t{1} << 40,
                             "iterations per decay"),
       place::number_option("bl_dec", d.bl_dec, 0, 1, "moving-average baseline decay"),
       place::number_option("grad_bound", d.grad_bound, 1e-9, 1e9, "global gradient-norm clip"),
       place::number_option("failing_signal", d.failing_signal, 1e-9, 1e9,
                            "seconds charged to an invalid (out-of-memory) placement"),
       place::string_option("reward_function", d.reward_function, {"sqrt", "id", "log"},
                            "cost of a step time: sqrt, id or log1p"),
       place::number_option("logits_std_noise", d.logits_std_noise, 0, 100,
                            "logits noise (relative to the logits' RMS)"),
       place::integer_option("stop_noise_step", d.stop_noise_step, 0, int64_t{1} << 40,
                             "last iteration with logits noise"),
       place::number_option("temperature", d.temperature, 1e-6, 1e6, "device logits divisor"),
       place::number_option("tanh_constant", d.tanh_constant, 0, 1e6,
                            "> 0: device logits = tanh(logits) * this"),
       place::number_option("forget_bias_init", d.forget_bias_init, -100, 100,
                            "initial LSTM forget-gate bias"),
       place::integer_option("stop_updating_after_steps", d.stop_updating_after_steps, 0,
                             int64_t{1} << 40,
                             "afterwards only valid placements update the policy and baseline")},
      true,
      [](const place::Options& o) { return std::make_unique<HdpPlacer>(o); }};
}

}  // namespace gdp::rl
