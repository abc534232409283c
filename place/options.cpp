// Strict resolution of method options against their declarations.
#include "place/options.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"

namespace gdp::place {

const char* option_type_name(OptionType t) {
  switch (t) {
    case OptionType::integer:
      return "integer";
    case OptionType::number:
      return "number";
    case OptionType::boolean:
      return "boolean";
    case OptionType::string:
      return "string";
    case OptionType::object:
      return "object";
  }
  return "?";
}

OptionSpec integer_option(std::string name, int64_t def, int64_t min, int64_t max,
                          std::string help) {
  return OptionSpec{std::move(name),          OptionType::integer,      def,
                    static_cast<double>(min), static_cast<double>(max), {},
                    std::move(help)};
}

OptionSpec number_option(std::string name, double def, double min, double max, std::string help) {
  return OptionSpec{std::move(name), OptionType::number, def, min, max, {}, std::move(help)};
}

OptionSpec boolean_option(std::string name, bool def, std::string help) {
  return OptionSpec{std::move(name), OptionType::boolean, def, 0, 1, {}, std::move(help)};
}

OptionSpec string_option(std::string name, std::string def, std::vector<std::string> choices,
                         std::string help) {
  return OptionSpec{std::move(name),    OptionType::string, def, 0, 0,
                    std::move(choices), std::move(help)};
}

OptionSpec object_option(std::string name, std::string help) {
  return OptionSpec{std::move(name), OptionType::object, nlohmann::ordered_json::object(), 0, 0, {},
                    std::move(help)};
}

namespace {

std::string fmt_bound(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// A short description of a value for error messages (never the whole of a large value).
std::string preview(const nlohmann::json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

}  // namespace

Options resolve_options(const std::string& method, const std::vector<OptionSpec>& specs,
                        const nlohmann::json& user, const std::string& source) {
  const std::string where =
      (source.empty() ? std::string() : source + ": ") + "method '" + method + "': ";
  if (!user.is_null() && !user.is_object())
    throw InputError(where + "options: expected a JSON object, got " + preview(user));
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (user.is_object()) {
    for (auto it = user.begin(); it != user.end(); ++it) {
      bool known = false;
      for (const auto& s : specs) known = known || s.name == it.key();
      if (known) continue;
      std::string names;
      for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
      throw InputError(where + "options." + it.key() + ": unknown option (" +
                       (names.empty() ? "this method takes no options" : "known: " + names) + ")");
    }
  }
  for (const auto& s : specs) {
    const std::string key = where + "options." + s.name + ": ";
    if (!user.is_object() || !user.contains(s.name)) {
      out[s.name] = s.default_value;
      continue;
    }
    const nlohmann::json& v = user.at(s.name);
    switch (s.type) {
      case OptionType::integer: {
        if (!(v.is_number_integer() || v.is_number_unsigned()))
          throw InputError(key + "expected an integer in [" + fmt_bound(s.min) + ", " +
                           fmt_bound(s.max) + "], got " + preview(v));
        if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
          throw InputError(key + "integer out of range, got " + preview(v));
        const int64_t x = v.get<int64_t>();
        if (static_cast<double>(x) < s.min || static_cast<double>(x) > s.max)
          throw InputError(key + "expected an integer in [" + fmt_bound(s.min) + ", " +
                           fmt_bound(s.max) + "], got " + preview(v));
        out[s.name] = x;
        break;
      }
      case OptionType::number: {
        if (!v.is_number())
          throw InputError(key + "expected a number in [" + fmt_bound(s.min) + ", " +
                           fmt_bound(s.max) + "], got " + preview(v));
        const double x = v.get<double>();
        if (!std::isfinite(x) || x < s.min || x > s.max)
          throw InputError(key + "expected a number in [" + fmt_bound(s.min) + ", " +
                           fmt_bound(s.max) + "], got " + preview(v));
        out[s.name] = x;
        break;
      }
      case OptionType::boolean:
        if (!v.is_boolean()) throw InputError(key + "expected true or false, got " + preview(v));
        out[s.name] = v.get<bool>();
        break;
      case OptionType::string: {
        if (!v.is_string()) throw InputError(key + "expected a string, got " + preview(v));
        const std::string x = v.get<std::string>();
        if (!s.choices.empty()) {
          bool ok = false;
          std::string list;
          for (const auto& c : s.choices) {
            ok = ok || c == x;
            list += (list.empty() ? "" : ", ") + c;
          }
          if (!ok) throw InputError(key + "expected one of " + list + ", got " + preview(v));
        }
        out[s.name] = x;
        break;
      }
      case OptionType::object:
        if (!v.is_object()) throw InputError(key + "expected a JSON object, got " + preview(v));
        out[s.name] = nlohmann::ordered_json::parse(v.dump());
        break;
    }
  }
  return Options(std::move(out));
}

nlohmann::json parse_options_arg(const std::string& arg) {
  const size_t k = arg.find_first_not_of(" \t\r\n");
  if (k != std::string::npos && arg[k] == '{') return StrictJson("--options").parse(arg);
  if (k == std::string::npos) throw InputError("--options: expected a JSON object or a file");
  if (std::string("[\"-0123456789").find(arg[k]) != std::string::npos || arg == "true" ||
      arg == "false" || arg == "null")
    throw InputError(
        "--options: options must be a JSON object ({\"key\": value, ...}) or a "
        "file holding one; got '" +
        arg + "'");
  nlohmann::json j = StrictJson(arg).parse(read_text_file(arg));
  if (!j.is_object())
    throw InputError(arg + ": options must be a JSON object ({\"key\": value, ...}), got " +
                     std::string(j.type_name()));
  return j;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

}  // namespace gdp::place
