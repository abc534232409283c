// A run directory's config.json and checkpoint parameters (rl/run/run_dir.h).
#include "rl/run/run_dir.h"

#include <filesystem>

#include "core/error.h"
#include "core/io.h"
#include "nn/checkpoint.h"
#include "rl/run/learner.h"

namespace gdp::rl {

namespace {

namespace fs = std::filesystem;
constexpr int kRunVersion = 1;

// config.json's run keys: required, and optional (added after the first runs were written).
const std::vector<std::string> kRunKeys = {"format", "version", "graph",         "cluster",
                                           "suite",  "profile", "init",          "seed",
                                           "device", "budget",  "max_iterations"};
const std::vector<std::string> kOptionalRunKeys = {"method", "checkpoint_every"};

// A training run is a directory holding config.json; say so plainly when `dir` is not one.
void check_run_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw InputError(dir + ": no such training run (expected a `gdp train --out` directory)");
  if (!fs::is_directory(dir, ec))
    throw InputError(dir +
                     ": not a training run: expected a `gdp train --out` directory, got a "
                     "file");
  if (!fs::exists(fs::path(dir) / "config.json", ec))
    throw InputError(dir +
                     ": not a training run (it has no config.json; expected a `gdp train "
                     "--out` directory)");
}

}  // namespace

nlohmann::ordered_json run_spec_to_json(const RunSpec& s) {
  nlohmann::ordered_json j;
  j["format"] = "gdp-train-run";
  j["version"] = kRunVersion;
  j["method"] = s.method;
  j["graph"] = s.graph_path;
  j["cluster"] = s.cluster;
  j["suite"] = s.suite_path;
  j["profile"] = s.profile_path;
  j["init"] = s.init_dir;
  j["seed"] = s.seed;
  j["device"] = s.device;
  j["budget"] = {{"samples", s.budget.samples}, {"seconds", s.budget.seconds}};
  j["max_iterations"] = s.max_iterations;
  j["checkpoint_every"] = s.checkpoint_every;
  return j;
}

RunConfig read_run_config(const std::string& dir) {
  check_run_dir(dir);
  const std::string path = (fs::path(dir) / "config.json").string();
  RunConfig c{RunSpec(), nlohmann::json(), StrictJson(path)};
  const StrictJson& sj = c.sj;
  c.json = sj.parse(read_text_file(path));
  const nlohmann::json& j = c.json;
  sj.check_header(j, "gdp-train-run", kRunVersion);
  RunSpec& s = c.spec;
  s.method = j.contains("method") ? sj.string(j, "method", "") : "gdp";  // before methods: gdp
  if (j.contains("checkpoint_every"))
    s.checkpoint_every = static_cast<int32_t>(sj.integer(j, "checkpoint_every", "", -1, 1 << 30));
  s.graph_path = sj.string(j, "graph", "");
  s.cluster = sj.string(j, "cluster", "");
  s.suite_path = sj.string(j, "suite", "");
  s.profile_path = sj.string(j, "profile", "");
  s.init_dir = sj.string(j, "init", "");
  const nlohmann::json& seed = j.at("seed");
  if (!seed.is_number_unsigned() && !seed.is_number_integer())
    sj.fail("seed", "expected a non-negative integer");
  s.seed = seed.get<uint64_t>();
  s.device = sj.string(j, "device", "");
  const nlohmann::json& b = sj.object(j, "budget", "");
  sj.check_keys(b, "budget", {"samples", "seconds"}, {});
  s.budget.samples = sj.integer(b, "samples", "budget");
  s.budget.seconds = sj.number(b, "seconds", "budget");
  s.max_iterations = sj.integer(j, "max_iterations", "");
  return c;
}

void check_method_keys(const RunConfig& c, const std::vector<std::string>& method_keys) {
  std::vector<std::string> optional = kOptionalRunKeys;
  optional.insert(optional.end(), method_keys.begin(), method_keys.end());
  c.sj.check_keys(c.json, "", kRunKeys, optional);
}

RunConfig read_method_run(const std::string& dir, const std::string& method, const char* what,
                          const std::vector<std::string>& method_keys) {
  RunConfig c = read_run_config(dir);
  if (c.spec.method != method)
    throw InputError(c.sj.source() + ": method: a " + what +
                     " policy was expected; this run trained '" + c.spec.method + "'");
  check_method_keys(c, method_keys);
  return c;
}

nlohmann::json stored_place_options(const RunConfig& c) {
  return c.sj.object(c.json, "options", "");
}

RunPath resolve_run_path(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return RunPath{path, ""};
  const fs::path parent = fs::path(path).parent_path();
  if (!fs::exists(parent / "config.json", ec))
    throw InputError(path +
                     ": expected a `gdp train --out` run directory or a ckpt-N.bin "
                     "inside one; this file is neither");
  return RunPath{parent.empty() ? "." : parent.string(), path};
}

void load_parameters(const std::string& dir, nn::ParameterBuffer& params, const std::string& bin) {
  const std::string file = bin.empty() ? checkpoint_path(dir) : bin;
  try {
    nn::load_checkpoint(file, params, nullptr);
  } catch (const std::runtime_error& e) {
    throw InputError(dir + ": the checkpoint does not fit this policy: " + e.what());
  }
}

}  // namespace gdp::rl
