// `gdp convert IN -o OUT.json`: any readable graph (PipeDream profile, native JSON) to native JSON.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"

namespace gdp::cli {

int cmd_convert(int argc, char** argv) {
  Args a(argc, argv, {"-o", "--name", "--optimizer"}, {});
  if (a.help()) {
    std::printf(
        "usage: gdp convert IN -o OUT.json [--name NAME] [--optimizer adam|momentum|sgd]\n\n"
        "Reads IN (a PipeDream profile graph.txt or a gdp-graph JSON, detected from content) and\n"
        "writes it as gdp-graph JSON (written to a temporary file, then renamed).\n"
        "  -o OUT.json    output path (required)\n"
        "  --name NAME    graph name to store (default: from the input)\n"
        "  --optimizer O  PipeDream input only: the optimizer state resident beside each layer's\n"
        "                 weights: adam (2 x the weights, default), momentum (1 x), sgd (none)\n");
    return 0;
  }
  if (a.positional().size() != 1) throw UsageError("expected exactly one input graph (see --help)");
  std::string out = a.require("-o");
  PipeDreamOptions pd;
  if (a.has("--optimizer") && !parse_optimizer(a.get("--optimizer"), &pd.optimizer))
    throw UsageError("--optimizer: expected adam, momentum or sgd, got '" + a.get("--optimizer") +
                     "'");
  GraphFileFormat format = GraphFileFormat::gdp_json;
  Graph g = read_graph_file(a.positional()[0], pd, &format);
  if (a.has("--optimizer") && format != GraphFileFormat::pipedream)
    throw UsageError("--optimizer applies to PipeDream profiles only; " + a.positional()[0] +
                     " is a gdp-graph JSON file (its optimizer state is in the file)");
  if (a.has("--name")) g.name = a.get("--name");
  write_graph_file(g, out);
  std::fprintf(stderr, "wrote %s: %d ops, %lld edges\n", out.c_str(), g.num_ops(),
               (long long)g.num_edges());
  return 0;
}

}  // namespace gdp::cli
