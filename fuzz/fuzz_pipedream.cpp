// libFuzzer target of the PipeDream profile importer. An imported graph must be finalized,
// hold 2L ops (forward op 2N, backward op 2N+1 for each layer nodeN, ops 0..L-1 forward, in
// node order, then their backward ops) and read back unchanged from graph_to_json, as
// `gdp convert` relies on. The optimizer (sgd, momentum, adam) follows the input's length.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/io.h"
#include "fuzz/fuzz_common.h"

using gdp::Graph;
using gdp::fuzz::finding;
using gdp::fuzz::graph_diff;
using gdp::fuzz::outcome_of;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)gdp::looks_like_pipedream(text);
  gdp::PipeDreamOptions options;
  options.optimizer = static_cast<gdp::Optimizer>(size % 3);
  const auto imported =
      outcome_of([&] { return gdp::parse_pipedream(text, "fuzz/profile.txt", options); });
  if (!imported.value) {
    if (imported.error.rfind("fuzz/profile.txt", 0) != 0)
      finding("the message does not name the file: " + imported.error);
    return 0;
  }
  const Graph& g = *imported.value;
  if (!g.finalized()) finding("parse_pipedream returned a graph that is not finalized");
  if (g.name != "profile") finding("graph name '" + g.name + "', expected 'profile'");
  const int32_t L = g.num_ops() / 2;
  if (g.num_ops() != 2 * L || L == 0) finding("odd or zero op count");
  for (int32_t k = 0; k < L; ++k) {
    const gdp::Op &f = g.op(k), &b = g.op(L + k);
    if (f.phase != gdp::Phase::forward || b.phase != gdp::Phase::backward)
      finding("op phases out of order at layer #" + std::to_string(k));
    if (b.id != f.id + 1 || f.id % 2 != 0 || (k > 0 && f.id <= g.op(k - 1).id))
      finding("op ids out of order at layer #" + std::to_string(k));
    if (f.optimizer_bytes != gdp::optimizer_state_buffers(options.optimizer) * f.param_bytes)
      finding("optimizer state of layer #" + std::to_string(k));
  }

  const auto written = outcome_of([&] { return gdp::graph_to_json(g); });
  if (!written.value) finding("graph_to_json fails on an imported graph: " + written.error);
  const auto back = outcome_of([&] { return gdp::parse_graph_json(*written.value, "back.json"); });
  if (!back.value) finding("an imported graph does not read back: " + back.error);
  if (std::string d = graph_diff(g, *back.value); !d.empty())
    finding("the imported graph read back differs in " + d);
  return 0;
}
