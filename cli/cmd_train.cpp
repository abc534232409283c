// `gdp train`: trains a learned placer (rl/run/session.h; GDP with PPO by default): on one graph
// (GDP-one), on every graph of a suite (GDP-batch, pre-training), from another run's policy
// (--init: fine-tuning), or continues a killed run (--resume).
#include <cmath>
#include <cstdio>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"
#include "core/json_strict.h"
#include "core/mpi.h"
#include "eval/suite_run.h"
#include "place/options.h"
#include "rl/methods.h"
#include "rl/run/session.h"

namespace gdp::cli {

namespace {

// One line per iteration and graph, with an estimate of the time left under the budget.
rl::IterationFn printer(const place::Budget& budget) {
  return [budget](const std::vector<rl::IterationStats>& rows, const rl::Learner& t) {
    const double wall = t.wall_s();
    const double rate = wall > 0 ? static_cast<double>(t.total_samples()) / wall : 0;
    std::string eta;
    double left = -1;
    if (budget.samples > 0 && rate > 0)
      left = static_cast<double>(budget.samples - t.total_samples()) / rate;
    if (budget.seconds > 0)
      left = left < 0 ? budget.seconds - wall : std::min(left, budget.seconds - wall);
    if (left >= 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, ", about %.0f s left", left);
      eta = buf;
    }
    for (const auto& r : rows) {
      char best[24] = "-", mean[24] = "-";
      if (std::isfinite(r.best_step_s))
        std::snprintf(best, sizeof best, "%.4f", r.best_step_s * 1e3);
      if (std::isfinite(r.mean_step_s))
        std::snprintf(mean, sizeof mean, "%.4f", r.mean_step_s * 1e3);
      std::printf(
          "iter %5lld %-24s best %10s ms  mean %10s ms  invalid %4.2f  entropy %.3f  "
          "%.0f samples/s%s\n",
          static_cast<long long>(r.iteration), r.graph.c_str(), best, mean, r.invalid_frac,
          r.entropy, rate, eta.c_str());
    }
    std::fflush(stdout);
  };
}

}  // namespace

