// Strict JSON field access: every failure names the source, the path and the expectation.
#include "core/json_strict.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace gdp {

namespace {
std::string type_name(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

// The 1-based byte offset of the bracket that opens level `max_depth + 1`. Only called after
// the parser has read that far, so the text before it is valid JSON.
size_t first_too_deep_byte(const std::string& text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i + 1;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

// Builds the DOM from nlohmann's SAX events, as nlohmann's own DOM parser does, and adds the
// strict checks: a key repeated in one object (one map look-up per key, no callback parser:
// that one rescans the enclosing container at every object end, which made reading
// quadratic), and a nesting cap (deeper values would overflow the stack of every recursive
// function that walks a DOM: dump, copy, comparison).
class StrictDomBuilder {
 public:
  using json = nlohmann::json;

  StrictDomBuilder(json& root, const std::string& text, const std::string& source)
      : root_(root), text_(text), source_(source) {}

  bool null() { return put(nullptr); }
  bool boolean(bool b) { return put(b); }
  bool number_integer(json::number_integer_t x) { return put(x); }
  bool number_unsigned(json::number_unsigned_t x) { return put(x); }
  bool number_float(json::number_float_t x, const json::string_t&) { return put(x); }
  bool string(json::string_t& s) { return put(std::move(s)); }
  bool binary(json::binary_t& b) { return put(json::binary(std::move(b))); }

  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool key(json::string_t& k) {
    auto [it, inserted] = open_.back()->get_ref<json::object_t&>().try_emplace(std::move(k));
    if (!inserted)
      throw InputError(source_ + ": invalid JSON: key \"" + it->first +
                       "\" appears twice in one object");
    slot_ = &it->second;
    return true;
  }
  bool end_object() {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_array() {
    open_.pop_back();
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const json::exception& e) {
    if (const auto* pe = dynamic_cast<const json::parse_error*>(&e))
      throw InputError(source_ + ": invalid JSON at byte " + std::to_string(pe->byte) + ": " +
                       pe->what());
    throw InputError(source_ + ": invalid JSON: " + e.what());  // e.g. number overflow (1e999)
  }

 private:
  // Stores a value where the grammar says it goes; returns where it was stored.
  template <class T>
  json* place(T&& v) {
    if (open_.empty()) {
      root_ = json(std::forward<T>(v));
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      auto& a = parent.get_ref<json::array_t&>();
      a.emplace_back(std::forward<T>(v));
      return &a.back();
    }
    *slot_ = json(std::forward<T>(v));
    return slot_;
  }
  template <class T>
  bool put(T&& v) {
    place(std::forward<T>(v));
    return true;
  }
  bool open(json::value_t t) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth))
      throw InputError(source_ + ": invalid JSON at byte " +
                       std::to_string(first_too_deep_byte(text_, kMaxJsonDepth)) +
                       ": arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels");
    open_.push_back(place(t));
    return true;
  }

  json& root_;
  const std::string& text_;
  const std::string& source_;
  std::vector<json*> open_;  // the open arrays and objects, innermost last
  json* slot_ = nullptr;     // the value of the key just read
};
}  // namespace

std::string json_preview(const nlohmann::json& v) {
  constexpr size_t kMaxChars = 60;
  if (v.is_array())
    return "an array of " + std::to_string(v.size()) + (v.size() == 1 ? " item" : " items");
  if (v.is_object())
    return "an object of " + std::to_string(v.size()) + (v.size() == 1 ? " key" : " keys");
  if (v.is_binary()) return "binary data";
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    auto quoted = [](const std::string& x) {
      return nlohmann::json(x).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    if (s.size() <= kMaxChars) return quoted(s);
    size_t n = kMaxChars;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // whole UTF-8 chars
    std::string head = quoted(s.substr(0, n));
    head.pop_back();  // the closing quote
    return head + "...\" (" + std::to_string(s.size()) + " bytes)";
  }
  std::string d = v.dump();  // null, true, false or a number: short
  if (d.size() > kMaxChars) d = d.substr(0, kMaxChars) + "...";
  return d;
}

nlohmann::json StrictJson::parse(const std::string& text) const {
  nlohmann::json root;
  StrictDomBuilder builder(root, text, source_);
  nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &builder);
  return root;
}

void StrictJson::fail(const std::string& path, const std::string& what) const {
  throw InputError(source_ + ": " + (path.empty() ? std::string("<root>") : path) + ": " + what);
}

