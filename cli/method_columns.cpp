// Method columns of gdp compare and gdp suite run.
#include "cli/method_columns.h"

#include <algorithm>

#include "core/error.h"
#include "place/options.h"
#include "place/registry.h"

namespace gdp::cli {

std::vector<eval::MethodSpec> parse_method_columns(const std::string& methods_arg,
                                                   const std::string& options_arg) {
  const std::vector<std::string> methods = place::split_commas(methods_arg);
  if (methods.empty()) throw UsageError("--methods needs at least one method");
  nlohmann::json options = nlohmann::json::object();
  std::string options_source = "--options";
  // LABEL=JSON gives one column its options: 'anneal={"samples": 5000}'.
  const size_t eq = options_arg.find('=');
  const size_t brace = options_arg.find('{');
  if (eq != std::string::npos && brace != std::string::npos && eq < brace &&
      options_arg.find_first_not_of(" \t", eq + 1) == brace) {
    const std::string label = options_arg.substr(0, eq);
    options = nlohmann::json::object();
    options[label] = place::parse_options_arg(options_arg.substr(eq + 1));
    options_source = "--options " + label + "=";
  } else if (!options_arg.empty()) {
    options = place::parse_options_arg(options_arg);
    const size_t k = options_arg.find_first_not_of(" \t\r\n");
    if (!(k != std::string::npos && options_arg[k] == '{')) options_source = options_arg;
    if (!options.is_object())
      throw UsageError(options_source + ": expected a JSON object of options per method column");
  }
  std::vector<eval::MethodSpec> specs;
  std::vector<std::string> labels;
  for (const std::string& m : methods) {
    std::string label = m, name = m;
    if (const size_t eq = m.find('='); eq != std::string::npos) {
      label = m.substr(0, eq);
      name = m.substr(eq + 1);
    }
    if (label.empty()) throw UsageError("--methods: empty column label in '" + m + "'");
    if (std::find(labels.begin(), labels.end(), label) != labels.end())
      throw UsageError("--methods: column '" + label + "' appears twice");
    place::registry().get(name);  // an unknown name is a UsageError listing the known ones
    nlohmann::json o;
    if (options.contains(label)) o = options[label];
    specs.push_back({name, o, options_source + " \"" + label + "\"", label});
    labels.push_back(label);
  }
  for (const auto& [key, value] : options.items())
    if (std::find(labels.begin(), labels.end(), key) == labels.end())
      throw UsageError(options_source + ": key '" + key + "' is not a column of --methods");
  return specs;
}

}  // namespace gdp::cli
