// `stage-cut`: the non-learned control of the stage coordinates (place/stages.h). Cuts the
// coordinate into equal pieces, one stage per device, tries every stage count 1..D (or the
// one asked for), repairs what runs out of memory (place/repair.h) and keeps the fastest.
// It is what a policy that only learned "device = coordinate x stages" would reach; it is a
// control for the learned policy, not a method of its own.
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "place/methods.h"
#include "place/repair.h"
#include "place/stages.h"

namespace gdp::place {

namespace {

class StageCutPlacer : public Placer {
 public:
  StageCutPlacer(std::string coordinate, int32_t stages, bool repair)
      : coordinate_(std::move(coordinate)), stages_(stages), repair_(repair) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const Graph& g = pb.graph();
    const int32_t D = pb.num_devices();
    if (stages_ > D)
      throw InputError("method 'stage-cut': options.stages: " + std::to_string(stages_) +
                       " stages on cluster '" + pb.cluster().name + "' of " + std::to_string(D) +
                       " devices; expected at most " + std::to_string(D) + " (0: every count)");
    std::vector<double> time(g.num_ops());
    for (int32_t v = 0; v < g.num_ops(); ++v) time[v] = pb.simulator().op_time_s(v, 0);
    const StageCoordinates sc = stage_coordinates(g, time);
    const std::vector<double>& key = coordinate_ == "memory"     ? sc.by_memory
                                     : coordinate_ == "rank"     ? sc.by_rank
                                     : coordinate_ == "fold"     ? sc.by_fold
                                     : coordinate_ == "width"    ? sc.by_width
                                     : coordinate_ == "op_width" ? sc.by_op_width
                                                                 : sc.by_time;
    const int32_t lo = stages_ > 0 ? stages_ : 1, hi = stages_ > 0 ? stages_ : D;
    int32_t raw_valid = 0, repaired = 0, tried = 0;
    Placement first;
    for (int32_t s = lo; s <= hi && !run.exhausted(); ++s) {
      Placement p{stage_cut(g, key, s)};
      if (first.device.empty()) first = p;
      ++tried;
      if (std::isfinite(run.evaluate(p))) {
        ++raw_valid;
      } else if (repair_) {  // only a cut that does not fit is repaired
        const RepairResult r = repair_memory(pb, p, key);
        run.count_samples(r.simulations - (r.valid ? 1 : 0));  // evaluate reruns its last
        if (r.valid) {
          run.evaluate(r.placement);
          ++repaired;
        }
      }
    }
    char note[160];
    std::snprintf(note, sizeof note,
                  "%d stage counts on the %s coordinate (%d ranks%s): %d valid as cut, %d repaired",
                  tried, coordinate_.c_str(), sc.num_ranks,
                  sc.from_parameters ? "" : ", forward levels", raw_valid, repaired);
    run.set_note(note);
    return run.has_best() ? run.best() : first;
  }

 private:
  std::string coordinate_;
  int32_t stages_;
  bool repair_;
};

}  // namespace

MethodInfo stage_cut_method() {
  return MethodInfo{
      "stage-cut",
      "control: contiguous stages of the structural stage coordinate (place/stages.h), the best "
      "stage count, memory repaired",
      {string_option("coordinate", "time", {"time", "memory", "rank", "fold", "width", "op_width"},
                     "the coordinate cut: cumulative op time, cumulative memory, rank, the "
                     "fold (cumulative time among concurrent ranks), the width (parallel "
                     "branches side by side, per rank) or op_width (the same per op, each "
                     "gradient with the forward op it reads)"),
       integer_option("stages", 0, 0, 65535, "stages (one per device); 0 tries 1..devices"),
       boolean_option("repair", true, "move units off over-full devices (place/repair.h)")},
      true,
      [](const Options& o) {
        return std::make_unique<StageCutPlacer>(
            o.string("coordinate"), static_cast<int32_t>(o.integer("stages")), o.boolean("repair"));
      }};
}

}  // namespace gdp::place
