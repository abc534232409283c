// `gdp gen MODEL [options] -o OUT.json`: writes a generated training graph (paper models,
// random families) through the datasets registry; `gdp gen --list` lists the models.
#include <cstdio>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"
#include "datasets/registry.h"

namespace gdp::cli {

namespace {

// Command-line spelling of an option: "--seq-len" for "seq_len".
std::string flag_of(std::string name) {
  for (char& c : name)
    if (c == '_') c = '-';
  return "--" + name;
}

}  // namespace

int cmd_gen(int argc, char** argv) {
  std::set<std::string> value_flags{"-o", "--output"};
  for (const auto& n : datasets::all_option_names()) value_flags.insert(flag_of(n));
  Args a(argc, argv, value_flags, {"--list"});
  if (a.help()) {
    std::printf(
        "usage: gdp gen MODEL [options] -o OUT.json\n"
        "       gdp gen --list\n\n"
        "Writes the training graph of MODEL (forward ops, backward ops, one ApplyAdam per\n"
        "variable) as gdp-graph JSON, atomically. Options not given take the model's defaults\n"
        "(docs/workloads.md); a model rejects options it does not take.\n"
        "  -o, --output F     output file (required)\n"
        "  --layers N         layers (LSTM/Transformer layers, cells per stack)\n"
        "  --batch N          examples per step\n"
        "  --seq-len N        sequence length (tokens, samples)\n"
        "  --hidden N         hidden size / channels\n"
        "  --vocab N          vocabulary size\n"
        "  --image-size N     input height = width\n"
        "  --stacks N         stacks (WaveNet)\n"
        "  --heads N          attention heads\n"
        "  --family F --ops N --seed S   random families\n"
        "  --list             list the models with their options and defaults\n\n"
        "models:");
    for (const auto& m : datasets::models()) std::printf(" %s", m.name.c_str());
    std::printf("\n");
    return 0;
  }
  if (a.has("--list")) {
    if (!a.positional().empty() || a.has("-o") || a.has("--output"))
      throw UsageError("--list takes no other arguments");
    for (const auto& m : datasets::models()) {
      std::printf("%-15s %s\n", m.name.c_str(), m.summary.c_str());
      std::string opts;
      for (const auto& o : m.options) {
        std::string v = datasets::option_value(m.defaults, o);
        opts += " ";
        opts += flag_of(o);
        if (!v.empty()) {
          opts += "=";
          opts += v;
        }
      }
      std::printf("%-15s  options:%s\n", "", opts.empty() ? " (none)" : opts.c_str());
    }
    return 0;
  }
  if (a.positional().size() != 1)
    throw UsageError("expected exactly one MODEL argument (see --help)");
  if (a.has("-o") && a.has("--output")) throw UsageError("give -o or --output, not both");
  const std::string out = a.has("-o") ? a.get("-o") : a.require("--output");
  if (out.empty()) throw UsageError("the output path is empty");
  const std::string model = a.positional()[0];
  datasets::GenOptions given;
  try {
    for (const auto& n : datasets::all_option_names())
      if (a.has(flag_of(n))) datasets::set_option(given, n, a.get(flag_of(n)));
    datasets::resolve_options(model, given);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  Graph g = datasets::generate(model, given);
  write_graph_file(g, out);
  GraphSummary s = g.summary();
  std::printf(
      "%s: %s, %lld ops (forward %lld, backward %lld, update %lld), %lld edges, %.4g flops\n",
      out.c_str(), g.name.c_str(), (long long)s.ops, (long long)s.ops_forward,
      (long long)s.ops_backward, (long long)s.ops_update, (long long)s.edges, s.flops);
  return 0;
}

}  // namespace gdp::cli
