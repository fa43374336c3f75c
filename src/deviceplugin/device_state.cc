#include "deviceplugin/device_state.h"

#include <utility>

namespace toposched::deviceplugin {

StatusOr<std::shared_ptr<DeviceState>> DeviceState::Create(const topo::NodeTopology& t,
                                                           DeviceTable devices,
                                                           PluginOptions options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::unique_ptr<sched::NodeSelector> selector,
                   sched::NodeSelector::Create(t, sched::CostModelObjective(t)));
  return std::shared_ptr<DeviceState>(
      new DeviceState(std::move(selector), std::move(devices), std::move(options)));
}

DeviceState::DeviceState(std::unique_ptr<sched::NodeSelector> selector, DeviceTable devices,
                         PluginOptions options)
    : selector_(std::move(selector)), options_(std::move(options)), devices_(std::move(devices)) {}

std::vector<GpuDevice> DeviceState::Snapshot(uint64_t* version) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (version != nullptr) *version = version_;
  return devices_.devices();
}

uint64_t DeviceState::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t wakes = wakes_;
  changed_.wait_for(lock, timeout, [&] { return version_ != seen || wakes_ != wakes; });
  return version_;
}

void DeviceState::Wake() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++wakes_;
  }
  changed_.notify_all();
}

Status DeviceState::SetHealthy(std::string_view id, bool healthy) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSIGN_OR_RETURN(int pos, devices_.Position(id));
    if (!devices_.SetHealthy(pos, healthy)) return OkStatus();
    ++version_;
  }
  changed_.notify_all();
  return OkStatus();
}

StatusOr<std::vector<std::string>> DeviceState::Preferred(std::span<const std::string> available,
                                                          std::span<const std::string> must_include,
                                                          int size) const {
  DeviceTable table = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return devices_;
  }();
  return PreferredDevices(*selector_, table, available, must_include, size);
}

StatusOr<ContainerAllocation> DeviceState::Allocate(std::span<const std::string> ids) const {
  DeviceTable table = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return devices_;
  }();
  return PlanAllocation(*selector_, table, ids, options_);
}

}  // namespace toposched::deviceplugin
