// Strict graph reader (one test per class of bad input, each checking the message), exact
// round-trip of the writer, graph structure (CSR, topological order, cycles).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "core/io.h"

using namespace gdp;

namespace {

std::string op_json(int id, const std::string& name, const std::string& extra = "") {
  return "{\"id\": " + std::to_string(id) + ", \"name\": \"" + name +
         "\", \"type\": \"MatMul\", \"phase\": \"forward\", \"outputs\": [{\"shape\": [2, 3], "
         "\"dtype\": \"f32\", \"bytes\": 24}], \"flops\": 12, \"bytes_accessed\": 48" +
         extra + "}";
}

std::string graph_json(
    const std::string& ops, const std::string& edges,
    const std::string& header = "\"format\": \"gdp-graph\", \"version\": 2, \"name\": \"g\"") {
  return "{" + header + ", \"ops\": [" + ops + "], \"edges\": [" + edges + "]}";
}

const std::string kTwoOps = op_json(0, "a") + ", " + op_json(1, "b");

// Parses and returns the error message ("" when it parsed).
std::string error_of(const std::string& text) {
  try {
    parse_graph_json(text, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

Graph random_graph(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Graph g;
  g.name = "random";
  for (int i = 0; i < n; ++i) {
    Op o;
    o.id = 10 * i + 3;
    o.name = "op" + std::to_string(i);
    o.type = (i % 3 == 0) ? "MatMul" : "Relu";
    o.scope = "layer_" + std::to_string(i / 4);
    o.phase = static_cast<Phase>(i % 3);
    int nout = 1 + static_cast<int>(rng() % 2);
    for (int k = 0; k < nout; ++k) {
      TensorSpec t;
      t.shape = {static_cast<int64_t>(1 + rng() % 64), static_cast<int64_t>(1 + rng() % 64)};
      t.dtype = (rng() % 2) ? DType::f32 : DType::f16;
      t.bytes = t.shape[0] * t.shape[1] * dtype_size_bytes(t.dtype);
      o.outputs.push_back(t);
    }
    o.flops = static_cast<double>(rng() % 1000000) * 1.37;
    o.bytes_accessed = static_cast<double>(rng() % 100000) / 3.0;  // not an integer
    o.param_bytes = (i % 5 == 0) ? static_cast<int64_t>(rng() % 4096) : 0;
    o.optimizer_bytes = (i % 10 == 0) ? 2 * o.param_bytes : (i % 15 == 0 ? 7 : 0);
    if (i % 20 == 0) o.param_dtype = DType::f16;
    o.temp_bytes = (i % 7 == 0) ? 128 : 0;
    if (i % 6 == 0) o.measured.push_back({"V100", 1e-6 * static_cast<double>(rng() % 1000) / 7.0});
    if (i % 4 == 1) o.colocation = "grp" + std::to_string(i / 8);
    g.add_op(o);
  }
  for (int i = 1; i < n; ++i) {
    int fan = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < fan; ++k) {
      int src = static_cast<int>(rng() % i);
      int out = static_cast<int>(rng() % g.op(src).outputs.size());
      int64_t bytes = (rng() % 4 == 0) ? 7 : g.op(src).outputs[out].bytes;
      g.add_edge(src, out, i, bytes);
    }
  }
  g.finalize();
  return g;
}

}  // namespace

TEST_CASE("core/graph json round-trips exactly", "[core]") {
  Graph g = random_graph(300, 42);
  std::string text = graph_to_json(g);
  Graph h = parse_graph_json(text, "mem");
  REQUIRE(graph_to_json(h) == text);
  REQUIRE(h.num_ops() == g.num_ops());
  REQUIRE(h.num_edges() == g.num_edges());
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const Op& a = g.op(i);
    const Op& b = h.op(i);
    CHECK(a.id == b.id);
    CHECK(a.name == b.name);
    CHECK(a.flops == b.flops);  // exact: doubles are written with round-trip precision
    CHECK(a.bytes_accessed == b.bytes_accessed);
    CHECK(a.param_bytes == b.param_bytes);
    CHECK(a.optimizer_bytes == b.optimizer_bytes);
    CHECK(a.param_dtype == b.param_dtype);
    CHECK(a.colocation == b.colocation);
    CHECK(a.measured.size() == b.measured.size());
    CHECK(a.outputs.size() == b.outputs.size());
  }
  for (int64_t e = 0; e < g.num_edges(); ++e) {
    CHECK(g.edges()[e].bytes == h.edges()[e].bytes);
    CHECK(g.edges()[e].src_output == h.edges()[e].src_output);
  }
}

TEST_CASE("core/graph file write is atomic and readable", "[core]") {
  Graph g = random_graph(50, 7);
  auto dir = std::filesystem::temp_directory_path() / "gdp_core_test_io";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "g.json").string();
  write_graph_file(g, path);
  Graph h = read_graph_file(path);
  REQUIRE(graph_to_json(h) == graph_to_json(g));
  for (auto& f : std::filesystem::directory_iterator(dir))
    CHECK(f.path().filename().string().find(".tmp.") == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("core/atomic writes: a device is written through, a directory is refused", "[core]") {
  namespace fs = std::filesystem;
  if (fs::is_character_file("/dev/null")) {
    write_text_file_atomic("/dev/null", "discarded");
    CHECK(fs::is_character_file("/dev/null"));  // not replaced by a regular file
  }
  auto dir = fs::temp_directory_path() / "gdp_core_test_atomic_dir";
  fs::create_directories(dir);
  CHECK_THROWS_WITH(write_text_file_atomic(dir.string(), "x"), Catch::Contains("is a directory"));
  CHECK_THROWS_AS(read_text_file(dir.string()), InputError);
  fs::remove_all(dir);
}

TEST_CASE("core/graph topological order and CSR", "[core]") {
  Graph g = random_graph(500, 3);
  std::vector<int> pos(g.num_ops());
  for (size_t i = 0; i < g.topo_order().size(); ++i) pos[g.topo_order()[i]] = static_cast<int>(i);
  REQUIRE(g.topo_order().size() == static_cast<size_t>(g.num_ops()));
  for (const Edge& e : g.edges()) REQUIRE(pos[e.src] < pos[e.dst]);
  int64_t total = 0;
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    for (int64_t k = g.out_ptr()[i]; k < g.out_ptr()[i + 1]; ++k)
      REQUIRE(g.edges()[g.out_edge_ids()[k]].src == i);
    for (int64_t k = g.in_ptr()[i]; k < g.in_ptr()[i + 1]; ++k)
      REQUIRE(g.edges()[g.in_edge_ids()[k]].dst == i);
    total += g.out_ptr()[i + 1] - g.out_ptr()[i];
  }
  REQUIRE(total == g.num_edges());
}

TEST_CASE("core/graph summary splits flops by phase", "[core]") {
  Graph g = random_graph(90, 11);
  GraphSummary s = g.summary();
  double f = 0, fb = 0;
  int64_t params = 0, opt = 0, count = 0;
  for (const Op& o : g.ops()) {
    f += o.flops;
    if (o.phase == Phase::backward) fb += o.flops;
    params += o.param_bytes;
    opt += o.optimizer_bytes;
    count += o.param_bytes / dtype_size_bytes(o.param_dtype);
  }
  CHECK(s.flops == Approx(f));
  CHECK(s.flops_backward == Approx(fb));
  CHECK(s.flops_forward + s.flops_backward + s.flops_update == Approx(f));
  CHECK(s.parameter_bytes == params);
  CHECK(s.optimizer_bytes == opt);
  CHECK(opt > 0);
  CHECK(s.parameters == count);
  CHECK(s.ops == 90);
  CHECK(s.ops_forward + s.ops_backward + s.ops_update == 90);
  CHECK(s.depth >= 2);
}

TEST_CASE("core/reader accepts a minimal valid graph", "[core]") {
  Graph g = parse_graph_json(graph_json(kTwoOps, "{\"src\": 0, \"dst\": 1}"), "ok.json");
  CHECK(g.num_ops() == 2);
  CHECK(g.edges()[0].bytes == 24);  // defaults to the tensor's bytes
}

TEST_CASE("core/reader rejects invalid JSON syntax", "[core]") {
  std::string m = error_of("{\"format\": \"gdp-graph\", ");
  CHECK_THAT(m, Catch::Contains("bad.json") && Catch::Contains("invalid JSON"));
}

TEST_CASE("core/reader rejects a wrong format or version", "[core]") {
  CHECK_THAT(
      error_of(graph_json(kTwoOps, "", "\"format\": \"other\", \"version\": 1, \"name\": \"g\"")),
      Catch::Contains("format") && Catch::Contains("gdp-graph"));
  CHECK_THAT(error_of(graph_json(kTwoOps, "",
                                 "\"format\": \"gdp-graph\", \"version\": 9, \"name\": \"g\"")),
             Catch::Contains("version") && Catch::Contains("unsupported version 9") &&
                 Catch::Contains("versions 1 and 2"));
  CHECK_THAT(
      error_of(graph_json(kTwoOps, "", "\"format\": \"other\", \"version\": 9, \"name\": \"g\"")),
      Catch::Contains("format") && Catch::Contains("gdp-graph"));
  CHECK_THAT(error_of(graph_json(kTwoOps, "", "\"format\": \"gdp-graph\", \"name\": \"g\"")),
             Catch::Contains("version") && Catch::Contains("missing"));
}

TEST_CASE("core/reader rejects unknown keys", "[core]") {
  CHECK_THAT(error_of(graph_json(op_json(0, "a", ", \"flop\": 3"), "")),
             Catch::Contains("bad.json") && Catch::Contains("ops[0].flop") &&
                 Catch::Contains("unknown key"));
  CHECK_THAT(
      error_of(graph_json(
          kTwoOps, "", "\"format\": \"gdp-graph\", \"version\": 1, \"name\": \"g\", \"extra\": 1")),
      Catch::Contains("extra") && Catch::Contains("unknown key"));
}

TEST_CASE("core/reader rejects missing required keys", "[core]") {
  std::string op =
      "{\"id\": 0, \"name\": \"a\", \"type\": \"X\", \"phase\": \"forward\", \"outputs\": [], "
      "\"flops\": 1}";
  CHECK_THAT(error_of(graph_json(op, "")),
             Catch::Contains("ops[0].bytes_accessed") && Catch::Contains("missing required key"));
  CHECK_THAT(error_of("{\"format\": \"gdp-graph\", \"version\": 1, \"name\": \"g\", \"ops\": [" +
                      kTwoOps + "]}"),
             Catch::Contains("edges") && Catch::Contains("missing"));
}

TEST_CASE("core/reader rejects wrong types", "[core]") {
  std::string op = op_json(0, "a");
  op.replace(op.find("\"flops\": 12"), 11, "\"flops\": \"12\"");
  CHECK_THAT(error_of(graph_json(op, "")),
             Catch::Contains("ops[0].flops") && Catch::Contains("expected a number"));
  std::string op2 = op_json(0, "a");
  op2.replace(op2.find("\"id\": 0"), 7, "\"id\": 0.5");
  CHECK_THAT(error_of(graph_json(op2, "")),
             Catch::Contains("ops[0].id") && Catch::Contains("expected an integer"));
  CHECK_THAT(error_of(graph_json(kTwoOps, "{\"src\": \"a\", \"dst\": 1}")),
             Catch::Contains("edges[0].src") && Catch::Contains("expected an integer"));
  std::string op3 = op_json(0, "a");
  op3.replace(op3.find("\"phase\": \"forward\""), 18, "\"phase\": \"sideways\"");
  CHECK_THAT(error_of(graph_json(op3, "")),
             Catch::Contains("ops[0].phase") && Catch::Contains("backward"));
}

TEST_CASE("core/reader rejects negative, NaN and infinite numbers", "[core]") {
  std::string neg = op_json(0, "a");
  neg.replace(neg.find("\"flops\": 12"), 11, "\"flops\": -1");
  CHECK_THAT(error_of(graph_json(neg, "")),
             Catch::Contains("ops[0].flops") && Catch::Contains(">= 0"));
  std::string inf = op_json(0, "a");
  inf.replace(inf.find("\"flops\": 12"), 11, "\"flops\": 1e999");
  CHECK_THAT(error_of(graph_json(inf, "")),
             Catch::Contains("bad.json") && Catch::Contains("overflow"));
  std::string nan = op_json(0, "a");
  nan.replace(nan.find("\"flops\": 12"), 11, "\"flops\": NaN");
  CHECK_THAT(error_of(graph_json(nan, "")), Catch::Contains("invalid JSON"));
  std::string negb = op_json(0, "a");
  negb.replace(negb.find("\"bytes\": 24"), 11, "\"bytes\": -24");
  CHECK_THAT(error_of(graph_json(negb, "")), Catch::Contains("ops[0].outputs[0].bytes"));
}

TEST_CASE("core/reader rejects duplicate ids and names", "[core]") {
  CHECK_THAT(error_of(graph_json(op_json(0, "a") + ", " + op_json(0, "b"), "")),
             Catch::Contains("ops[1].id") && Catch::Contains("duplicate op id 0"));
  CHECK_THAT(error_of(graph_json(op_json(0, "a") + ", " + op_json(1, "a"), "")),
             Catch::Contains("ops[1].name") && Catch::Contains("duplicate op name"));
}

TEST_CASE("core/reader rejects edges to missing ops and bad outputs", "[core]") {
  CHECK_THAT(error_of(graph_json(kTwoOps, "{\"src\": 0, \"dst\": 5}")),
             Catch::Contains("edges[0].dst") && Catch::Contains("missing op id 5"));
  CHECK_THAT(error_of(graph_json(kTwoOps, "{\"src\": 0, \"dst\": 1, \"output\": 3}")),
             Catch::Contains("edges[0].output") && Catch::Contains("has 1 outputs"));
  CHECK_THAT(error_of(graph_json(kTwoOps, "{\"src\": 1, \"dst\": 1}")),
             Catch::Contains("self-loop"));
}

TEST_CASE("core/reader rejects cycles", "[core]") {
  std::string ops = op_json(0, "a") + ", " + op_json(1, "b") + ", " + op_json(2, "c");
  std::string m = error_of(graph_json(
      ops, "{\"src\": 0, \"dst\": 1}, {\"src\": 1, \"dst\": 2}, {\"src\": 2, \"dst\": 1}"));
  CHECK_THAT(m, Catch::Contains("bad.json") && Catch::Contains("cycle"));
}

TEST_CASE("core/reader rejects empty graphs and empty files", "[core]") {
  CHECK_THAT(error_of(graph_json("", "")), Catch::Contains("ops") && Catch::Contains("empty"));
  auto path = std::filesystem::temp_directory_path() / "gdp_empty_graph.json";
  { std::ofstream(path) << "  \n"; }
  try {
    read_graph_file(path.string());
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("empty"));
  }
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(read_graph_file("/nonexistent/g.json"),
                    Catch::Contains("/nonexistent/g.json") && Catch::Contains("cannot open"));
}

