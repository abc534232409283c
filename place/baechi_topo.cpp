// PLACEHOLDER while being written: replaced by the real method.
#include <memory>

#include "core/error.h"
#include "place/methods.h"

namespace gdp::place {

namespace {
class NotYet : public Placer {
 public:
  Placement place(Run&) override { throw InputError("m-topo: not built yet"); }
};
}  // namespace

MethodInfo m_topo_method() {
  return MethodInfo{"m-topo", "(being written)", {}, false,
                    [](const Options&) { return std::make_unique<NotYet>(); }};
}

}  // namespace gdp::place
