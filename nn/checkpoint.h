// Checkpoints: parameters (+ optional Adam state and step) in a versioned binary file, written
// atomically (temp file in the same directory, then rename). Format in docs/nn.md.
#pragma once

#include <cstdint>
#include <string>

#include "nn/optim.h"
#include "nn/parameters.h"

namespace gdp::nn {

inline constexpr char kCheckpointMagic[8] = {'G', 'D', 'P', 'N', 'N', 'C', 'K', 'P'};
inline constexpr uint32_t kCheckpointVersion = 1;

// Writes all parameters and, when adam is non-null, its moments and step count. user_step is a
// free counter (e.g. the training iteration) stored alongside. Throws on I/O errors.
void save_checkpoint(const std::string& path, const ParameterBuffer& params, const Adam* adam,
                     int64_t user_step = 0);
// Loads into an existing buffer with the same parameters (names and shapes must match, in any
// order; extra or missing names are errors). Restores adam's state when adam is non-null (error
// if the file has none). Returns user_step. Throws std::runtime_error naming the file and the
// problem (wrong magic, version, name, shape, truncated file).
int64_t load_checkpoint(const std::string& path, ParameterBuffer& params, Adam* adam);

}  // namespace gdp::nn