TEST_CASE("core/graph finalize rejects cycles built in code", "[core]") {
  Graph g;
  g.name = "cyc";
  for (int i = 0; i < 3; ++i) {
    Op o;
    o.id = i;
    o.name = "n" + std::to_string(i);
    o.outputs.push_back({{1}, DType::f32, 4});
    g.add_op(o);
  }
  g.add_edge(0, 0, 1, 4);
  g.add_edge(1, 0, 2, 4);
  g.add_edge(2, 0, 0, 4);
  CHECK_THROWS_WITH(g.finalize(), Catch::Contains("cycle"));
}

TEST_CASE("core/reader rejects repeated keys and out-of-range sizes", "[core]") {
  std::string dup = op_json(0, "a");
  dup.replace(dup.find("\"flops\": 12"), 11, "\"flops\": 12, \"flops\": 13");
  CHECK_THAT(error_of(graph_json(dup, "")),
             Catch::Contains("bad.json") && Catch::Contains("\"flops\" appears twice"));
  std::string huge = op_json(0, "a", ", \"param_bytes\": 6000000000000000000");
  CHECK_THAT(error_of(graph_json(huge, "")),
             Catch::Contains("ops[0].param_bytes") && Catch::Contains("expected an integer in"));
  std::string slow =
      op_json(0, "a", ", \"measured\": [{\"device_kind\": \"V100\", \"time_s\": 1e308}]");
  CHECK_THAT(error_of(graph_json(slow, "")),
             Catch::Contains("ops[0].measured[0].time_s") && Catch::Contains("<="));
}

