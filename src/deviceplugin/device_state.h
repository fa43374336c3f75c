// The device plugin's state shared by every gRPC server it runs (one per kubelet lifetime):
// the node's devices with their health (versioned, so ListAndWatch streams each change), the
// node selector, the options. Knows nothing of gRPC.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "deviceplugin/allocation.h"
#include "deviceplugin/devices.h"
#include "deviceplugin/gang_choice.h"
#include "deviceplugin/options.h"
#include "select/node_select.h"
#include "select/selection_cache.h"

namespace toposched::deviceplugin {

// Thread-safe: every method may be called from any thread.
class DeviceState {
 public:
  // Builds the node selector (the cost model's objective, as `place-node`) with a result cache
  // of kPreferredCacheEntries entries. InvalidArgument
  // for bad options or a topology the selector refuses.
  static StatusOr<std::shared_ptr<DeviceState>> Create(const topo::NodeTopology& t,
                                                       DeviceTable devices, PluginOptions options);

  const PluginOptions& options() const { return options_; }
  // The devices and the version of their health (starts at 1, +1 per change).
  std::vector<GpuDevice> Snapshot(uint64_t* version) const;
  // Waits until the version differs from `seen`, `Wake` is called, or `timeout` passes; returns
  // the current version.
  uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const;
  // Wakes every waiter (a server shutting down its streams).
  void Wake() const;
  // NotFound for an unknown id. A change bumps the version and wakes the streams.
  Status SetHealthy(std::string_view id, bool healthy);
  // The GPUs (positions) the daemon holds failed (DaemonFailedGpus): each is Unhealthy whatever
  // SetHealthy said, until a later call leaves it out. A change bumps the version and wakes the
  // streams. InvalidArgument for a position outside the node (nothing changes).
  Status SetDaemonFailed(const std::vector<int>& positions);

  StatusOr<std::vector<std::string>> Preferred(std::span<const std::string> available,
                                               std::span<const std::string> must_include,
                                               int size) const;
  StatusOr<ContainerAllocation> Allocate(std::span<const std::string> ids) const;

  // From now on a container request first looks for the GPUs the extender chose for the pod
  // being admitted (GangChoices over `list`, the options' choice annotation); call before the
  // plugin serves.
  void EnableGangChoices(PodListFn list);
  // The gang's choice for the pod being admitted when it can be followed, else Preferred's
  // answer (the fallback logged and counted by GangChoices).
  StatusOr<std::vector<std::string>> PreferredForPod(std::span<const std::string> available,
                                                     std::span<const std::string> must_include,
                                                     int size);
  // Allocate gave a container `count` devices (counted against the pod being admitted).
  void NoteAllocated(int count);
  // Null until EnableGangChoices.
  const GangChoices* gang_choices() const { return choices_.get(); }

 private:
  // The devices with the daemon's failures applied; mu_ held.
  DeviceTable EffectiveLocked() const;

  DeviceState(std::unique_ptr<sched::SelectionCache> cache,
              std::unique_ptr<sched::NodeSelector> selector, DeviceTable devices,
              PluginOptions options);

  // Preferred sets per (available set, size): the kubelet asks the same few questions again and
  // again. Declared before the selector, which must not outlive it.
  std::unique_ptr<sched::SelectionCache> cache_;
  std::unique_ptr<sched::NodeSelector> selector_;
  PluginOptions options_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  mutable uint64_t wakes_ = 0;            // bumped by Wake, so a waiter returns
  DeviceTable devices_;                   // guarded by mu_ (health changes)
  uint64_t version_ = 1;                  // guarded by mu_
  std::vector<bool> daemon_failed_;       // by position; guarded by mu_
  std::unique_ptr<GangChoices> choices_;  // set before serving, then only read
};

}  // namespace toposched::deviceplugin