int cmd_train(int argc, char** argv) {
  Args a(argc, argv,
         {"--graph", "--cluster", "--suite", "--out", "--config", "--samples", "--seconds",
          "--seed", "--device", "--init", "--resume", "--profile", "--iterations", "--method",
          "--options", "--checkpoint-every", "--expert"},
         {"--quiet"});
  if (a.help()) {
    std::printf(
        "usage: gdp train --graph G --cluster C --out DIR [options]     (GDP-one)\n"
        "       gdp train --suite S.json --out DIR [options]            (GDP-batch, pre-training)\n"
        "       gdp train --method hdp|placeto ... [--options JSON]     (the learned baselines)\n"
        "       gdp train --resume DIR [--iterations N]\n\n"
        "Trains a placement policy against the simulator: GDP with PPO (default), HDP or\n"
        "Placeto with REINFORCE (docs/baselines.md), and writes DIR/config.json, log.csv,\n"
        "best.json (best-<graph>.json per graph of a suite), the checkpoint (state.json +\n"
        "ckpt-<iteration>.bin, atomic) and summary.json (docs/policy.md).\n"
        "  --method M      gdp (default), hdp (one graph) or placeto (one graph or a suite)\n"
        "  --options O     hdp, placeto: the method's options (gdp place --list), JSON or a file\n"
        "  --config F      gdp: training configuration JSON (rl/gdp/config.h; docs/policy.md);\n"
        "                  its regime defaults to transfer with --suite, search otherwise\n"
        "  --checkpoint-every N  iterations between checkpoints (default: gdp's config, hdp 100,\n"
        "                  placeto 1; 0 = only at the end)\n"
        "  --samples N     budget: simulated placements over all graphs (default 5000 per graph\n"
        "                  when neither --samples nor --seconds is given)\n"
        "  --seconds S     budget: wall-clock seconds\n"
        "  --seed S        seed (default 1): the same seed gives the same run\n"
        "  --expert N      gdp: expert iteration, a guided anneal of N samples per graph and\n"
        "                  iteration whose best the policy imitates (config "
        "expert.anneal_samples)\n"
        "  --init DIR      start from the policy of another run of the same method (fine-tuning;\n"
        "                  gdp, placeto)\n"
        "  --profile F     device profile JSON for the cost model (default: built-in)\n"
        "  --device D      cpu (default) or cuda\n"
        "  --iterations N  stop after N iterations (the checkpoint lets --resume continue)\n"
        "  --resume DIR    continue a killed or stopped run to its budget\n"
        "  --quiet         no per-iteration lines\n"
        "Under mpirun -np N (a build with MPI) GDP trains data-parallel: the suite's graphs\n"
        "split over the ranks by op count, their gradients summed by MPI_Allreduce, rank 0\n"
        "writes DIR.\n");
    return 0;
  }
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  const int64_t iterations = a.integer("--iterations", 0, 1, INT64_MAX);
  // Under mpirun: data-parallel GDP (core/mpi.h); rank 0 writes the run and prints.
  const MpiWorld mpi = mpi_begin();
  struct MpiEnd {
    ~MpiEnd() { mpi_end(); }
  } mpi_end_guard;
  const bool quiet = a.has("--quiet") || mpi.rank != 0;
  if (a.has("--resume")) {
    for (const char* f : {"--graph", "--cluster", "--suite", "--out", "--config", "--samples",
                          "--seconds", "--seed", "--device", "--init", "--profile", "--method",
                          "--options", "--checkpoint-every", "--expert"})
      if (a.has(f))
        throw UsageError(std::string("--resume takes the run's own settings; drop ") + f);
    const std::string dir = a.get("--resume");
    rl::resume(rl::learners(), dir, quiet ? rl::IterationFn() : printer(place::Budget()),
               iterations);
    if (mpi.rank == 0) std::printf("%s: resumed and finished (summary.json)\n", dir.c_str());
    return 0;
  }
  rl::RunSpec s;
  if (a.has("--suite")) {
    if (a.has("--graph") || a.has("--cluster"))
      throw UsageError("give --suite, or --graph and --cluster, not both");
    s.suite_path = a.get("--suite");
  } else {
    s.graph_path = a.require("--graph");
    s.cluster = a.require("--cluster");
  }
  const std::string out = a.require("--out");
  s.method = a.get("--method", "gdp");
  const rl::LearnerRegistry& learners = rl::learners();
  if (!learners.has(s.method)) {
    std::string names;
    for (const std::string& n : learners.names()) names += (names.empty() ? "" : ", ") + n;
    throw UsageError("--method expects one of " + names + ", got '" + s.method + "'");
  }
  // The method's options: gdp's with --config F (a TrainConfig, rl/gdp/config.h; its regime
  // defaults to transfer with --suite, search otherwise), the others' with --options.
  const std::string flag = learners.find(s.method, "train").options_flag;
  for (const char* other : {"--config", "--options"})
    if (a.has(other) && other != flag) {
      std::string takers;
      for (const rl::LearnerMethod& m : learners.methods())
        if (m.options_flag == other) takers += (takers.empty() ? "" : ", ") + m.name;
      throw UsageError(std::string(other) + " is for " + takers + "; " + s.method +
                       " takes its settings with " + flag);
    }
  if (a.has("--options")) {
    s.options = place::parse_options_arg(a.get("--options"));
    s.options_source = "--options";
  }
  if (a.has("--config")) {
    const std::string path = a.get("--config");
    s.options = StrictJson(path).parse(read_text_file(path));
    s.options_source = path;
  }
  s.checkpoint_every = static_cast<int32_t>(a.integer("--checkpoint-every", -1, 0, 1 << 30));
  if (a.has("--expert")) {
    if (s.method != "gdp") throw UsageError("--expert is gdp's (expert iteration)");
    s.options["expert"]["anneal_samples"] = a.integer("--expert", 0, 1, 1 << 20);
  }
  s.budget.samples = a.integer("--samples", 0, 1, int64_t{1} << 40);
  s.budget.seconds = a.number("--seconds", 0, 1e-3, 1e9);
  s.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  s.device = a.get("--device", "cpu");
  if (s.device != "cpu" && s.device != "cuda")
    throw UsageError("--device expects cpu or cuda, got '" + s.device + "'");
  s.init_dir = a.get("--init");
  s.profile_path = a.get("--profile");
  s.max_iterations = iterations;
  rl::train(learners, s, out, quiet ? rl::IterationFn() : printer(s.budget));
  if (mpi.rank == 0)
    std::printf("%s: done (summary.json)%s\n", out.c_str(),
                mpi.size > 1 ? (" on " + std::to_string(mpi.size) + " MPI ranks").c_str() : "");
  return 0;
}

}  // namespace gdp::cli
