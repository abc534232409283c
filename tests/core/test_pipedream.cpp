// PipeDream import of every shipped profile: node/edge counts and total forward/backward time
// preserved (counted independently from the raw text), plus the importer's strictness.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "test_paths.h"

using namespace gdp;

TEST_CASE("core/pipedream import of every shared profile", "[core]") {
  GDP_REQUIRE_INPUT(test::shared_available(),
                    "the PipeDream profiles are missing: " << test::pipedream_profiles_dir());
  const std::filesystem::path root = test::pipedream_profiles_dir();
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.path().extension() == ".txt" && e.path().filename() != "LICENSE.txt")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 14);
  const std::regex node_re(
      R"(^node\d+ -- .* -- forward_compute_time=([0-9.]+), backward_compute_time=([0-9.]+),)");
  for (const auto& f : files) {
    INFO(f.string());
    std::ifstream in(f);
    std::string line;
    int64_t nodes = 0, edges = 0;
    double fwd_ms = 0, bwd_ms = 0, params = 0;
    while (std::getline(in, line)) {
      std::smatch m;
      if (line.rfind("\t", 0) == 0)
        ++edges;
      else if (std::regex_search(line, m, node_re)) {
        ++nodes;
        fwd_ms += std::stod(m[1]);
        bwd_ms += std::stod(m[2]);
        auto k = line.find("parameter_size=");
        params += std::stod(line.substr(k + 15));
      }
    }
    Graph g = read_graph_file(f.string());
    CHECK(g.num_ops() == 2 * nodes);
    CHECK(g.num_edges() == 2 * edges + nodes);
    double gf = 0, gb = 0;
    for (const Op& o : g.ops()) {
      REQUIRE(o.measured.size() == 1);
      (o.phase == Phase::forward ? gf : gb) += o.measured[0].time_s;
    }
    CHECK(gf == Approx(fwd_ms * 1e-3).epsilon(1e-9));
    CHECK(gb == Approx(bwd_ms * 1e-3).epsilon(1e-9));
    CHECK(static_cast<double>(g.summary().parameter_bytes) == Approx(params).epsilon(1e-9));
    CHECK(g.summary().optimizer_bytes == 2 * g.summary().parameter_bytes);  // Adam by default
    CHECK(g.summary().parameters == g.summary().parameter_bytes / 4);
    // Round trip through the native format.
    Graph h = parse_graph_json(graph_to_json(g), "mem");
    CHECK(graph_to_json(h) == graph_to_json(g));
  }
}

TEST_CASE("core/pipedream mapping: backward mirrors forward, activation kept alive", "[core]") {
  const std::string text =
      "node1 -- Input0 -- forward_compute_time=0.000, backward_compute_time=0.000, "
      "activation_size=400.0, parameter_size=0.000\n"
      "node2 -- Linear(in_features=10, out_features=10) -- forward_compute_time=1.5, "
      "backward_compute_time=3.0, activation_size=[400.0; 40.0], parameter_size=440.000 -- "
      "stage_id=0\n"
      "node3 -- ReLU() -- forward_compute_time=0.25, backward_compute_time=0.5, "
      "activation_size=440.0, parameter_size=0.000\n"
      "\tnode1 -- node2\n"
      "\tnode2 -- node3\n";
  Graph g = parse_pipedream(text, "mini/graph.txt");
  CHECK(g.name == "mini");
  REQUIRE(g.num_ops() == 6);
  int32_t f2 = g.find_op("node2/forward"), b2 = g.find_op("node2/backward"),
          b3 = g.find_op("node3/backward"), b1 = g.find_op("node1/backward");
  REQUIRE(f2 >= 0);
  CHECK(g.op(f2).outputs[0].bytes == 440);  // list summed
  CHECK(g.op(f2).param_bytes == 440);
  CHECK(g.op(f2).optimizer_bytes == 880);  // Adam: m and v beside the weights, on the forward op
  CHECK(g.op(b2).param_bytes == 0);
  CHECK(g.op(b2).optimizer_bytes == 0);
  CHECK(g.op(f2).type == "Linear");
  CHECK(g.op(f2).colocation == g.op(b2).colocation);
  CHECK(g.op(f2).measured[0].time_s == Approx(1.5e-3));
  bool keeps = false, mirror = false, grad_to_input = false;
  for (const Edge& e : g.edges()) {
    if (e.src == f2 && e.dst == b2) keeps = true;
    if (e.src == b3 && e.dst == b2) mirror = e.bytes == 440;
    if (e.src == b2 && e.dst == b1) grad_to_input = e.bytes == 400;
  }
  CHECK(keeps);
  CHECK(mirror);
  CHECK(grad_to_input);
}

