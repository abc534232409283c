// Paths the tests need: the source tree and the shared data folder beside the checkout.
#pragma once
#include <filesystem>
#include <string>

namespace gdp::test {
inline std::string source_dir() { return GDP_SOURCE_DIR; }
inline std::string shared_dir() { return GDP_SHARED_DIR; }
inline std::string binary_dir() { return GDP_BINARY_DIR; }
inline bool shared_available() {
  return std::filesystem::exists(std::filesystem::path(shared_dir()) / "data" / "pipedream-profiles");
}
}  // namespace gdp::test
