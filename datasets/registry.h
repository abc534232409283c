// The model registry: a model name ("gnmt", "inception_v3", "random", ...) maps to a
// generator with its accepted options, defaults and validation, so that `gdp gen`, the
// suites and the tests call every generator the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph.h"

namespace gdp::datasets {

// Generic generator options. -1 (or "") = unset: the model's default applies.
struct GenOptions {
  int64_t layers = -1;      // LSTM / transformer layers, cells
  int64_t batch = -1;       // examples per step
  int64_t seq_len = -1;     // tokens (or audio samples) per example
  int64_t hidden = -1;      // hidden size / channels
  int64_t vocab = -1;       // vocabulary size
  int64_t image_size = -1;  // input height = width
  int64_t stacks = -1;      // WaveNet stacks, AmoebaNet cell repeats ...
  int64_t heads = -1;       // attention heads
  int64_t ops = -1;         // target op count (random families)
  int64_t seed = -1;        // random families
  std::string family;       // random family name
};

// Option names as spelled on the command line and in suites (without "--").
std::vector<std::string> all_option_names();  // layers, batch, seq_len, hidden, ...
// Sets one named option from its text; throws InputError naming the option when the name
// is unknown or the value is not a non-negative integer (family: any non-empty text).
void set_option(GenOptions& o, const std::string& name, const std::string& value);
bool option_is_set(const GenOptions& o, const std::string& name);
std::string option_value(const GenOptions& o, const std::string& name);  // "" when unset

struct ModelSpec {
  std::string name;                  // registry key, e.g. "gnmt"
  std::string summary;               // one line for `gdp gen --help`
  std::vector<std::string> options;  // accepted option names; others are rejected
  GenOptions defaults;               // applied to unset fields before validate/generate
  // Throws InputError naming the option and the allowed values; may be empty.
  std::function<void(const GenOptions&)> validate;
  // Receives options with defaults applied; returns a finalized training graph.
  std::function<Graph(const GenOptions&)> generate;
};

// Every registered model, in a fixed order.
const std::vector<ModelSpec>& models();
const ModelSpec* find_model(const std::string& name);  // nullptr when unknown
std::vector<std::string> model_names();

// Defaults applied, unknown-for-this-model options rejected, validated. Throws InputError
// (an unknown model name lists the known ones).
GenOptions resolve_options(const std::string& model, const GenOptions& given);
Graph generate(const std::string& model, const GenOptions& given);

// ---- Specs, one per generator file (the registry lists them in models()) ----
ModelSpec rnnlm_spec();           // datasets/rnnlm.cpp
ModelSpec gnmt_spec();            // datasets/gnmt.cpp
ModelSpec transformer_xl_spec();  // datasets/transformer_xl.cpp
ModelSpec bert_spec();            // datasets/bert.cpp
// Defined by the CNN and random-family generators:
ModelSpec inception_v3_spec();  // datasets/inception_v3.cpp
ModelSpec amoebanet_spec();     // datasets/amoebanet.cpp
ModelSpec resnet50_spec();      // datasets/resnet50.cpp
ModelSpec wavenet_spec();       // datasets/wavenet.cpp
ModelSpec random_spec();        // datasets/random_graphs.cpp  ("random", --family F)

}  // namespace gdp::datasets
