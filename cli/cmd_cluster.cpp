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
        "topology 'nvlink' (idealised: a private link per pair), 'nvswitch' (one NVSwitch),\n"
        "'cubemesh' (the DGX-1 V100 wiring, 8 GPUs), 'pcie' (PCIe switches under a host) or\n"
        "'<N>node' (N nodes, a NIC per node, joined by a network switch); or a machine:\n"
        "dgx1-v100, dgx-a100, dgx-h100, dgx-h200. Prints the cluster as gdp-cluster JSON.\n",
        kinds.c_str());
    return 0;
  }
  if (a.has("--list")) {
    if (!a.positional().empty()) throw UsageError("--list takes no other argument");
    std::printf("device kinds:");
    for (const auto& k : cluster_preset_kinds()) std::printf(" %s", k.c_str());
    std::printf("\ntopologies:   nvlink nvswitch cubemesh pcie <N>node\nmachines:    ");
    for (const auto& m : cluster_machine_presets()) std::printf(" %s", m.c_str());
    std::printf("\nexamples:\n");
    for (const auto& e : cluster_preset_examples()) {
      Cluster c = make_cluster_preset(e);
      std::printf("  %-16s %2d x %-5s %3lld GiB  %s\n", e.c_str(), c.num_devices(),
                  c.devices[0].kind.c_str(), (long long)(c.devices[0].memory_bytes >> 30),
                  cluster_preset_description(e).c_str());
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
