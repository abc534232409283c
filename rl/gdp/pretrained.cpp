// Where the shipped pre-trained policy lives, and how methods name it (rl/gdp/pretrained.h).
#include "rl/gdp/pretrained.h"

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io.h"

#ifndef GDP_PRETRAINED_DIR
#define GDP_PRETRAINED_DIR "models/gdp-pretrained"
#endif

namespace gdp::rl {

namespace fs = std::filesystem;

namespace {

const char* kRetrain =
    "retrain it with scripts/pretrain.sh (models/gdp-pretrained/README.md), or give a "
    "checkpoint";

}  // namespace

std::string pretrained_dir() {
  const char* env = std::getenv("GDP_PRETRAINED");
  if (env && *env) return env;
  return GDP_PRETRAINED_DIR;
}

std::string resolve_checkpoint(const std::string& value, const std::string& method) {
  if (value.empty() || value == "none") return "";
  if (value != "pretrained") return value;
  const std::string dir = pretrained_dir();
  std::error_code ec;
  if (!fs::exists(fs::path(dir) / "config.json", ec))
    throw InputError("method '" + method + "': options.checkpoint: the shipped pre-trained " +
                     "policy is missing (" + dir + "/config.json); " + kRetrain);
  return dir;
}

std::string pretrained_summary() {
  const std::string dir = pretrained_dir();
  const fs::path info = fs::path(dir) / "pretrained.json";
  std::error_code ec;
  if (!fs::exists(info, ec)) return "checkpoint 'pretrained': missing (" + dir + ")";
  try {
    const nlohmann::json j = nlohmann::json::parse(read_text_file(info.string()));
    return "checkpoint 'pretrained': " + dir + " (trained on " + j.value("suite", "?") +
           ", commit " + j.value("commit", "?").substr(0, 10) + ", " +
           std::to_string(j.value("samples", int64_t{0})) + " samples, " +
           std::to_string(j.value("iterations", int64_t{0})) + " iterations)";
  } catch (const std::exception& e) {
    return "checkpoint 'pretrained': " + dir + " (unreadable pretrained.json: " + e.what() + ")";
  }
}

}  // namespace gdp::rl
