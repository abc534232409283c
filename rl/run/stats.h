// The one table of IterationStats' fields (rl/run/learner.h): log.csv's columns after
// "iteration" (and "graph" in a run over several graphs), and the numbers data-parallel ranks
// exchange, are read through it, so that a new statistic is one line here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rl/run/learner.h"

namespace gdp::rl {

struct StatField {
  const char* name;
  double IterationStats::*real = nullptr;    // a real-valued field, or
  int64_t IterationStats::*count = nullptr;  // an integer one
};
const std::vector<StatField>& stat_fields();

// log.csv: the header line and one row ("inf", "nan" for non-finite values; %.9g).
std::string log_header(bool batch);
std::string log_row(const IterationStats& r, bool batch);

// The numeric fields (iteration first, then stat_fields()) as doubles and back: the ranks'
// exchange (rl/gdp/trainer.cpp). stats_width() doubles.
size_t stats_width();
void pack_stats(const IterationStats& r, double* x);
void unpack_stats(const double* x, IterationStats& r);

}  // namespace gdp::rl
