// Output formats of a simulation: the result as JSON (for the CLI and scripts) and the
// Chrome trace event JSON (opens in Perfetto / chrome://tracing), a row per device and link.
#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/simulator.h"

namespace gdp {

namespace {

using nlohmann::json;

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json result_json(const SimResult& r, const Cluster& c, const Graph* g) {
  json j = json::object();
  j["step_time_s"] = number_or_null(r.step_time_s);
  j["valid"] = r.valid;
  j["status"] = sim_status_name(r.status);
  j["reason"] = r.reason;
  json devs = json::array();
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& s = r.devices[d];
    devs.push_back({{"name", d < c.devices.size() ? c.devices[d].name : std::to_string(d)},
                    {"busy_s", s.busy_s},
                    {"ops", s.ops},
                    {"peak_memory_bytes", s.peak_memory_bytes},
                    {"resident_bytes", s.resident_bytes},
                    {"capacity_bytes", d < c.devices.size() ? c.devices[d].memory_bytes : 0}});
  }
  j["devices"] = devs;
  json links = json::array();
  for (size_t l = 0; l < r.link_bytes.size(); ++l) {
    if (r.link_bytes[l] == 0) continue;
    links.push_back(
        {{"link", c.directed_link_name(static_cast<int32_t>(l))}, {"bytes", r.link_bytes[l]}});
  }
  j["links"] = links;
  j["transfers"] = r.transfers;
  json cp = json::array();
  for (int32_t i : r.critical_path) {
    if (g && i >= 0 && i < g->num_ops())
      cp.push_back(g->op(i).name);
    else
      cp.push_back(i);
  }
  j["critical_path"] = cp;
  return j;
}

}  // namespace

std::string sim_result_to_json(const SimResult& r, const Cluster& c) {
  return result_json(r, c, nullptr).dump(2) + "\n";
}

std::string sim_result_to_json(const SimResult& r, const Cluster& c, const Graph& g) {
  return result_json(r, c, &g).dump(2) + "\n";
}

std::string trace_to_chrome_json(const SimResult& r, const Cluster& c) {
  // Trace event format: "X" complete events with microsecond timestamps; one process,
  // thread id = row; "M" metadata events name the rows and keep devices above links.
  json events = json::array();
  const int32_t D = c.num_devices();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", c.name.empty() ? std::string("cluster") : c.name}}}});
  const int32_t rows = D + c.num_directed_links();
  for (int32_t row = 0; row < rows; ++row) {
    std::string name = row < D ? c.devices[row].name : "link " + c.directed_link_name(row - D);
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", row},
                      {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", row},
                      {"args", {{"sort_index", row}}}});
  }
  for (const TraceEvent& e : r.trace) {
    events.push_back({{"name", e.name},
                      {"cat", e.row < D ? "op" : "transfer"},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", e.row},
                      {"ts", e.start_s * 1e6},
                      {"dur", (e.end_s - e.start_s) * 1e6}});
  }
  json j = json::object();
  j["traceEvents"] = events;
  j["displayTimeUnit"] = "ms";
  j["otherData"] = {
      {"step_time_s", number_or_null(r.step_time_s)}, {"valid", r.valid}, {"reason", r.reason}};
  return j.dump() + "\n";
}

}  // namespace gdp
