// libFuzzer target of the placement reader, which reads files only: each input goes through a
// temporary file of this process (temp_path()), read against placement_target_graph() and a cluster
// of four devices. A placement read must give every op a device in range and read back unchanged
// from placement_to_json.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/io.h"
#include "fuzz/fuzz_common.h"

using gdp::Graph;
using gdp::Placement;
using gdp::fuzz::finding;
using gdp::fuzz::outcome_of;

namespace {

constexpr int32_t kDevices = 4;

// The temporary file, named after the process (written and removed for each input: libFuzzer
// ends without running atexit handlers): in /dev/shm where it can be written (a file on disk
// costs 3 ms per input here, in memory 0.1 ms), else $TMPDIR or /tmp.
const std::string& temp_path() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                            : tmp && *tmp                   ? tmp
                                                            : "/tmp";
    return dir + "/gdp-fuzz-placement-" + std::to_string(::getpid()) + ".json";
  }();
  return path;
}

// The placement in `text`, read through the temporary file.
gdp::fuzz::Outcome<Placement> read_placement(const std::string& text, const Graph& g) {
  {
    std::ofstream f(temp_path(), std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) finding("cannot write " + temp_path());
  }
  auto read = outcome_of([&] { return gdp::read_placement_file(temp_path(), g, kDevices); });
  std::remove(temp_path().c_str());
  return read;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Graph g = gdp::fuzz::placement_target_graph();
  const auto read = read_placement(std::string(reinterpret_cast<const char*>(data), size), g);
  if (!read.value) {
    if (read.error.rfind(temp_path(), 0) != 0)
      finding("the message does not name the file: " + read.error);
    return 0;
  }
  const Placement& p = *read.value;
  if (p.device.size() != static_cast<size_t>(g.num_ops())) finding("placement size");
  for (int32_t d : p.device)
    if (d < 0 || d >= kDevices) finding("device " + std::to_string(d) + " out of range");
  const auto back = read_placement(gdp::placement_to_json(p, g, kDevices), g);
  if (!back.value) finding("placement_to_json's text does not read back: " + back.error);
  if (back.value->device != p.device) finding("the placement read back differs");
  return 0;
}
