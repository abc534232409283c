// Strict JSON field access for every reader in the project: unknown keys, missing keys,
// wrong types and impossible numbers are InputErrors naming the file, the JSON path
// (e.g. "ops[3].outputs[0].shape") and what was expected.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace gdp {

// Upper bounds that keep every derived sum (bytes per device, times along a path) finite and
// free of integer overflow: 2^50 bytes (1 PiB) per field, 1e30 for other numbers.
constexpr int64_t kMaxBytes = int64_t{1} << 50;
constexpr double kMaxNumber = 1e30;
// Deepest nesting of arrays and objects that StrictJson::parse accepts (the formats need
// fewer than 10 levels); deeper input is an InputError, not a stack overflow later.
constexpr int kMaxJsonDepth = 256;

// A short description of a value for error messages, bounded and never recursive: "an array
// of 3 items", "an object of 2 keys", a string cut to its first 60 bytes, then escaped
// ("\"abc...\" (5000 bytes)"), a number, null, true, false.
std::string json_preview(const nlohmann::json& v);

class StrictJson {
 public:
  explicit StrictJson(std::string source) : source_(std::move(source)) {}

  // Parses text in linear time; syntax errors name the byte offset; a key repeated in one
  // object and nesting deeper than kMaxJsonDepth are errors.
  nlohmann::json parse(const std::string& text) const;

  [[noreturn]] void fail(const std::string& path, const std::string& what) const;

  // The object at `path` may only hold these keys; required ones must be present.
  void check_keys(const nlohmann::json& obj, const std::string& path,
                  std::initializer_list<const char*> required,
                  std::initializer_list<const char*> optional) const;
  void check_keys(const nlohmann::json& obj, const std::string& path,
                  const std::vector<std::string>& required,
                  const std::vector<std::string>& optional) const;
  const nlohmann::json& object(const nlohmann::json& parent, const char* key,
                               const std::string& path) const;
  const nlohmann::json& array(const nlohmann::json& parent, const char* key,
                              const std::string& path) const;
  std::string string(const nlohmann::json& parent, const char* key, const std::string& path) const;
  // Finite number in [min_value, max_value].
  double number(const nlohmann::json& parent, const char* key, const std::string& path,
                double min_value = 0.0, double max_value = kMaxNumber) const;
  double number_value(const nlohmann::json& v, const std::string& path, double min_value = 0.0,
                      double max_value = kMaxNumber) const;
  // Integer in [min_value, max_value].
  int64_t integer(const nlohmann::json& parent, const char* key, const std::string& path,
                  int64_t min_value = 0, int64_t max_value = INT64_MAX) const;
  int64_t integer_value(const nlohmann::json& v, const std::string& path, int64_t min_value = 0,
                        int64_t max_value = INT64_MAX) const;
  bool boolean(const nlohmann::json& parent, const char* key, const std::string& path) const;
  // Checks "format" == expected and "version" == version.
  void check_header(const nlohmann::json& root, const char* format, int version) const;

  const std::string& source() const { return source_; }

 private:
  void check_keys_in(const nlohmann::json& obj, const std::string& path,
                     const std::string_view* names, size_t num_required, size_t num_names) const;
  std::string source_;
};

inline std::string json_path(const std::string& base, const char* key) {
  return base.empty() ? std::string(key) : base + "." + key;
}
inline std::string json_path(const std::string& base, size_t index) {
  return base + "[" + std::to_string(index) + "]";
}

}  // namespace gdp