TEST_CASE("core/pipedream importer rejects malformed input", "[core]") {
  auto err = [](const std::string& t) {
    try {
      parse_pipedream(t, "p.txt");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(err("node1 -- X -- forward_compute_time=abc, backward_compute_time=0, "
                 "activation_size=1, parameter_size=0\n"),
             Catch::Contains("p.txt:1") && Catch::Contains("forward_compute_time"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, activation_size=1, parameter_size=0\n"),
             Catch::Contains("missing field backward_compute_time"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, backward_compute_time=0, "
                 "activation_size=1, parameter_size=0\n\tnode1 -- node7\n"),
             Catch::Contains("p.txt:2") && Catch::Contains("node7"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=-1, backward_compute_time=0, "
                 "activation_size=1, parameter_size=0\n"),
             Catch::Contains("expected a decimal number in"));
  const std::string node =
      "node1 -- X -- forward_compute_time=1, backward_compute_time=0, activation_size=1, "
      "parameter_size=0\n";
  const std::string node2 =
      "node2 -- X -- forward_compute_time=1, backward_compute_time=0, activation_size=1, "
      "parameter_size=0\n";
  CHECK_THAT(err(node + node2 + "\tnode1 -- node2\n\tnode1 -- node2\n"),
             Catch::Contains("p.txt:4") && Catch::Contains("duplicate edge"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, forward_compute_time=2, "
                 "backward_compute_time=0, activation_size=1, parameter_size=0\n"),
             Catch::Contains("appears twice"));
  CHECK_THAT(err("node+1 -- X -- forward_compute_time=1, backward_compute_time=0, "
                 "activation_size=1, parameter_size=0\n"),
             Catch::Contains("nodeN"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, backward_compute_time=0, "
                 "activation_size=[1.0;], parameter_size=0\n"),
             Catch::Contains("empty list item"));
  CHECK_THAT(err("node1 -- X -- forward_compute_time=1, backward_compute_time=0, "
                 "activation_size=1e30, parameter_size=0\n"),
             Catch::Contains("activation_size"));
}

namespace {

std::string pd_error(const std::string& text) {
  try {
    parse_pipedream(text, "p.txt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string node_line(int n, const std::string& act = "4.0", const std::string& param = "0.000",
                      const std::string& desc = "X", const std::string& fwd = "1") {
  return "node" + std::to_string(n) + " -- " + desc + " -- forward_compute_time=" + fwd +
         ", backward_compute_time=0, activation_size=" + act + ", parameter_size=" + param;
}

}  // namespace

TEST_CASE("core/pipedream import options: the optimizer state beside the weights", "[core]") {
  const std::string text =
      node_line(1) + "\n" + node_line(2, "4.0", "440.000") + "\n\tnode1 -- node2\n";
  struct Case {
    Optimizer opt;
    int64_t bytes;
  };
  for (Case c :
       {Case{Optimizer::adam, 880}, Case{Optimizer::momentum, 440}, Case{Optimizer::sgd, 0}}) {
    INFO(optimizer_name(c.opt));
    PipeDreamOptions o;
    o.optimizer = c.opt;
    Graph g = parse_pipedream(text, "p.txt", o);
    const Op& f = g.op(g.find_op("node2/forward"));
    CHECK(f.param_bytes == 440);
    CHECK(f.optimizer_bytes == c.bytes);
    GraphSummary s = g.summary();
    CHECK(s.parameters == 110);
    CHECK(s.parameter_bytes == 440);
    CHECK(s.optimizer_bytes == c.bytes);
  }
  // The default is Adam, as read_graph_file uses.
  CHECK(parse_pipedream(text, "p.txt").summary().optimizer_bytes == 880);
  Optimizer o;
  CHECK(parse_optimizer("momentum", &o));
  CHECK(o == Optimizer::momentum);
  CHECK_FALSE(parse_optimizer("adagrad", &o));
  // An optimizer state above the per-field bound (2^50 bytes) is named.
  CHECK_THAT(pd_error(node_line(1, "4.0", "1e15")), Catch::Contains("p.txt:1") &&
                                                        Catch::Contains("parameter_size") &&
                                                        Catch::Contains("adam"));
}

TEST_CASE("core/pipedream importer accepts CRLF line ends and trailing blanks", "[core]") {
  const std::string lf = node_line(1, "400.0") + "\n" + node_line(2, "[400.0; 40.0]", "440.000") +
                         " -- stage_id=0\n" + node_line(3, "440.0") +
                         "\n\tnode1 -- node2\n\tnode2 -- node3\n";
  std::string crlf, blanks;
  for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  for (char c : lf) blanks += c == '\n' ? std::string("  \t \n") : std::string(1, c);
  std::string both;
  for (char c : lf) both += c == '\n' ? std::string("   \r\n") : std::string(1, c);
  const std::string want = graph_to_json(parse_pipedream(lf, "p.txt"));
  CHECK(graph_to_json(parse_pipedream(crlf, "p.txt")) == want);
  CHECK(graph_to_json(parse_pipedream(blanks, "p.txt")) == want);
  CHECK(graph_to_json(parse_pipedream(both, "p.txt")) == want);
  // The report's case: "parameter_size=0.000  " at a line's end.
  CHECK_NOTHROW(parse_pipedream(node_line(1) + "  \n", "p.txt"));
  // Blank lines of spaces, tabs or CR only are skipped.
  CHECK(parse_pipedream("\r\n \t\r\n" + node_line(1) + "\r\n", "p.txt").num_ops() == 2);
}

TEST_CASE("core/pipedream importer rejects hex, inf, nan, NUL and invalid UTF-8 with file:line",
          "[core]") {
  const std::string n1 = node_line(1) + "\n";
  for (const char* v : {"0x1p3", "0X10", "inf", "INF", "infinity", "nan", "NaN", "1e", ".", "1..2",
                        "1e+", "--1", "+-1", "1 2", "1f"}) {
    INFO(v);
    CHECK_THAT(pd_error(n1 + node_line(2, "4.0", "0", "X", v) + "\n"),
               Catch::Contains("p.txt:2") && Catch::Contains("forward_compute_time") &&
                   Catch::Contains("expected a decimal number"));
    CHECK_THAT(pd_error(n1 + node_line(2, v) + "\n"),
               Catch::Contains("p.txt:2") && Catch::Contains("activation_size"));
    CHECK_THAT(pd_error(n1 + node_line(2, std::string("[1.0; ") + v + "]") + "\n"),
               Catch::Contains("p.txt:2") && Catch::Contains("activation_size"));
  }
  // Decimal spellings PipeDream may write are fine.
  for (const char* v : {"0", "0.000", "12.", ".5", "1e3", "1.5E+2", "2e-3", "+1"}) {
    INFO(v);
    CHECK_NOTHROW(parse_pipedream(node_line(1, v, v, "X", v), "p.txt"));
  }
  // A NUL byte in a number (strtod stopped there and took the prefix), in a description.
  std::string nul_num = n1 +
                        node_line(2, "4.0", "0", "X",
                                  std::string("1\0"
                                              "5",
                                              3)) +
                        "\n";
  CHECK_THAT(pd_error(nul_num), Catch::Contains("p.txt:2") &&
                                    Catch::Contains("forward_compute_time") &&
                                    Catch::Contains("\\x00"));
  std::string nul_desc = n1 + node_line(2, "4.0", "0", std::string("Lin\0ear", 7)) + "\n";
  CHECK_THAT(pd_error(nul_desc), Catch::Contains("p.txt:2") &&
                                     Catch::Contains("layer description") &&
                                     Catch::Contains("NUL byte at byte 4"));
  // Invalid UTF-8 in a description: a lone continuation byte, a truncated sequence, an overlong
  // form, a surrogate. The message shows the bytes escaped.
  for (const std::string& d : {std::string("Conv\x80"), std::string("Conv\xe2\x82"),
                               std::string("\xc0\xafX"), std::string("\xed\xa0\x80X")}) {
    CHECK_THAT(pd_error(n1 + node_line(2, "4.0", "0", d) + "\n"),
               Catch::Contains("p.txt:2") && Catch::Contains("layer description") &&
                   Catch::Contains("invalid UTF-8") && Catch::Contains("\\x"));
  }
  // Valid UTF-8 passes and is kept.
  Graph g = parse_pipedream(node_line(1, "4.0", "0",
                                      "Gr\xc3\xb6\xc3\x9f"
                                      "e()"),
                            "p.txt");
  CHECK(g.op(0).type ==
        "Gr\xc3\xb6\xc3\x9f"
        "e");
  // A NUL byte or invalid UTF-8 elsewhere (node name, key) is rejected, escaped.
  CHECK_THAT(pd_error(std::string("node1\0 -- X -- forward_compute_time=1", 37)),
             Catch::Contains("p.txt:1") && Catch::Contains("\\x00"));
  CHECK_THAT(pd_error(n1 + std::string("\tnode1 -- node\xff\n")),
             Catch::Contains("p.txt:2") && Catch::Contains("nodeN") && Catch::Contains("\\xff"));
  // A graph name (from the path) that is not UTF-8.
  CHECK_THROWS_WITH(
      parse_pipedream(node_line(1), "dir/na\xffme.txt"),
      Catch::Contains("graph name") && Catch::Contains("\\xff") && Catch::Contains("UTF-8"));
  // An unknown field is named.
  CHECK_THAT(pd_error(node_line(1) + ", stage=3\n"),
             Catch::Contains("p.txt:1") && Catch::Contains("unknown field 'stage'"));
  // Times above 10^9 ms (the graph reader's 10^6 s) are rejected at import.
  CHECK_THAT(pd_error(node_line(1, "4.0", "0", "X", "2e9")),
             Catch::Contains("forward_compute_time") && Catch::Contains("[0, 1e+09]"));
}

TEST_CASE("core/pipedream importer checks sums: lists and the whole graph", "[core]") {
  // Each item within the per-value bound, the list's sum not: the report's 9e18.
  std::string list = "[";
  for (int k = 0; k < 9000; ++k) list += (k ? "; " : "") + std::string("1e15");
  list += "]";
  CHECK_THAT(pd_error(node_line(1, list)), Catch::Contains("p.txt:1") &&
                                               Catch::Contains("activation_size") &&
                                               Catch::Contains("the list sums to 9e+18") &&
                                               Catch::Contains("expected a sum in [0, 1e+15]"));
  CHECK_THAT(pd_error(node_line(1, "4.0", "[6e14; 6e14]")),
             Catch::Contains("parameter_size") && Catch::Contains("sums to 1.2e+15"));
  // Every layer within bounds, the graph not: 1,200 layers of 1e15 activation bytes pass each
  // check and exceed 2^60 bytes together.
  std::string text;
  for (int n = 1; n <= 1200; ++n) text += node_line(n, "1e15") + "\n";
  CHECK_THAT(pd_error(text), Catch::Contains("p.txt") && Catch::Contains("graph 'p'") &&
                                 Catch::Contains("expected a total of at most"));
}

TEST_CASE("core/pipedream import is linear: 100,000 layers feeding one", "[core]") {
  // Was quadratic (std::find over the sink's predecessors for the duplicate check and for
  // each edge's gradient slot). No timing assertion: the size keeps a quadratic importer
  // far from ctest's timeout while this one takes well under a second.
  const int n = 100000;
  std::string text;
  text.reserve(static_cast<size_t>(n) * 140);
  for (int k = 1; k <= n + 1; ++k) text += node_line(k, "4.0", k % 2 ? "8.0" : "0") + "\n";
  for (int k = 1; k <= n; ++k)
    text += "\tnode" + std::to_string(k) + " -- node" + std::to_string(n + 1) + "\n";
  Graph g = parse_pipedream(text, "fanin.txt");
  CHECK(g.num_ops() == 2 * (n + 1));
  CHECK(g.num_edges() == 2 * n + (n + 1));
  const int32_t sink_bwd = g.find_op("node" + std::to_string(n + 1) + "/backward");
  CHECK(g.op(sink_bwd).outputs.size() == static_cast<size_t>(n));
  // Edges: n + 1 (forward -> backward of each layer), then per link its forward edge and its
  // gradient edge; link j's gradient leaves the sink's backward op from output j.
  int64_t wrong = 0;
  for (int64_t j = 0; j < n; ++j) {
    const Edge& ed = g.edges()[n + 1 + 2 * j + 1];
    if (ed.src != sink_bwd || ed.src_output != j || ed.dst != n + 1 + j) ++wrong;
  }
  CHECK(wrong == 0);
  // A duplicate among them is still found, on its line.
  text += "\tnode7 -- node" + std::to_string(n + 1) + "\n";
  CHECK_THROWS_WITH(parse_pipedream(text, "fanin.txt"),
                    Catch::Contains("fanin.txt:" + std::to_string(2 * n + 2)) &&
                        Catch::Contains("duplicate edge node7"));
}
