// gdp_fuzz_seeds OUTDIR: writes the fuzzers' seed corpus from the generators, so that no large
// seed file is committed: OUTDIR/graph (the first ops of every generated model and random
// family, as gdp-graph JSON), OUTDIR/pipedream (profiles made from their forward ops),
// OUTDIR/cluster (presets, as JSON and as preset strings) and OUTDIR/placement (placements of
// placement_target_graph()). Deterministic; every seed is a few KB and is read back by its
// reader. `gdp_fuzz_seeds --check DIR...` reads the seeds under DIR (the committed fuzz/seeds).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/io.h"
#include "datasets/random_families.h"
#include "datasets/registry.h"
#include "fuzz/fuzz_common.h"

namespace gdp::fuzz {
namespace {

namespace fs = std::filesystem;

// The first `n` ops of g in topological order with the edges between them: a valid graph of
// the generator's op names, types, shapes and costs, small enough to fuzz quickly.
Graph first_ops(const Graph& g, int32_t n) {
  n = std::min(n, g.num_ops());
  std::vector<int32_t> index(g.num_ops(), -1);
  Graph sub;
  sub.name = g.name;
  for (int32_t k = 0; k < n; ++k) {
    const int32_t i = g.topo_order()[k];
    index[i] = sub.add_op(g.op(i));
  }
  for (const Edge& e : g.edges())
    if (index[e.src] >= 0 && index[e.dst] >= 0)
      sub.add_edge(index[e.src], e.src_output, index[e.dst], e.bytes);
  sub.finalize();
  return sub;
}

// A PipeDream profile of g's forward ops: node numbers 3k+1 (not dense), sizes from the
// outputs (a list where an op has several), times from the flops (1 ms per Mflop), every other
// layer with a stage_id, and the forward edges between them (each pair once).
std::string pipedream_of(const Graph& g) {
  std::vector<int32_t> node(g.num_ops(), -1);
  std::string nodes, edges;
  int32_t layers = 0;
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.op(i);
    if (op.phase != Phase::forward) continue;
    node[i] = 3 * layers + 1;
    std::string sizes;
    if (op.outputs.size() <= 1) {
      sizes = std::to_string(op.outputs.empty() ? 0 : op.outputs[0].bytes) + ".0";
    } else {
      sizes = "[";
      for (size_t k = 0; k < op.outputs.size(); ++k)
        sizes += (k ? "; " : "") + std::to_string(op.outputs[k].bytes) + ".0";
      sizes += "]";
    }
    char times[96];
    std::snprintf(times, sizeof times, "forward_compute_time=%.3f, backward_compute_time=%.3f",
                  op.flops * 1e-6, op.flops * 2e-6);
    nodes += "node" + std::to_string(node[i]) + " -- " + op.type + "(" + op.scope + ") -- " +
             times + ", activation_size=" + sizes +
             ", parameter_size=" + std::to_string(op.param_bytes) + ".0" +
             (layers % 2 ? " -- stage_id=0\n" : "\n");
    ++layers;
  }
  std::set<std::pair<int32_t, int32_t>> seen;
  for (const Edge& e : g.edges())
    if (node[e.src] >= 0 && node[e.dst] >= 0 && seen.emplace(node[e.src], node[e.dst]).second)
      edges +=
          "\tnode" + std::to_string(node[e.src]) + " -- node" + std::to_string(node[e.dst]) + "\n";
  return nodes + edges;
}

// Reads a seed with the reader of its folder (graph, pipedream, cluster, placement); throws
// InputError when it is not valid.
void check(const fs::path& path) {
  const std::string kind = path.parent_path().filename().string(), file = path.string();
  if (kind == "graph") parse_graph_json(read_text_file(file), file);
  if (kind == "pipedream") parse_pipedream(read_text_file(file), file);
  if (kind == "cluster")
    read_cluster(path.extension() == ".json" ? file : read_text_file(file));  // JSON or preset
  if (kind == "placement") read_placement_file(file, placement_target_graph(), 4);
}

// Writes a seed and checks it.
void write(const fs::path& path, const std::string& text) {
  write_text_file_atomic(path.string(), text);
  check(path);
  std::printf("%8zu  %s\n", text.size(), path.string().c_str());
}

int run(const fs::path& out) {
  for (const char* dir : {"graph", "pipedream", "cluster", "placement"})
    fs::create_directories(out / dir);

  // Graphs: every model at small options, every random family at its smallest size.
  std::vector<std::pair<std::string, datasets::GenOptions>> models;
  for (const auto& m : datasets::models()) {
    datasets::GenOptions o;
    if (m.name == "random") continue;
    auto has = [&](const char* opt) {
      return std::find(m.options.begin(), m.options.end(), opt) != m.options.end();
    };
    if (has("batch")) o.batch = 2;
    if (has("seq_len")) o.seq_len = 4;
    if (has("layers")) o.layers = m.name == "gnmt" ? 2 : 1;
    models.emplace_back(m.name, o);
  }
  for (const auto& family : datasets::random_family_names()) {
    datasets::GenOptions o;
    o.family = family;
    o.ops = datasets::kRandomMinOps;
    models.emplace_back("random", o);
  }
  for (const auto& [model, options] : models) {
    const Graph g = datasets::generate(model, options);
    const std::string stem = model == "random" ? "random_" + options.family : model;
    for (int32_t n : {4, 16})
      write(out / "graph" / (stem + "_" + std::to_string(n) + ".json"),
            graph_to_json(first_ops(g, n)));
    write(out / "pipedream" / (stem + ".txt"), pipedream_of(first_ops(g, 24)));
  }
  // One profile as Windows writes it: CRLF, with trailing blanks.
  std::string crlf;
  for (char c : pipedream_of(first_ops(datasets::generate("rnnlm", {}), 12)))
    crlf += c == '\n' ? std::string(" \t\r\n") : std::string(1, c);
  write(out / "pipedream" / "rnnlm_crlf.txt", crlf);

  // Clusters: one preset of each topology (JSON) and the preset strings themselves.
  for (const char* preset : {"v100x2-nvlink", "k80x2-pcie", "a100x4-nvswitch", "h100x4-2node",
                             "p100x4-pcie", "dgx1-v100"}) {
    write(out / "cluster" / (std::string(preset) + ".json"),
          cluster_to_json(make_cluster_preset(preset)));
    write(out / "cluster" / (std::string(preset) + ".txt"), preset);
  }

  // Placements of the placement target's graph: all on one device, dealt round-robin.
  const Graph pg = placement_target_graph();
  Placement single{std::vector<int32_t>(pg.num_ops(), 0)}, dealt = single;
  for (int32_t i = 0; i < pg.num_ops(); ++i) dealt.device[i] = i % 4;
  write(out / "placement" / "single.json", placement_to_json(single, pg, 1));
  write(out / "placement" / "round_robin.json", placement_to_json(dealt, pg, 4));
  return 0;
}

}  // namespace
}  // namespace gdp::fuzz

int main(int argc, char** argv) {
  const bool check = argc >= 2 && std::string(argv[1]) == "--check";
  if (argc != 2 && !check) {
    std::fprintf(stderr,
                 "usage: gdp_fuzz_seeds OUTDIR        write the generated seeds\n"
                 "       gdp_fuzz_seeds --check DIR   check DIR/{graph,pipedream,cluster,"
                 "placement}/*\n");
    return 2;
  }
  try {
    if (!check) return gdp::fuzz::run(argv[1]);
    int seeds = 0;
    for (int a = 2; a < argc; ++a)
      for (const auto& f : std::filesystem::recursive_directory_iterator(argv[a]))
        if (f.is_regular_file()) gdp::fuzz::check(f.path()), ++seeds;
    std::printf("gdp_fuzz_seeds: %d seeds read\n", seeds);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gdp_fuzz_seeds: %s\n", e.what());
    return 1;
  }
}
