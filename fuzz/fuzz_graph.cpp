// libFuzzer target of the native graph reader. Checks what core/io.h promises: the fast
// parse_graph_json and the checked parse_graph_json_reference give the same graph or the same
// message for every input; and a graph read back from graph_to_json is the same graph, written
// the same way again. An InputError is an accepted outcome; anything else is a finding.
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
  const auto fast = outcome_of([&] { return gdp::parse_graph_json(text, "fuzz.json"); });
  const auto ref = outcome_of([&] { return gdp::parse_graph_json_reference(text, "fuzz.json"); });
  if (fast.value.has_value() != ref.value.has_value())
    finding(std::string("parse_graph_json ") + (fast.value ? "accepts" : "rejects") +
            " what parse_graph_json_reference " + (ref.value ? "accepts" : "rejects") + ": " +
            (fast.value ? ref.error : fast.error));
  if (!fast.value) {
    if (fast.error != ref.error)
      finding("different messages:\n  parse_graph_json:           " + fast.error +
              "\n  parse_graph_json_reference: " + ref.error);
    return 0;
  }
  const Graph& g = *fast.value;
  if (!g.finalized()) finding("parse_graph_json returned a graph that is not finalized");
  if (std::string d = graph_diff(g, *ref.value); !d.empty())
    finding("parse_graph_json and parse_graph_json_reference differ in " + d);

  // Round trip: written, read back (by both readers), written again.
  const auto written = outcome_of([&] { return gdp::graph_to_json(g); });
  if (!written.value)
    finding("graph_to_json fails on a graph the reader accepted: " + written.error);
  const auto back = outcome_of([&] { return gdp::parse_graph_json(*written.value, "back.json"); });
  if (!back.value) finding("graph_to_json's text does not read back: " + back.error);
  if (std::string d = graph_diff(g, *back.value); !d.empty())
    finding("the graph read back from graph_to_json differs in " + d);
  const auto back_ref =
      outcome_of([&] { return gdp::parse_graph_json_reference(*written.value, "back.json"); });
  if (!back_ref.value || !graph_diff(g, *back_ref.value).empty())
    finding("parse_graph_json_reference reads graph_to_json's text differently: " + back_ref.error);
  if (gdp::graph_to_json(*back.value) != *written.value)
    finding("graph_to_json writes a graph read back from its own text differently");
  return 0;
}