void StrictJson::check_keys(const nlohmann::json& obj, const std::string& path,
                            std::initializer_list<const char*> required,
                            std::initializer_list<const char*> optional) const {
  constexpr size_t kMaxNames = 64;
  std::string_view names[kMaxNames];
  if (required.size() + optional.size() > kMaxNames)
    throw std::logic_error("check_keys: too many key names");
  size_t n = 0;
  for (const char* k : required) names[n++] = k;
  for (const char* k : optional) names[n++] = k;
  check_keys_in(obj, path, names, required.size(), n);
}

void StrictJson::check_keys(const nlohmann::json& obj, const std::string& path,
                            const std::vector<std::string>& required,
                            const std::vector<std::string>& optional) const {
  std::vector<std::string_view> names;
  for (const std::string& k : required) names.emplace_back(k);
  for (const std::string& k : optional) names.emplace_back(k);
  if (names.size() > 64) throw std::logic_error("check_keys: too many key names");
  check_keys_in(obj, path, names.data(), required.size(), names.size());
}

void StrictJson::check_keys_in(const nlohmann::json& obj, const std::string& path,
                               const std::string_view* names, size_t num_required,
                               size_t num_names) const {
  if (!obj.is_object()) fail(path, "expected an object, got " + type_name(obj));
  // One pass over the object's keys (sorted), each compared by length first: this runs for
  // every op of a million-op graph. Reports the first missing required key (in `required`
  // order), else the first unknown key.
  uint64_t found = 0;  // bit i: required key i seen
  const std::string* unknown = nullptr;
  for (const auto& [k, v] : obj.get_ref<const nlohmann::json::object_t&>()) {
    size_t i = 0;
    while (i < num_names && names[i] != k) ++i;
    if (i == num_names) {
      if (!unknown) unknown = &k;
    } else if (i < num_required) {
      found |= uint64_t{1} << i;
    }
  }
  for (size_t i = 0; i < num_required; ++i)
    if (!(found >> i & 1))
      fail(json_path(path, std::string(names[i]).c_str()), "missing required key");
  if (unknown) {
    std::string allowed;
    for (size_t i = 0; i < num_names; ++i)
      allowed += std::string(allowed.empty() ? "" : ", ") + std::string(names[i]);
    fail(json_path(path, unknown->c_str()), "unknown key (expected one of: " + allowed + ")");
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

double StrictJson::number_value(const nlohmann::json& v, const std::string& path, double min_value,
                                double max_value) const {
  if (!v.is_number()) fail(path, "expected a number, got " + type_name(v));
  double d = v.get<double>();
  if (!std::isfinite(d)) fail(path, "expected a finite number");
  if (d < min_value)
    fail(path, "expected a number >= " + std::to_string(min_value) + ", got " + json_preview(v));
  if (d > max_value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", max_value);
    fail(path, std::string("expected a number <= ") + buf + ", got " + json_preview(v));
  }
  return d;
}

double StrictJson::number(const nlohmann::json& parent, const char* key, const std::string& path,
                          double min_value, double max_value) const {
  const auto& v = parent.at(key);
  if (v.is_number()) {  // the common case, without building the path
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= min_value && d <= max_value) return d;
  }
  return number_value(v, json_path(path, key), min_value, max_value);
}

int64_t StrictJson::integer_value(const nlohmann::json& v, const std::string& path,
                                  int64_t min_value, int64_t max_value) const {
  if (!(v.is_number_integer() || v.is_number_unsigned()))
    fail(path, "expected an integer, got " +
                   (v.is_structured() ? json_preview(v) : type_name(v) + " " + json_preview(v)));
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
  const auto& v = parent.at(key);
  if (v.is_number_unsigned()) {  // the common case, without building the path
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX) && static_cast<int64_t>(u) >= min_value &&
        static_cast<int64_t>(u) <= max_value)
      return static_cast<int64_t>(u);
  }
  return integer_value(v, json_path(path, key), min_value, max_value);
}

bool StrictJson::boolean(const nlohmann::json& parent, const char* key,
                         const std::string& path) const {
  const auto& v = parent.at(key);
  if (!v.is_boolean()) fail(json_path(path, key), "expected true or false, got " + type_name(v));
  return v.get<bool>();
}

void StrictJson::check_header(const nlohmann::json& root, const char* format, int version) const {
  if (!root.is_object()) fail("", "expected a JSON object, got " + type_name(root));
  if (!root.contains("format"))
    fail("format", std::string("missing required key (expected \"") + format + "\")");
  std::string f = string(root, "format", "");
  if (f != format) fail("format", std::string("expected \"") + format + "\", got \"" + f + "\"");
  if (!root.contains("version")) fail("version", "missing required key");
  int64_t v = integer(root, "version", "", 0);
  if (v != version)
    fail("version", "unsupported version " + std::to_string(v) + " (this build reads version " +
                        std::to_string(version) + ")");
}

}  // namespace gdp
