// The best placements found so far on one graph (elite imitation: Post's cross-entropy method,
// priority-queue training, self-imitation). The trainer adds a cross-entropy term toward them
// beside the PPO loss, and its local proposals start from them (rl/gdp/explore.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json_strict.h"

namespace gdp::rl {

struct Elite {
  double step_s = 0;
  std::vector<int32_t> actions;  // (U) the device of each unit, in the policy's label space
};

class EliteSet {
 public:
  explicit EliteSet(int32_t capacity = 0) : capacity_(capacity) {}

  // Keeps the `capacity` fastest distinct placements, ascending by step time (ties: the earlier
  // first). Invalid (non-finite) step times are ignored. Returns whether `actions` entered.
  bool offer(double step_s, const std::vector<int32_t>& actions);

  int32_t capacity() const { return capacity_; }
  size_t size() const { return elites_.size(); }
  bool empty() const { return elites_.empty(); }
  const Elite& operator[](size_t i) const { return elites_[i]; }
  // Every elite's actions, elite-major: (size * U).
  std::vector<int32_t> flat_actions() const;

  // Checkpoints: [{"step_s": s, "actions": [...]}, ...].
  nlohmann::ordered_json to_json() const;
  // Restores a to_json() of `units` units (checked; InputError through sj naming path p).
  void from_json(const StrictJson& sj, const nlohmann::json& x, const std::string& p, int32_t units,
                 int32_t devices);

 private:
  int32_t capacity_;
  std::vector<Elite> elites_;
};

}  // namespace gdp::rl
