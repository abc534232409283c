// `single`: every op on one device (the baseline that needs no communication).
#include "core/error.h"
#include "place/methods.h"

namespace gdp::place {

namespace {

class SinglePlacer : public Placer {
 public:
  explicit SinglePlacer(int32_t device) : device_(device) {}
  Placement place(Run& run) override {
    const Cluster& c = run.problem().cluster();
    if (device_ >= c.num_devices())
      throw InputError("method 'single': options.device: device " + std::to_string(device_) +
                       " does not exist; cluster '" + c.name + "' has " +
                       std::to_string(c.num_devices()) + " devices");
    run.set_note("all ops on " + c.devices[device_].name);
    return Placement{std::vector<int32_t>(run.problem().graph().num_ops(), device_)};
  }

 private:
  int32_t device_;
};

}  // namespace

MethodInfo single_method() {
  return MethodInfo{
      "single",
      "every op on one device",
      {integer_option("device", 0, 0, 65535, "index of the device in the cluster")},
      false,
      [](const Options& o) {
        return std::make_unique<SinglePlacer>(static_cast<int32_t>(o.integer("device")));
      }};
}

}  // namespace gdp::place
