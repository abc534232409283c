// Method options, in the manner of tiny-cuda-nn's components: each method declares its
// options with types, defaults and ranges; the user's options are a strict JSON object
// (unknown key, wrong type or out-of-range value: an InputError naming the method and the
// key) and the resolved options (every key, defaults filled in) are written back out.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gdp::place {

enum class OptionType : uint8_t {
  integer,  // a JSON integer in [min, max]
  number,   // any JSON number in [min, max]
  boolean,
  string,  // one of `choices` when choices are given
  object,  // a JSON object, checked by the method itself
};
const char* option_type_name(OptionType t);

struct OptionSpec {
  std::string name;
  OptionType type = OptionType::integer;
  nlohmann::ordered_json default_value;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // strings only; empty = any
  std::string help;
};

OptionSpec integer_option(std::string name, int64_t def, int64_t min, int64_t max,
                          std::string help);
OptionSpec number_option(std::string name, double def, double min, double max, std::string help);
OptionSpec boolean_option(std::string name, bool def, std::string help);
OptionSpec string_option(std::string name, std::string def, std::vector<std::string> choices,
                         std::string help);
OptionSpec object_option(std::string name, std::string help);  // default {}

// Resolved options: every declared key present and checked. Typed getters for the methods.
class Options {
 public:
  Options() = default;
  explicit Options(nlohmann::ordered_json resolved) : j_(std::move(resolved)) {}
  int64_t integer(const std::string& key) const { return j_.at(key).get<int64_t>(); }
  double number(const std::string& key) const { return j_.at(key).get<double>(); }
  bool boolean(const std::string& key) const { return j_.at(key).get<bool>(); }
  std::string string(const std::string& key) const { return j_.at(key).get<std::string>(); }
  const nlohmann::ordered_json& object(const std::string& key) const { return j_.at(key); }
  const nlohmann::ordered_json& json() const { return j_; }

 private:
  nlohmann::ordered_json j_ = nlohmann::ordered_json::object();
};

// Checks `user` (a JSON object; null = none) against `specs` and fills in the defaults.
// Errors read "<source>: method '<method>': options.<key>: <what was expected>".
Options resolve_options(const std::string& method, const std::vector<OptionSpec>& specs,
                        const nlohmann::json& user, const std::string& source);

// "a,b,,c" -> {"a", "b", "c"}: a comma-separated list of method names (empty items dropped).
std::vector<std::string> split_commas(const std::string& s);

// `--options` as given on a command line: a JSON object text ('{...}') or the path of a JSON
// file holding one. Strict parse (repeated keys are errors); names the source.
nlohmann::json parse_options_arg(const std::string& arg);

}  // namespace gdp::place
