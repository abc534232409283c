// Strict JSON parsing (repeated keys, nesting cap, bounded previews in messages) and the graph
// reader's fast path against the checked reference reader: same graph or same message for
// valid, unusual and broken inputs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"

using namespace gdp;
using nlohmann::json;

namespace {

// The message of the InputError that parsing `text` throws ("" when it parses).
std::string parse_error_of(const std::string& text) {
  try {
    StrictJson("src.json").parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

// {"a":{"a":...{"a":1}...}} with `depth` objects.
std::string nested_objects(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s += std::string(depth, '}');
  return s;
}

// What reading `text` gives: the graph's JSON text, or "error: " + the message.
template <class Reader>
std::string outcome(Reader read, const std::string& text) {
  try {
    return graph_to_json(read(text, "g.json"));
  } catch (const InputError& e) {
    return std::string("error: ") + e.what();
  }
}

// The fast reader must give what the reference gives, for every input.
void check_same_as_reference(const std::string& text) {
  INFO(text);
  const std::string fast = outcome(parse_graph_json, text);
  const std::string reference = outcome(parse_graph_json_reference, text);
  REQUIRE(fast == reference);
}

// A graph with every optional field, several outputs and measured times.
Graph sample_graph(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g;
  g.name = "sample \"quoted\" \xc3\xa9";
  for (int i = 0; i < n; ++i) {
    Op o;
    o.id = 7 * i + 2;
    o.name = "layer_" + std::to_string(i / 5) + "/op_" + std::to_string(i);
    o.type = (i % 4 == 0) ? "Conv2D" : (i % 4 == 1) ? "Relu" : (i % 4 == 2) ? "AddN" : "ApplyAdam";
    if (i % 3) o.scope = "layer_" + std::to_string(i / 5);
    o.phase = static_cast<Phase>(i % 3);
    const int num_outputs = static_cast<int>(rng() % 3);  // 0, 1 or 2
    for (int k = 0; k < num_outputs; ++k) {
      TensorSpec t;
      const int rank = static_cast<int>(rng() % 5);  // scalars too
      int64_t numel = 1;
      for (int d = 0; d < rank; ++d) {
        t.shape.push_back(static_cast<int64_t>(rng() % 300));
        numel *= t.shape.back();
      }
      t.dtype = static_cast<DType>(rng() % 8);
      t.bytes = numel * dtype_size_bytes(t.dtype);
      o.outputs.push_back(t);
    }
    o.flops = (i % 5 == 0) ? 0.0 : static_cast<double>(rng() % 1000000000) * 1.37e3;
    o.bytes_accessed = static_cast<double>(rng() % 100000) / 7.0;
    o.param_bytes = (i % 4 == 3) ? static_cast<int64_t>(rng() % 100000) : 0;
    o.optimizer_bytes = (i % 8 == 3) ? 2 * o.param_bytes : 0;
    if (i % 16 == 7) o.param_dtype = DType::f16;
    o.temp_bytes = (i % 6 == 0) ? 4096 : 0;
    if (i % 7 == 0) {
      o.measured.push_back({"V100", 1e-6 * static_cast<double>(rng() % 1000) / 3.0});
      o.measured.push_back({"P100", 2e-5});
    }
    if (i % 4 == 3)
      o.colocation = "layer_" + std::to_string(i / 5) + "/op_" + std::to_string(i - 3);
    g.add_op(o);
  }
  for (int i = 1; i < n; ++i)
    for (int k = 0, fan = 1 + static_cast<int>(rng() % 3); k < fan; ++k) {
      const int src = static_cast<int>(rng() % i);
      const int outs = static_cast<int>(g.op(src).outputs.size());
      if (outs == 0) continue;
      const int out = static_cast<int>(rng() % outs);
      const int64_t bytes =
          (rng() % 5 == 0) ? 1 + static_cast<int64_t>(rng() % 64) : g.op(src).outputs[out].bytes;
      g.add_edge(src, out, i, bytes);
    }
  g.finalize();
  return g;
}

// The writer as it was (one ordered_json per op, dumped): the reference for graph_to_json.
std::string reference_graph_to_json(const Graph& g) {
  using ojson = nlohmann::ordered_json;
  std::string out;
  ojson head;
  head["format"] = "gdp-graph";
  head["version"] = kGraphFormatVersion;
  head["name"] = g.name;
  std::string h = head.dump();
  out += h.substr(0, h.size() - 1);
  out += ",\n\"ops\": [\n";
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const Op& o = g.op(i);
    ojson j;
    j["id"] = o.id;
    j["name"] = o.name;
    j["type"] = o.type;
    if (!o.scope.empty()) j["scope"] = o.scope;
    j["phase"] = phase_name(o.phase);
    ojson outs = ojson::array();
    for (const auto& t : o.outputs)
      outs.push_back(ojson{{"shape", t.shape}, {"dtype", dtype_name(t.dtype)}, {"bytes", t.bytes}});
    j["outputs"] = std::move(outs);
    j["flops"] = o.flops;
    j["bytes_accessed"] = o.bytes_accessed;
    if (o.param_bytes) j["param_bytes"] = o.param_bytes;
    if (o.optimizer_bytes) j["optimizer_bytes"] = o.optimizer_bytes;
    if (o.param_dtype != DType::f32) j["param_dtype"] = dtype_name(o.param_dtype);
    if (o.temp_bytes) j["temp_bytes"] = o.temp_bytes;
    if (!o.measured.empty()) {
      ojson ms = ojson::array();
      for (const auto& m : o.measured)
        ms.push_back(ojson{{"device_kind", m.device_kind}, {"time_s", m.time_s}});
      j["measured"] = std::move(ms);
    }
    if (!o.colocation.empty()) j["colocation"] = o.colocation;
    out += "  " + j.dump() + ((i + 1 < g.num_ops()) ? ",\n" : "\n");
  }
  out += "],\n\"edges\": [\n";
  const auto& es = g.edges();
  for (size_t e = 0; e < es.size(); ++e) {
    const Edge& ed = es[e];
    ojson j;
    j["src"] = g.op(ed.src).id;
    j["dst"] = g.op(ed.dst).id;
    if (ed.src_output) j["output"] = ed.src_output;
    if (ed.bytes != g.op(ed.src).outputs[ed.src_output].bytes) j["bytes"] = ed.bytes;
    out += "  " + j.dump() + ((e + 1 < es.size()) ? ",\n" : "\n");
  }
  out += "]}\n";
  return out;
}

}  // namespace

TEST_CASE("core/json_strict repeated keys are rejected in any one object", "[core]") {
  const std::string twice = "src.json: invalid JSON: key \"a\" appears twice in one object";
  CHECK(parse_error_of(R"({"a": 1, "a": 2})") == twice);
  CHECK(parse_error_of(R"({"a": 1, "b": [], "a": 1})") == twice);
  // Deep inside, at the same depth and after a nested object has closed.
  CHECK(parse_error_of(R"({"x": [{"y": {"a": 1, "z": 2, "a": 3}}]})") == twice);
  CHECK(parse_error_of(R"({"x": [{}, {"b": 0}, {"a": {"a": {}}, "a": 2}]})") == twice);
  CHECK(parse_error_of(R"({"a": {"q": 1}, "a": 2})") == twice);
  CHECK(parse_error_of(R"({"k": {"a": {"b": 1}, "c": 2, "a": 3}})") == twice);
  CHECK_THAT(parse_error_of(R"([[{"long key \u00e9": 1, "long key \u00e9": 2}]])"),
             Catch::Contains("key \"long key \xc3\xa9\" appears twice"));
}

TEST_CASE("core/json_strict the same key in different objects is accepted", "[core]") {
  // Siblings, the same key at other depths, and after the inner object has closed.
  CHECK(parse_error_of(R"([{"a": 1}, {"a": 2}, {"a": {"a": {"a": 3}}}])").empty());
  CHECK(
      parse_error_of(R"({"a": {"b": 1, "c": {"b": 2}}, "b": 3, "c": [{"a": 1, "b": 1}]})").empty());
  const json j = StrictJson("src.json").parse(R"({"a": {"a": [1, {"a": null}]}, "b": [[], {}]})");
  CHECK(j == json::parse(R"({"a": {"a": [1, {"a": null}]}, "b": [[], {}]})"));
}

TEST_CASE("core/json_strict keeps nlohmann's values and syntax messages", "[core]") {
  const std::string text =
      R"({"i": -3, "u": 18446744073709551615, "f": 1.5e-7, "s": "x\ny\u0041", "t": true,
          "n": null, "e": [], "o": {}, "nested": [[1, [2, [3]]], {"k": [{}]}]})";
  CHECK(StrictJson("src.json").parse(text) == json::parse(text));
  CHECK(StrictJson("src.json").parse("  7 ") == json(7));
  const std::string bad = parse_error_of(R"({"a": [1, 2,]})");
  CHECK_THAT(bad, Catch::StartsWith("src.json: invalid JSON at byte 13: ") &&
                      Catch::Contains("syntax error"));
  CHECK_THAT(parse_error_of("{} x"), Catch::StartsWith("src.json: invalid JSON at byte 4: "));
  CHECK_THAT(parse_error_of(R"({"a": 1e999})"),
             Catch::StartsWith("src.json: invalid JSON: ") && Catch::Contains("overflow"));
  CHECK_THAT(parse_error_of(""), Catch::StartsWith("src.json: invalid JSON at byte 1: "));
}

