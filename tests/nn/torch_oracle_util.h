// Shared by the PyTorch oracle tests (test_oracle.cpp, test_lstm.cpp): run
// scripts/torch_oracle.py once with given flags and read its JSON, convert its tensors, and
// compare ours against them with atol + rtol |ref|. A missing interpreter or torch gives a
// reason instead of a result, which the tests turn into a skip (GDP_REQUIRE_INPUT).
#pragma once

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "nn/parameters.h"
#include "nn/tensor.h"
#include "test_paths.h"

namespace gdp::test {

// The interpreter with PyTorch: $GDP_PYTHON when set (e.g. one without torch, to see the
// skip), else the system's.
inline std::string oracle_python() {
  const char* env = std::getenv("GDP_PYTHON");
  return (env && *env) ? std::string(env) : std::string("/usr/bin/python3");
}

// Runs `torch_oracle.py <flags> --out <binary dir>/<out_name>`; returns the JSON, or null with
// a reason in why_not (no interpreter, no torch), or {"error": ...} when the script failed
// although torch is there.
inline nlohmann::json run_torch_oracle(const std::string& flags, const std::string& out_name,
                                       std::string& why_not) {
  const std::string py = oracle_python();
  if (std::system(("test -x " + py).c_str()) != 0) {
    why_not = py + " not found";
    return nullptr;
  }
  const std::string out = binary_dir() + "/" + out_name;
  const std::string cmd = py + " " + source_dir() + "/scripts/torch_oracle.py " + flags +
                          (flags.empty() ? "" : " ") + "--out " + out + " > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {  // the script's "no torch" code
    why_not = py + " cannot import torch";
    return nullptr;
  }
  if (status != 0) {
    why_not = "scripts/torch_oracle.py failed: " + cmd;
    return nlohmann::json::object({{"error", why_not}});
  }
  std::ifstream in(out);
  return nlohmann::json::parse(in);
}

template <typename T>
nn::BasicTensor<T> oracle_tensor(const nlohmann::json& j) {
  const nn::Shape shape = j.at("shape").get<nn::Shape>();
  const auto data = j.at("data").get<std::vector<double>>();
  nn::BasicTensor<T> t(shape);
  REQUIRE(static_cast<int64_t>(data.size()) == t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<T>(data[i]);
  return t;
}

// |ours - ref| <= atol + rtol |ref| everywhere; reports the worst element.
template <typename T>
void check_close(const nn::BasicTensor<T>& ours, const nlohmann::json& ref_j, double rtol,
                 double atol, const std::string& what) {
  const nn::TensorD ref = oracle_tensor<double>(ref_j);
  INFO(what << ": ours " << nn::shape_str(ours.shape()) << " ref " << nn::shape_str(ref.shape()));
  REQUIRE(ours.shape() == ref.shape());
  const nn::BasicTensor<T> o = ours.contiguous();
  double worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double excess = std::abs(o[i] - ref[i]) - (atol + rtol * std::abs(ref[i]));
    if (excess > worst) {
      worst = excess;
      at = i;
    }
  }
  INFO("worst element " << at
                        << (at >= 0 ? ": ours " + std::to_string(o[at]) + " ref " +
                                          std::to_string(ref[at])
                                    : std::string()));
  CHECK(worst == 0.0);
}

// Overwrites every parameter of `params` with the oracle's value of the same name and shape
// (the oracle must hold exactly these parameters).
template <typename T>
void load_oracle_params(nn::BasicParameterBuffer<T>& params, const nlohmann::json& values) {
  REQUIRE(params.count() == static_cast<int64_t>(values.size()));
  for (const auto& e : params.entries()) {
    INFO("parameter " << e.name);
    REQUIRE(values.contains(e.name));
    const nn::BasicTensor<T> v = oracle_tensor<T>(values.at(e.name));
    REQUIRE(v.shape() == e.shape);
    nn::BasicTensor<T> dst = e.var.value();
    dst.copy_from(v);
  }
}

}  // namespace gdp::test