TEST_CASE("core/graph json keeps weights and optimizer state apart", "[core]") {
  std::string ops = op_json(0, "w", ", \"param_bytes\": 4096, \"optimizer_bytes\": 8192") + ", " +
                    op_json(1, "h", ", \"param_bytes\": 100, \"param_dtype\": \"f16\"") + ", " +
                    op_json(2, "s", ", \"optimizer_bytes\": 12");
  Graph g = parse_graph_json(graph_json(ops, "{\"src\": 0, \"dst\": 1}"), "split.json");
  CHECK(g.op(0).param_bytes == 4096);
  CHECK(g.op(0).optimizer_bytes == 8192);
  CHECK(g.op(0).resident_bytes() == 4096 + 8192);
  CHECK(g.op(0).parameters() == 1024);
  CHECK(g.op(1).param_dtype == DType::f16);
  CHECK(g.op(1).parameters() == 50);
  CHECK(g.op(2).param_bytes == 0);
  CHECK(g.op(2).optimizer_bytes == 12);
  GraphSummary s = g.summary();
  CHECK(s.parameters == 1024 + 50);
  CHECK(s.parameter_bytes == 4096 + 100);
  CHECK(s.optimizer_bytes == 8192 + 12);
  // Written as version 2 with both keys; f32 (the default dtype) and zeros are omitted.
  std::string text = graph_to_json(g);
  CHECK_THAT(text, Catch::Contains("\"version\":2") &&
                       Catch::Contains("\"param_bytes\":4096,\"optimizer_bytes\":8192") &&
                       Catch::Contains("\"param_dtype\":\"f16\""));
  CHECK(text.find("\"param_dtype\":\"f32\"") == std::string::npos);
  CHECK(graph_to_json(parse_graph_json(text, "mem")) == text);
  // Strict: the new keys' values are checked like the others.
  CHECK_THAT(error_of(graph_json(op_json(0, "a", ", \"optimizer_bytes\": -1"), "")),
             Catch::Contains("ops[0].optimizer_bytes"));
  CHECK_THAT(
      error_of(graph_json(op_json(0, "a", ", \"optimizer_bytes\": 6000000000000000000"), "")),
      Catch::Contains("ops[0].optimizer_bytes") && Catch::Contains("expected an integer in"));
  CHECK_THAT(error_of(graph_json(op_json(0, "a", ", \"param_dtype\": \"f17\""), "")),
             Catch::Contains("ops[0].param_dtype") && Catch::Contains("f17"));
}

