// Minimal strict command-line parsing shared by the gdp subcommands: known flags only,
// values where required; anything else is a UsageError (exit code 2).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"

namespace gdp::cli {

class Args {
 public:
  // value_flags take a value ("--graph G" or "--graph=G"); bool_flags take none.
  Args(int argc, char** argv, const std::set<std::string>& value_flags,
       const std::set<std::string>& bool_flags);

  bool help() const { return help_; }
  bool has(const std::string& flag) const { return values_.count(flag) || bools_.count(flag); }
  std::string get(const std::string& flag, const std::string& def = "") const;
  std::string require(const std::string& flag) const;  // UsageError when absent
  // Typed values in [min, max]; `def` when the flag is absent. UsageError names the flag.
  double number(const std::string& flag, double def, double min, double max) const;
  int64_t integer(const std::string& flag, int64_t def, int64_t min, int64_t max) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> bools_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

}  // namespace gdp::cli
