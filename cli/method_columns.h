// `--methods` and `--options` as `gdp compare` and `gdp suite run` take them: comma-separated
// columns, LABEL=METHOD to run one method under several labels, and options: a JSON object
// (or a file holding one) of options per label, or LABEL=JSON for one column. Unknown methods,
// empty or repeated labels and options for no column are UsageErrors, before anything runs.
#pragma once

#include <string>
#include <vector>

#include "eval/evaluate.h"

namespace gdp::cli {

// options_arg: the --options value, or "" when absent.
std::vector<eval::MethodSpec> parse_method_columns(const std::string& methods_arg,
                                                   const std::string& options_arg);

}  // namespace gdp::cli
