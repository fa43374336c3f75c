#include "deviceplugin/device_state.h"

#include <utility>

namespace toposched::deviceplugin {

namespace {

// Preferred sets cached per node: a node of 8 GPUs has at most 2^8 available sets x 8 sizes =
// 2,048 distinct questions, and a kubelet asks few of them; 4,096 entries of about 1 KiB each
// keep the plugin within a few MiB (its DaemonSet's limit is 256 MiB).
constexpr size_t kPreferredCacheEntries = 4096;

}  // namespace

StatusOr<std::shared_ptr<DeviceState>> DeviceState::Create(const topo::NodeTopology& t,
                                                           DeviceTable devices,
                                                           PluginOptions options) {
  RETURN_IF_ERROR(options.Validate());
  auto cache = std::make_unique<sched::SelectionCache>(kPreferredCacheEntries);
  ASSIGN_OR_RETURN(std::unique_ptr<sched::NodeSelector> selector,
                   sched::NodeSelector::Create(t, sched::CostModelObjective(t), {}, cache.get()));
  return std::shared_ptr<DeviceState>(new DeviceState(std::move(cache), std::move(selector),
                                                      std::move(devices), std::move(options)));
}

DeviceState::DeviceState(std::unique_ptr<sched::SelectionCache> cache,
                         std::unique_ptr<sched::NodeSelector> selector, DeviceTable devices,
                         PluginOptions options)
    : cache_(std::move(cache)),
      selector_(std::move(selector)),
      options_(std::move(options)),
      devices_(std::move(devices)) {}

std::vector<GpuDevice> DeviceState::Snapshot(uint64_t* version) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (version != nullptr) *version = version_;
  return EffectiveLocked().devices();
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

DeviceTable DeviceState::EffectiveLocked() const {
  DeviceTable t = devices_;
  for (size_t pos = 0; pos < daemon_failed_.size(); ++pos) {
    if (daemon_failed_[pos]) t.SetHealthy(static_cast<int>(pos), false);
  }
  return t;
}

Status DeviceState::SetDaemonFailed(const std::vector<int>& positions) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int n = static_cast<int>(devices_.devices().size());
    std::vector<bool> failed(n, false);
    for (int pos : positions) {
      if (pos < 0 || pos >= n) {
        return InvalidArgumentError("daemon failed GPU " + std::to_string(pos) +
                                    ": outside this node's 0.." + std::to_string(n - 1));
      }
      failed[pos] = true;
    }
    if (failed == daemon_failed_ || (daemon_failed_.empty() && positions.empty())) {
      return OkStatus();
    }
    daemon_failed_ = std::move(failed);
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
    return EffectiveLocked();
  }();
  return PreferredDevices(*selector_, table, available, must_include, size);
}

StatusOr<ContainerAllocation> DeviceState::Allocate(std::span<const std::string> ids) const {
  DeviceTable table = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return EffectiveLocked();
  }();
  return PlanAllocation(*selector_, table, ids, options_);
}

}  // namespace toposched::deviceplugin

namespace toposched::deviceplugin {

void DeviceState::EnableGangChoices(PodListFn list) {
  choices_ = std::make_unique<GangChoices>(std::move(list), options_.resource_name,
                                           options_.choice_annotation);
}

StatusOr<std::vector<std::string>> DeviceState::PreferredForPod(
    std::span<const std::string> available, std::span<const std::string> must_include, int size) {
  if (choices_ != nullptr && size >= 1) {
    DeviceTable table = [&] {
      std::lock_guard<std::mutex> lock(mu_);
      return EffectiveLocked();
    }();
    ChoiceAnswer a = choices_->Choose(table, available, must_include, size);
    if (a.followed) return a.ids;
  }
  return Preferred(available, must_include, size);
}

void DeviceState::NoteAllocated(int count) {
  if (choices_ != nullptr) choices_->NoteAllocated(count);
}

}  // namespace toposched::deviceplugin
