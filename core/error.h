// Error types: InputError for bad input (files, JSON, impossible values; exit code 1),
// UsageError for bad command-line usage (exit code 2).
#pragma once

#include <stdexcept>
#include <string>

namespace gdp {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
using GraphError = InputError;

}  // namespace gdp
