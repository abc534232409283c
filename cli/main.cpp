// The gdp binary: dispatches to subcommands and maps errors to exit codes
// (1: bad input, 2: bad usage).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "core/alloc.h"
#include "core/error.h"
#include "place/registry.h"
#include "rl/methods.h"

namespace {

struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* summary;
};

const Command kCommands[] = {
    {"info", gdp::cli::cmd_info, "print a graph's op/edge counts, flops and memory"},
    {"convert", gdp::cli::cmd_convert, "convert a graph (e.g. a PipeDream profile) to native JSON"},
    {"cluster", gdp::cli::cmd_cluster, "list cluster presets or print one as JSON"},
    {"simulate", gdp::cli::cmd_simulate, "simulate one training step of a placed graph"},
    {"gen", gdp::cli::cmd_gen, "generate a workload graph (paper models, random families)"},
    {"place", gdp::cli::cmd_place, "compute a placement with a registered method (--list)"},
    {"compare", gdp::cli::cmd_compare, "simulate a suite under several placements and compare"},
    {"train", gdp::cli::cmd_train, "train a placement policy: GDP (PPO), HDP, Placeto; resume"},
    {"suite", gdp::cli::cmd_suite, "batch runs of a suite (resumable), and comparing two runs"},
    {"calibrate", gdp::cli::cmd_calibrate, "fit a device profile (CPU benchmarks, profiles)"},
    {"validate", gdp::cli::cmd_validate, "run a placed graph for real; compare with the simulator"},
};

void usage(FILE* f) {
  std::fprintf(
      f, "usage: gdp <command> [options]   (gdp <command> --help for details)\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(f, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  gdp::keep_freed_memory();
  // Modules that bring placement methods register them once; the commands look names up.
  gdp::rl::register_methods(gdp::place::registry());
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  for (const auto& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.fn(argc - 2, argv + 2);
    } catch (const gdp::UsageError& e) {
      std::fprintf(stderr, "gdp %s: %s\n", c.name, e.what());
      return 2;
    } catch (const gdp::InputError& e) {
      std::fprintf(stderr, "gdp %s: error: %s\n", c.name, e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gdp %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "gdp: unknown command '%s'\n", name.c_str());
  usage(stderr);
  return 2;
}
