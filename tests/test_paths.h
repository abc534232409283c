// Paths the tests need (the source tree, the shared data folder beside the checkout) and
// GDP_REQUIRE_INPUT, which skips a test whose input is missing: "Skipped" in ctest, not passed.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <system_error>

namespace gdp::test {

inline std::string source_dir() { return GDP_SOURCE_DIR; }
// The environment variable GDP_SHARED_DIR, when set and not empty, replaces the folder the
// build names (../shared beside the checkout): point it at a missing folder to see the skips.
inline std::string shared_dir() {
  const char* env = std::getenv("GDP_SHARED_DIR");
  return (env && *env) ? std::string(env) : std::string(GDP_SHARED_DIR);
}
inline std::string binary_dir() { return GDP_BINARY_DIR; }
inline std::string pipedream_profiles_dir() { return shared_dir() + "/data/pipedream-profiles"; }
inline bool shared_available() {
  std::error_code ec;
  return std::filesystem::is_directory(pipedream_profiles_dir(), ec);
}

// The exit code that ctest reports as "Skipped" (SKIP_RETURN_CODE of every discovered test,
// tests/CMakeLists.txt).
constexpr int kSkipExitCode = 77;

// A test's input is missing. Under ctest (GDP_UNDER_CTEST=1, set through the tests' ENVIRONMENT
// property) prints why and ends the process with kSkipExitCode; run by hand, returns, and the
// caller warns and returns (GDP_REQUIRE_INPUT).
inline void skip_if_under_ctest(const std::string& why) {
  const char* under_ctest = std::getenv("GDP_UNDER_CTEST");
  if (!under_ctest || std::string(under_ctest) != "1") return;
  std::cout << "SKIPPED: " << why << std::endl;
  std::fflush(stdout);
  std::_Exit(kSkipExitCode);  // one test per process under ctest: nothing else to finish
}

}  // namespace gdp::test

// In a TEST_CASE, before reading an optional input: when `cond` is false the test is skipped
// for `why` (a stream expression): exit code 77 under ctest, a WARN and a return by hand.
#define GDP_REQUIRE_INPUT(cond, why)                    \
  do {                                                  \
    if (!(cond)) {                                      \
      std::ostringstream gdp_why_;                      \
      gdp_why_ << why;                                  \
      ::gdp::test::skip_if_under_ctest(gdp_why_.str()); \
      WARN("SKIPPED: " << gdp_why_.str());              \
      return;                                           \
    }                                                   \
  } while (0)
