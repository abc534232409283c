// The model registry table and option handling shared by `gdp gen`, suites and tests.
#include "datasets/registry.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"

namespace gdp::datasets {

namespace {

struct OptionField {
  const char* name;
  int64_t GenOptions::*field;
};

const OptionField kIntOptions[] = {
    {"layers", &GenOptions::layers},   {"batch", &GenOptions::batch},
    {"seq_len", &GenOptions::seq_len}, {"hidden", &GenOptions::hidden},
    {"vocab", &GenOptions::vocab},     {"image_size", &GenOptions::image_size},
    {"stacks", &GenOptions::stacks},   {"heads", &GenOptions::heads},
    {"ops", &GenOptions::ops},         {"seed", &GenOptions::seed},
};

const OptionField* find_int_option(const std::string& name) {
  for (const auto& o : kIntOptions)
    if (name == o.name) return &o;
  return nullptr;
}

std::string join(const std::vector<std::string>& xs) {
  std::string r;
  for (size_t i = 0; i < xs.size(); ++i) r += (i ? ", " : "") + xs[i];
  return r;
}

std::vector<ModelSpec> make_models() {
  std::vector<ModelSpec> m;
  m.push_back(inception_v3_spec());
  m.push_back(amoebanet_spec());
  m.push_back(rnnlm_spec());
  m.push_back(gnmt_spec());
  m.push_back(transformer_xl_spec());
  m.push_back(wavenet_spec());
  m.push_back(resnet50_spec());
  m.push_back(bert_spec());
  m.push_back(random_spec());
  return m;
}

}  // namespace

std::vector<std::string> all_option_names() {
  std::vector<std::string> r;
  for (const auto& o : kIntOptions) r.push_back(o.name);
  r.push_back("family");
  return r;
}

void set_option(GenOptions& o, const std::string& name, const std::string& value) {
  if (name == "family") {
    if (value.empty()) throw InputError("option 'family': expected a family name, got ''");
    o.family = value;
    return;
  }
  const OptionField* f = find_int_option(name);
  if (!f)
    throw InputError("unknown generator option '" + name + "' (known: " + join(all_option_names()) +
                     ")");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || v < 0)
    throw InputError("option '" + name + "': expected a non-negative integer, got '" + value + "'");
  o.*(f->field) = v;
}

bool option_is_set(const GenOptions& o, const std::string& name) {
  if (name == "family") return !o.family.empty();
  const OptionField* f = find_int_option(name);
  if (!f) throw InputError("unknown generator option '" + name + "'");
  return o.*(f->field) >= 0;
}

std::string option_value(const GenOptions& o, const std::string& name) {
  if (!option_is_set(o, name)) return "";
  if (name == "family") return o.family;
  return std::to_string(o.*(find_int_option(name)->field));
}

const std::vector<ModelSpec>& models() {
  static const std::vector<ModelSpec> m = make_models();
  return m;
}

const ModelSpec* find_model(const std::string& name) {
  for (const auto& m : models())
    if (m.name == name) return &m;
  return nullptr;
}

std::vector<std::string> model_names() {
  std::vector<std::string> r;
  for (const auto& m : models()) r.push_back(m.name);
  return r;
}

GenOptions resolve_options(const std::string& model, const GenOptions& given) {
  const ModelSpec* m = find_model(model);
  if (!m) throw InputError("unknown model '" + model + "' (known: " + join(model_names()) + ")");
  GenOptions r = m->defaults;
  for (const std::string& name : all_option_names()) {
    if (!option_is_set(given, name)) continue;
    bool accepted = false;
    for (const auto& a : m->options) accepted = accepted || a == name;
    if (!accepted)
      throw InputError("model '" + model + "' does not take option '" + name + "' (it takes: " +
                       (m->options.empty() ? std::string("none") : join(m->options)) + ")");
    set_option(r, name, option_value(given, name));
  }
  if (m->validate) m->validate(r);
  return r;
}

Graph generate(const std::string& model, const GenOptions& given) {
  GenOptions r = resolve_options(model, given);
  return find_model(model)->generate(r);
}

}  // namespace gdp::datasets
