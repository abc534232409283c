// The pre-trained GDP policy that ships in the repository (models/gdp-pretrained: a `gdp
// train --suite datasets/suites/pretrain.json` run directory reduced to its config.json,
// state.json, final checkpoint and summary; models/gdp-pretrained/README.md says how it was
// made and how to retrain it). `gdp` and `gdp-anneal` use it when no checkpoint is given.
#pragma once

#include <string>

namespace gdp::rl {

// The shipped checkpoint's directory: $GDP_PRETRAINED when set, else the source tree's
// models/gdp-pretrained (the path is compiled in).
std::string pretrained_dir();

// A method's `checkpoint` option as a path: "pretrained" is pretrained_dir() (an InputError
// naming it, and how to retrain it, when it is missing), "none" and "" are "" (no checkpoint),
// anything else is returned unchanged.
std::string resolve_checkpoint(const std::string& value, const std::string& method);

// One line for `gdp place --list`: which checkpoint "pretrained" is (its directory, the
// commit and command that made it), or that it is missing.
std::string pretrained_summary();

}  // namespace gdp::rl
