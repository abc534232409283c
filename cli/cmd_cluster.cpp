// `gdp cluster --list` and `gdp cluster PRESET|FILE`: cluster presets and their JSON.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/io.h"

namespace gdp::cli {

int cmd_cluster(int argc, char** argv) {
  Args a(argc, argv, {"-o"}, {"--list"});
  if (a.help()) {
    std::string kinds;
    for (const auto& k : cluster_preset_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
    std::printf(
        "usage: gdp cluster --list\n"
        "       gdp cluster PRESET|FILE [-o OUT.json]\n\n"
        "Presets are <kind>x<count>-<topology>: kind in {%s};\n"
        "topology 'nvlink' (all pairs), 'pcie' (PCIe switches under a host) or '<N>node' (N "
        "nodes,\n"
        "a NIC per node, joined by a network switch). Prints the cluster as gdp-cluster JSON.\n",
        kinds.c_str());
    return 0;
  }
  if (a.has("--list")) {
    if (!a.positional().empty()) throw UsageError("--list takes no other argument");
    std::printf("device kinds:");
    for (const auto& k : cluster_preset_kinds()) std::printf(" %s", k.c_str());
    std::printf("\ntopologies:   nvlink pcie <N>node\nexamples:\n");
    for (const auto& e : cluster_preset_examples()) {
      Cluster c = make_cluster_preset(e);
      std::printf("  %-16s %2d x %-5s %3lld GiB each, %zu switches, %zu links\n", e.c_str(),
                  c.num_devices(), c.devices[0].kind.c_str(),
                  (long long)(c.devices[0].memory_bytes >> 30), c.switches.size(), c.links.size());
    }
    return 0;
  }
  if (a.positional().size() != 1)
    throw UsageError("expected one PRESET or FILE, or --list (see --help)");
  Cluster c = read_cluster(a.positional()[0]);
  std::string text = cluster_to_json(c);
  if (a.has("-o"))
    write_text_file_atomic(a.get("-o"), text);
  else
    std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace gdp::cli
