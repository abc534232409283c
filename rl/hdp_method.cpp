// PLACEHOLDER while being written: replaced by the real method.
#include <memory>

#include "core/error.h"
#include "rl/register.h"

namespace gdp::rl {

namespace {
class NotYet : public place::Placer {
 public:
  Placement place(place::Run&) override { throw InputError("hdp: not built yet"); }
};
}  // namespace

place::MethodInfo hdp_method() {
  return place::MethodInfo{"hdp", "(being written)", {}, true,
                           [](const place::Options&) { return std::make_unique<NotYet>(); }};
}

}  // namespace gdp::rl