TEST_CASE("core/json_strict caps nesting at kMaxJsonDepth levels", "[core]") {
  const size_t cap = static_cast<size_t>(kMaxJsonDepth);
  CHECK(parse_error_of(nested_arrays(cap)).empty());
  CHECK(parse_error_of(nested_objects(cap)).empty());
  CHECK(parse_error_of("{\"a\": " + nested_arrays(cap - 1) + "}").empty());
  const std::string too_deep = "src.json: invalid JSON at byte " + std::to_string(cap + 1) +
                               ": arrays and objects nested deeper than " + std::to_string(cap) +
                               " levels";
  CHECK(parse_error_of(nested_arrays(cap + 1)) == too_deep);
  CHECK(parse_error_of(nested_arrays(100000)) == too_deep);  // an error, not a stack overflow
  CHECK_THAT(parse_error_of(nested_objects(100000)), Catch::Contains("nested deeper than"));
  // The byte offset skips brackets inside strings and counts closed levels out.
  const std::string prefix = R"({"s": "[[{\"[", "closed": [[[]]], "deep": )";
  CHECK_THAT(parse_error_of(prefix + nested_arrays(100000) + "}"),
             Catch::Contains("at byte " + std::to_string(prefix.size() + cap)));
}

TEST_CASE("core/reader: a header value 100,000 arrays deep is an InputError", "[core]") {
  const std::string deep = "{\"format\": \"gdp-graph\", \"version\": " + nested_arrays(100000) +
                           ", \"name\": \"g\", \"ops\": [], \"edges\": []}";
  CHECK_THROWS_WITH(parse_graph_json(deep, "bad.json"),
                    Catch::StartsWith("bad.json: invalid JSON at byte ") &&
                        Catch::Contains("nested deeper than 256 levels"));
  // At the cap it parses, and the message about the value stays short.
  const std::string at_cap = "{\"format\": \"gdp-graph\", \"version\": " + nested_arrays(254) +
                             ", \"name\": \"g\", \"ops\": [], \"edges\": []}";
  CHECK_THROWS_WITH(parse_graph_json(at_cap, "bad.json"),
                    "bad.json: version: expected an integer, got an array of 1 item");
}

TEST_CASE("core/json_strict previews are short and never recursive", "[core]") {
  CHECK(json_preview(json::array({1, 2, 3})) == "an array of 3 items");
  CHECK(json_preview(json::array({1})) == "an array of 1 item");
  CHECK(json_preview(json::array()) == "an array of 0 items");
  CHECK(json_preview(json::object({{"a", 1}, {"b", 2}})) == "an object of 2 keys");
  CHECK(json_preview(json::object({{"a", 1}})) == "an object of 1 key");
  CHECK(json_preview(json(nullptr)) == "null");
  CHECK(json_preview(json(true)) == "true");
  CHECK(json_preview(json(-12)) == "-12");
  CHECK(json_preview(json(2.5)) == "2.5");
  CHECK(json_preview(json("ab\"c")) == "\"ab\\\"c\"");
  CHECK(json_preview(json(std::string(60, 'x'))) == "\"" + std::string(60, 'x') + "\"");
  CHECK(json_preview(json(std::string(100000, 'x'))) ==
        "\"" + std::string(60, 'x') + "...\" (100000 bytes)");
  // Cut at a character boundary: the preview stays valid UTF-8.
  const std::string accents = [] {
    std::string s;
    for (int i = 0; i < 100; ++i) s += "\xc3\xa9";
    return s;
  }();
  const std::string p = json_preview(json(accents));
  CHECK(p.size() < 80);
  CHECK_NOTHROW(json::parse(p.substr(0, p.find("...")) + "\""));

  // In messages: a 100,000-item array, a deep array and a long string are described briefly.
  StrictJson sj("src.json");
  std::string items = "0";
  for (int i = 1; i < 100000; ++i) items += ",0";
  const json big = sj.parse("{\"v\": [" + items + "]}");
  REQUIRE(big["v"].size() == 100000);
  CHECK_THROWS_WITH(sj.integer(big, "v", ""),
                    "src.json: v: expected an integer, got an array of 100000 items");
  const json deep = sj.parse("{\"v\": " + nested_arrays(kMaxJsonDepth - 1) + "}");
  CHECK_THROWS_WITH(sj.integer(deep, "v", ""),
                    "src.json: v: expected an integer, got an array of 1 item");
  const json text = sj.parse("{\"v\": \"" + std::string(5000, 'y') + "\"}");
  CHECK_THROWS_WITH(sj.integer(text, "v", ""), "src.json: v: expected an integer, got string \"" +
                                                   std::string(60, 'y') + "...\" (5000 bytes)");
  CHECK_THROWS_WITH(sj.integer(sj.parse(R"({"v": 0.5})"), "v", ""),
                    "src.json: v: expected an integer, got number 0.5");
  CHECK_THROWS_WITH(sj.number(sj.parse(R"({"v": -2})"), "v", ""),
                    "src.json: v: expected a number >= 0.000000, got -2");
  CHECK_THROWS_WITH(sj.number(sj.parse(R"({"v": 3e31})"), "v", ""),
                    "src.json: v: expected a number <= 1e+30, got 3e+31");
}

TEST_CASE("core/reader: a generated graph round-trips through write and read as identical text",
          "[core]") {
  const Graph g = sample_graph(3000, 42);
  const std::string text = graph_to_json(g);
  const auto path = std::filesystem::temp_directory_path() / "gdp_test_json_strict_roundtrip.json";
  write_graph_file(g, path.string());
  const Graph back = read_graph_file(path.string());
  std::filesystem::remove(path);
  CHECK(graph_to_json(back) == text);
  CHECK(back.num_ops() == g.num_ops());
  CHECK(back.num_edges() == g.num_edges());
  CHECK(back.topo_order() == g.topo_order());
  CHECK(back.op(7).measured.size() == 2);
  CHECK(graph_to_json(parse_graph_json_reference(text, "g.json")) == text);
}

TEST_CASE("core/reader: fast path and reference agree on unusual valid input", "[core]") {
  const Graph g = sample_graph(40, 7);
  const std::string text = graph_to_json(g);
  check_same_as_reference(text);
  // Keys in other orders (edges before ops), pretty-printed, numbers written otherwise.
  json j = json::parse(text);  // std::map: keys sorted, so "edges" comes before "ops"
  check_same_as_reference(j.dump());
  check_same_as_reference(j.dump(2));
  CHECK(outcome(parse_graph_json, j.dump(1)) == text);
  std::string odd = text;
  odd.replace(odd.find("\"bytes_accessed\":"), 17, "\"bytes_accessed\": -0, \"x\":");
  check_same_as_reference(odd);  // an unknown key: the reference names it
  std::string ints = text;
  ints.replace(ints.find("\"flops\":0.0"), 11, "\"flops\":-0");
  check_same_as_reference(ints);
  CHECK(outcome(parse_graph_json, ints) == text);
}

TEST_CASE("core/reader: fast path and reference agree on every mutation of a small graph",
          "[core]") {
  using ojson = nlohmann::ordered_json;
  const ojson base = ojson::parse(R"({"format": "gdp-graph", "version": 1, "name": "g",
    "ops": [
      {"id": 10, "name": "a", "type": "MatMul", "scope": "s", "phase": "forward",
       "outputs": [{"shape": [2, 3], "dtype": "f32", "bytes": 24},
                   {"shape": [], "dtype": "i64", "bytes": 8}],
       "flops": 12, "bytes_accessed": 48.5, "param_bytes": 96, "temp_bytes": 16,
       "measured": [{"device_kind": "V100", "time_s": 0.001},
                    {"device_kind": "P100", "time_s": 0.002}],
       "colocation": "grp"},
      {"id": 11, "name": "b", "type": "Relu", "phase": "backward",
       "outputs": [{"shape": [2, 3], "dtype": "f16", "bytes": 12}],
       "flops": 0, "bytes_accessed": 1e3},
      {"id": 12, "name": "c", "type": "ApplyAdam", "phase": "update", "outputs": [],
       "flops": 1.5, "bytes_accessed": 0, "colocation": "grp"},
      {"id": 20, "name": "d", "type": "Const", "phase": "forward",
       "outputs": [{"shape": [1], "dtype": "bool", "bytes": 1}], "flops": 0, "bytes_accessed": 1,
       "measured": []}],
    "edges": [{"src": 10, "dst": 11}, {"src": 10, "dst": 12, "output": 1, "bytes": 4},
              {"src": 11, "dst": 12}]})");
  REQUIRE(outcome(parse_graph_json, base.dump()).rfind("error", 0) != 0);
  // (Op "d" has no edges: its id can change without breaking them.)

  std::vector<ojson::json_pointer> all;  // every value, containers included, root first
  std::vector<ojson::json_pointer> todo{ojson::json_pointer()};
  while (!todo.empty()) {
    const ojson::json_pointer at = todo.back();
    todo.pop_back();
    all.push_back(at);
    const ojson& v = base[at];
    if (v.is_object())
      for (const auto& item : v.items()) todo.push_back(at / item.key());
    else if (v.is_array())
      for (size_t i = 0; i < v.size(); ++i) todo.push_back(at / i);
  }
  REQUIRE(all.size() > 60);
  // `doc` with the placeholder string `mark` replaced by raw text.
  auto with_raw = [](const ojson& doc, const std::string& mark, const std::string& raw) {
    std::string text = doc.dump();
    const std::string quoted = "\"" + mark + "\"";
    const size_t at = text.find(quoted);
    REQUIRE(at != std::string::npos);
    return text.replace(at, quoted.size(), raw);
  };

  // clang-format off
  const std::vector<std::string> raws = {
      "null", "true", "false", "0", "-0", "1", "-1", "2", "10", "11", "12", "13", "1.5", "1.0",
      "-1.5", "1e6", "1000001", "1e30", "1e31", "1e999", "-1e999", "9223372036854775807",
      "9223372036854775808", "18446744073709551615", "18446744073709551616",
      "2305843009213693951", "2305843009213693952", "1125899906842624", "1125899906842625",
      "2147483647", "2147483648", "\"\"", "\"x\"", "\"a\"", "\"b\"", "\"grp\"", "\"forward\"",
      "\"update\"", "\"f16\"", "\"bool\"", "\"V100\"", "\"gdp-graph\"", "[]", "[1]", "[[1]]",
      "[\"x\"]", "{}", "{\"a\": 1}", "[1,", "\"\\u00e9\"", "\"\xff\""};
  // clang-format on
  size_t cases = 0;
  for (const auto& at : all) {
    // Every value replaced by each raw text (the root too).
    for (const std::string& raw : raws) {
      ojson doc = base;
      doc[at] = "@@raw@@";
      check_same_as_reference(with_raw(doc, "@@raw@@", raw));
      ++cases;
    }
    const ojson& v = base[at];
    if (v.is_object()) {
      std::vector<std::string> keys;
      for (const auto& item : v.items()) keys.push_back(item.key());
      for (const std::string& k : keys) {
        ojson removed = base;  // a key missing
        removed[at].erase(k);
        check_same_as_reference(removed.dump());
        ojson twice = base;  // a key repeated
        twice[at]["@@dup@@"] = "@@dup@@";
        check_same_as_reference(with_raw(twice, "@@dup@@\":\"@@dup@@", k + "\":" + v[k].dump()));
        cases += 2;
      }
      ojson unknown = base;  // an unknown key
      unknown[at]["zz"] = 1;
      check_same_as_reference(unknown.dump());
      ojson reversed = base;  // the keys in reverse order
      reversed[at] = ojson::object();
      for (auto k = keys.rbegin(); k != keys.rend(); ++k) reversed[at][*k] = v[*k];
      check_same_as_reference(reversed.dump());
      cases += 2;
    } else if (v.is_array() && !v.empty()) {
      ojson fewer = base;  // an element missing
      fewer[at].erase(0);
      check_same_as_reference(fewer.dump());
      ojson more = base;  // an element repeated
      more[at].push_back(v.back());
      check_same_as_reference(more.dump());
      cases += 2;
    }
  }
  const std::string text = base.dump();
  for (size_t n = 0; n < text.size(); n += 7) check_same_as_reference(text.substr(0, n));
  CHECK(cases > 3000);
}

TEST_CASE("core/writer: graph_to_json writes what dumping each op as ordered_json wrote",
          "[core]") {
  const Graph g = sample_graph(2000, 5);
  CHECK(graph_to_json(g) == reference_graph_to_json(g));
  // Strings that need escaping or UTF-8 checks, numbers in every notation, extreme integers.
  Graph odd;
  odd.name = "tab\there \"q\" back\\slash \x01 \x7f caf\xc3\xa9 \xe2\x82\xac";
  const std::vector<double> numbers = {
      0,    -0.0, 0.1,      1.0 / 3, 1e-300, 1e300,  5e-5,          1e15,
      1e16, 1e17, 4.9e-324, 1e-4,    1e-5,   2.5e-7, 123456789.125, 1.7976931348623157e308};
  for (size_t i = 0; i < numbers.size(); ++i) {
    Op o;
    o.id = i == 0 ? INT64_MAX : static_cast<int64_t>(i) - 3;
    o.name = i % 2 ? "n\n" + std::to_string(i) : "\xf0\x9f\x98\x80_" + std::to_string(i);
    o.type = "T\\";
    o.scope = i % 3 ? "" : "s/\"" + std::to_string(i);
    o.outputs.push_back({{INT64_MAX, 0, 1}, DType::boolean, INT64_MIN});
    o.flops = numbers[i];
    o.bytes_accessed = numbers[numbers.size() - 1 - i];
    o.param_bytes = i % 2 ? -1 : 0;
    o.optimizer_bytes = i % 3 ? 0 : static_cast<int64_t>(i) * 7;
    o.param_dtype = i % 4 ? DType::f32 : DType::bf16;
    o.temp_bytes = static_cast<int64_t>(i);
    o.measured.push_back({"k\x1f", numbers[i]});
    o.colocation = i % 2 ? "" : "\xc3\xa9";
    odd.add_op(o);
  }
  odd.add_edge(0, 0, 1, 5);
  odd.add_edge(1, 0, 2, INT64_MIN);
  CHECK(graph_to_json(odd) == reference_graph_to_json(odd));
  Op bad;  // invalid UTF-8: an InputError naming the graph and the op (nlohmann's error before)
  bad.name = "\xff";
  odd.add_op(bad);
  CHECK_THROWS_AS(reference_graph_to_json(odd), nlohmann::json::type_error);
  CHECK_THROWS_WITH(graph_to_json(odd), Catch::Contains("op #16") && Catch::Contains("UTF-8"));
}