TEST_CASE("core/graph json version 1: param_bytes was everything resident", "[core]") {
  const std::string v1 = "\"format\": \"gdp-graph\", \"version\": 1, \"name\": \"old\"";
  // What `gdp gen` wrote in version 1: a VariableV2 with 3 x its weights (weights + Adam m, v).
  std::string var =
      "{\"id\": 0, \"name\": \"w\", \"type\": \"VariableV2\", \"phase\": \"forward\", "
      "\"outputs\": [{\"shape\": [8, 4], \"dtype\": \"f32\", \"bytes\": 128}], \"flops\": 0, "
      "\"bytes_accessed\": 128, \"param_bytes\": 384, \"colocation\": \"w\"}";
  // What `gdp convert` wrote for a PipeDream layer: the weights only.
  std::string layer = op_json(1, "node1/forward", ", \"param_bytes\": 440");
  Graph g =
      parse_graph_json(graph_json(var + ", " + layer, "{\"src\": 0, \"dst\": 1}", v1), "old.json");
  CHECK(g.op(0).param_bytes == 128);
  CHECK(g.op(0).optimizer_bytes == 256);
  CHECK(g.op(0).resident_bytes() == 384);  // simulated memory unchanged
  CHECK(g.op(1).param_bytes == 440);
  CHECK(g.op(1).optimizer_bytes == 0);
  CHECK(g.summary().parameters == 32 + 110);
  // Rewritten as version 2.
  std::string text = graph_to_json(g);
  CHECK_THAT(text, Catch::Contains("\"version\":2") &&
                       Catch::Contains("\"param_bytes\":128,\"optimizer_bytes\":256"));
  // A VariableV2 whose param_bytes is not 3 x its output: kept as weights.
  std::string odd = var;
  odd.replace(odd.find("\"param_bytes\": 384"), 18, "\"param_bytes\": 200");
  Graph h = parse_graph_json(graph_json(odd, "", v1), "old.json");
  CHECK(h.op(0).param_bytes == 200);
  CHECK(h.op(0).optimizer_bytes == 0);
  // Version 1 has no optimizer_bytes or param_dtype key.
  CHECK_THAT(error_of(graph_json(op_json(0, "a", ", \"optimizer_bytes\": 8"), "", v1)),
             Catch::Contains("ops[0].optimizer_bytes") && Catch::Contains("unknown key"));
  CHECK_THAT(error_of(graph_json(op_json(0, "a", ", \"param_dtype\": \"f16\""), "", v1)),
             Catch::Contains("ops[0].param_dtype") && Catch::Contains("unknown key"));
}

