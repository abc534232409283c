// Strict flag parsing for the gdp subcommands.
#include "cli/args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gdp::cli {

namespace {
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

Args::Args(int argc, char** argv, const std::set<std::string>& value_flags,
           const std::set<std::string>& bool_flags) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      std::string key = a, val;
      bool has_eq = false;
      if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
        key = a.substr(0, eq);
        val = a.substr(eq + 1);
        has_eq = true;
      }
      if (value_flags.count(key)) {
        if (!has_eq) {
          if (i + 1 >= argc) throw UsageError("flag " + key + " expects a value");
          val = argv[++i];
        }
        if (values_.count(key)) throw UsageError("flag " + key + " given twice");
        values_[key] = val;
      } else if (bool_flags.count(key) && !has_eq) {
        bools_.insert(key);
      } else {
        throw UsageError("unknown flag " + key + " (see --help)");
      }
    } else {
      positional_.push_back(a);
    }
  }
}

std::string Args::get(const std::string& flag, const std::string& def) const {
  auto it = values_.find(flag);
  return it == values_.end() ? def : it->second;
}

std::string Args::require(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) throw UsageError("missing required flag " + flag + " (see --help)");
  return it->second;
}

double Args::number(const std::string& flag, double def, double min, double max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return def;
  const std::string& t = it->second;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end == t.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v) ||
      v < min || v > max)
    throw UsageError("flag " + flag + " expects a number in [" + fmt(min) + ", " + fmt(max) +
                     "], got '" + t + "'");
  return v;
}

int64_t Args::integer(const std::string& flag, int64_t def, int64_t min, int64_t max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return def;
  const std::string& t = it->second;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || end == t.c_str() || *end != '\0' || errno == ERANGE || v < min || v > max)
    throw UsageError("flag " + flag + " expects an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + t + "'");
  return v;
}

}  // namespace gdp::cli
