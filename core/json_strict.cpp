// Strict JSON field access: every failure names the source, the path and the expectation.
#include "core/json_strict.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace gdp {

namespace {
std::string type_name(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}
}  // namespace

nlohmann::json StrictJson::parse(const std::string& text) const {
  // Keys seen in each open object, innermost last: a repeated key would otherwise silently
  // replace the earlier value.
  std::vector<std::vector<std::string>> open_keys;
  auto cb = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) open_keys.emplace_back();
    else if (ev == E::object_end) open_keys.pop_back();
    else if (ev == E::key && !open_keys.empty()) {
      const std::string k = parsed.get<std::string>();
      auto& seen = open_keys.back();
      if (std::find(seen.begin(), seen.end(), k) != seen.end())
        throw InputError(source_ + ": invalid JSON: key \"" + k + "\" appears twice in one object");
      seen.push_back(k);
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, cb);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(source_ + ": invalid JSON at byte " + std::to_string(e.byte) + ": " +
                     e.what());
  } catch (const nlohmann::json::exception& e) {  // e.g. number overflow (1e999)
    throw InputError(source_ + ": invalid JSON: " + e.what());
  }
}

void StrictJson::fail(const std::string& path, const std::string& what) const {
  throw InputError(source_ + ": " + (path.empty() ? std::string("<root>") : path) + ": " + what);
}

void StrictJson::check_keys(const nlohmann::json& obj, const std::string& path,
                            std::initializer_list<const char*> required,
                            std::initializer_list<const char*> optional) const {
  if (!obj.is_object()) fail(path, "expected an object, got " + type_name(obj));
  for (const char* k : required)
    if (!obj.contains(k)) fail(json_path(path, k), "missing required key");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    auto eq = [&](const char* s) { return k == s; };
    if (std::none_of(required.begin(), required.end(), eq) &&
        std::none_of(optional.begin(), optional.end(), eq)) {
      std::string allowed;
      for (const char* s : required) allowed += std::string(allowed.empty() ? "" : ", ") + s;
      for (const char* s : optional) allowed += std::string(allowed.empty() ? "" : ", ") + s;
      fail(json_path(path, k.c_str()), "unknown key (expected one of: " + allowed + ")");
    }
  }
}

const nlohmann::json& StrictJson::object(const nlohmann::json& parent, const char* key,
                                         const std::string& path) const {
  const auto& v = parent.at(key);
  if (!v.is_object()) fail(json_path(path, key), "expected an object, got " + type_name(v));
  return v;
}

const nlohmann::json& StrictJson::array(const nlohmann::json& parent, const char* key,
                                        const std::string& path) const {
  const auto& v = parent.at(key);
  if (!v.is_array()) fail(json_path(path, key), "expected an array, got " + type_name(v));
  return v;
}

std::string StrictJson::string(const nlohmann::json& parent, const char* key,
                               const std::string& path) const {
  const auto& v = parent.at(key);
  if (!v.is_string()) fail(json_path(path, key), "expected a string, got " + type_name(v));
  return v.get<std::string>();
}

double StrictJson::number_value(const nlohmann::json& v, const std::string& path,
                                double min_value, double max_value) const {
  if (!v.is_number()) fail(path, "expected a number, got " + type_name(v));
  double d = v.get<double>();
  if (!std::isfinite(d)) fail(path, "expected a finite number");
  if (d < min_value)
    fail(path, "expected a number >= " + std::to_string(min_value) + ", got " + v.dump());
  if (d > max_value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", max_value);
    fail(path, std::string("expected a number <= ") + buf + ", got " + v.dump());
  }
  return d;
}

double StrictJson::number(const nlohmann::json& parent, const char* key, const std::string& path,
                          double min_value, double max_value) const {
  return number_value(parent.at(key), json_path(path, key), min_value, max_value);
}

int64_t StrictJson::integer_value(const nlohmann::json& v, const std::string& path,
                                  int64_t min_value, int64_t max_value) const {
  if (!(v.is_number_integer() || v.is_number_unsigned()))
    fail(path, "expected an integer, got " + type_name(v) + " " + v.dump());
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail(path, "integer out of range");
  int64_t x = v.get<int64_t>();
  if (x < min_value || x > max_value)
    fail(path, "expected an integer in [" + std::to_string(min_value) + ", " +
                   std::to_string(max_value) + "], got " + std::to_string(x));
  return x;
}

int64_t StrictJson::integer(const nlohmann::json& parent, const char* key, const std::string& path,
                            int64_t min_value, int64_t max_value) const {
  return integer_value(parent.at(key), json_path(path, key), min_value, max_value);
}

bool StrictJson::boolean(const nlohmann::json& parent, const char* key,
                         const std::string& path) const {
  const auto& v = parent.at(key);
  if (!v.is_boolean()) fail(json_path(path, key), "expected true or false, got " + type_name(v));
  return v.get<bool>();
}

void StrictJson::check_header(const nlohmann::json& root, const char* format, int version) const {
  if (!root.is_object()) fail("", "expected a JSON object, got " + type_name(root));
  if (!root.contains("format")) fail("format", std::string("missing required key (expected \"") + format + "\")");
  std::string f = string(root, "format", "");
  if (f != format) fail("format", std::string("expected \"") + format + "\", got \"" + f + "\"");
  if (!root.contains("version")) fail("version", "missing required key");
  int64_t v = integer(root, "version", "", 0);
  if (v != version)
    fail("version", "unsupported version " + std::to_string(v) + " (this build reads version " +
                        std::to_string(version) + ")");
}

}  // namespace gdp
