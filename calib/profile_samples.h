// Op samples from measured per-layer profiles: a PipeDream profile (graph.txt, through the
// core importer; flops estimated from the layer descriptions, which the importer does not keep)
// or a gdp graph JSON whose ops carry `measured` times.
#pragma once

#include <string>
#include <vector>

#include "calib/fit.h"

namespace gdp::calib {

struct ProfileSamples {
  std::string source;  // the file
  std::string graph;   // the graph's name
  bool pipedream = false;
  std::vector<OpSample> samples;  // one per op with a measured time (zero times included)
  int64_t zero_time = 0;          // of those, measured 0 s (skipped by fits and errors)
  int64_t unmeasured = 0;         // ops without a measurement for the kind (not sampled)
  int64_t inputs = 0;  // PipeDream Input layers, not sampled: their time is the data loader's
};

// Reads `path` (format detected like every graph reader). A gdp graph's op is sampled with
// its measured time for `device_kind`, else its "*" time (the cost model's precedence), its
// flops and its bytes (bytes_accessed, else its output bytes). Errors: InputError naming the
// file (and the line or JSON field) from the readers.
ProfileSamples read_profile_samples(const std::string& path, const std::string& device_kind);

// Forward flops of a PipeDream layer from its PyTorch module description, e.g.
// "Conv2d(128, 256, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))", given the elements of
// its first output and of its inputs (docs/calibration.md lists the rules). 0 for layers
// without arithmetic (views, concatenation, embedding lookups, inputs).
double pipedream_forward_flops(const std::string& description, double out_elements,
                               double in_elements);
// Whether a layer holds weights that its backward pass differentiates (conv, linear, LSTM).
bool pipedream_has_weights(const std::string& description);

}  // namespace gdp::calib
