// PLACEHOLDER while being written: replaced by the real method.
#include <memory>

#include "core/error.h"
#include "place/methods.h"

namespace gdp::place {

namespace {
class NotYet : public Placer {
 public:
  Placement place(Run&) override { throw InputError("exhaustive: not built yet"); }
};
}  // namespace

MethodInfo exhaustive_method() {
  return MethodInfo{"exhaustive", "(being written)", {}, false,
                    [](const Options&) { return std::make_unique<NotYet>(); }};
}

}  // namespace gdp::place