namespace {

Op sized_op(int i, int64_t param_bytes, int64_t output_bytes) {
  Op o;
  o.id = i;
  o.name = "op" + std::to_string(i);
  o.param_bytes = param_bytes;
  o.outputs.push_back({{1}, DType::f32, output_bytes});
  return o;
}

std::string finalize_error(Graph& g) {
  try {
    g.finalize();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("core/graph finalize bounds the memory sums: 8,200 ops of 2^50 weight bytes", "[core]") {
  // Each op is within the per-field bound (2^50), the sum (2^63 + ...) overflowed int64.
  Graph g;
  g.name = "huge";
  for (int i = 0; i < 8200; ++i) g.add_op(sized_op(i, int64_t{1} << 50, 4));
  std::string m = finalize_error(g);
  CHECK_THAT(m, Catch::Contains("graph 'huge'") && Catch::Contains("param_bytes") &&
                    Catch::Contains("expected a total of at most 1152921504606846976"));
  // 1,000 of them (2^60 - ...) pass, and the summary is exact.
  Graph ok;
  ok.name = "big";
  for (int i = 0; i < 1000; ++i) ok.add_op(sized_op(i, int64_t{1} << 50, 4));
  ok.finalize();
  CHECK(ok.summary().parameter_bytes == 1000 * (int64_t{1} << 50));
  CHECK(ok.summary().parameters == 250 * (int64_t{1} << 50));
  // Through the JSON reader: an InputError naming the file and the graph.
  std::string ops;
  for (int i = 0; i < 1100; ++i)
    ops += (i ? ", " : "") + op_json(i, "o" + std::to_string(i),
                                     ", \"param_bytes\": 1125899906842624, "
                                     "\"optimizer_bytes\": 1125899906842624");
  CHECK_THAT(error_of(graph_json(ops, "")),
             Catch::Contains("bad.json") && Catch::Contains("graph 'g'") &&
                 Catch::Contains("optimizer_bytes") && Catch::Contains("2^60"));
}

TEST_CASE("core/graph finalize bounds the memory sums: many outputs, temporaries, edges",
          "[core]") {
  // One op with 2,000 outputs of 2^50 bytes.
  Graph g;
  g.name = "wide";
  Op o = sized_op(0, 0, int64_t{1} << 50);
  for (int k = 1; k < 2000; ++k) o.outputs.push_back({{1}, DType::f32, int64_t{1} << 50});
  g.add_op(o);
  CHECK_THAT(finalize_error(g), Catch::Contains("graph 'wide'") && Catch::Contains("outputs[") &&
                                    Catch::Contains("expected a total of at most"));
  // Temporaries count too.
  Graph t;
  t.name = "temps";
  for (int i = 0; i < 1500; ++i) {
    Op a = sized_op(i, 0, 0);
    a.temp_bytes = int64_t{1} << 50;
    t.add_op(a);
  }
  CHECK_THAT(finalize_error(t), Catch::Contains("temp_bytes"));
  // A small tensor sent over 3,000 edges declared at 2^50 bytes each.
  Graph e;
  e.name = "fanout";
  e.add_op(sized_op(0, 0, 4));
  for (int i = 1; i <= 3000; ++i) {
    e.add_op(sized_op(i, 0, 4));
    e.add_edge(0, 0, i, int64_t{1} << 50);
  }
  CHECK_THAT(finalize_error(e), Catch::Contains("graph 'fanout'") &&
                                    Catch::Contains("edges carry") && Catch::Contains("op 'op0'"));
  // Negative sizes built in code are named.
  Graph n;
  n.name = "neg";
  Op a = sized_op(0, 0, 4);
  a.optimizer_bytes = -5;
  n.add_op(a);
  CHECK_THAT(finalize_error(n),
             Catch::Contains("op 'op0'") && Catch::Contains("negative optimizer_bytes"));
}

TEST_CASE("core/graph writer names an op whose text is not UTF-8", "[core]") {
  Graph g;
  g.name = "g";
  Op o = sized_op(0, 0, 4);
  o.type = "Conv\xff";
  g.add_op(o);
  g.finalize();
  CHECK_THROWS_AS(graph_to_json(g), InputError);
  CHECK_THROWS_WITH(graph_to_json(g), Catch::Contains("graph 'g'") && Catch::Contains("op #0") &&
                                          Catch::Contains("UTF-8"));
}
