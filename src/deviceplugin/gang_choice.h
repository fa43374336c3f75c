// The gang placement's GPUs reaching the container: when the kubelet asks for a container's
// preferred devices, find the pod it is admitting (the API server's pods bound to this node) and
// answer the GPUs the scheduler extender chose for it at bind (the choice annotation); when that
// cannot be done (no lookup, no such pod, no or a bad annotation, devices not available) say why,
// so the plugin falls back to its own optimum, logged and counted. Knows nothing of gRPC or HTTP
// (the pod list comes from an injected function).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "deviceplugin/devices.h"
#include "deviceplugin/node_pods.h"

namespace toposched::deviceplugin {

// The PodList JSON of the pods bound to this node (api::ListNodePods in the daemon set).
using PodListFn = std::function<StatusOr<std::string>()>;

// Why a container request falls back to the plugin's own choice; the metric's reason label.
enum class ChoiceFallback {
  kLookupFailed,  // the pod list could not be read or parsed
  kNoPod,         // no pod on this node waits for these devices
  kNoChoice,      // the pod being admitted carries no choice (not bound by the extender)
  kBadChoice,     // its choice is malformed, or names another count than the pod asks
  kUnavailable,   // a chosen GPU is not on this node, not available, or must-include differs
  kCount
};
const char* ChoiceFallbackName(ChoiceFallback f);  // "lookup_failed", "no_pod", ...

struct ChoiceAnswer {
  bool followed = false;         // ids are the extender's choice
  std::vector<std::string> ids;  // device ids, in the choice's (rank) order
  std::string pod;               // the pod being admitted, "" when none was found
  ChoiceFallback fallback = ChoiceFallback::kNoPod;  // when !followed
  std::string reason;                                // when !followed, for the log
};

// Thread-safe. The pod being admitted: the kubelet admits the pods bound to it one at a time in
// creation order, and calls GetPreferredAllocation then Allocate for each container of a pod
// before it admits the next; so it is the oldest pod (creationTimestamp, then namespace/name)
// that is Pending without status.startTime, asks this resource, and has not had all its devices
// allocated yet as far as this plugin saw (Allocate calls are counted against the pod chosen for
// them). After a plugin restart that count starts again at 0: a pod admitted just before it,
// whose status the kubelet has not written yet, is still taken for the one being admitted; its
// devices are then not available and the answer falls back (kUnavailable).
class GangChoices {
 public:
  GangChoices(PodListFn list, std::string resource_name, std::string annotation)
      : list_(std::move(list)),
        resource_(std::move(resource_name)),
        annotation_(std::move(annotation)) {}

  // For one container request of `size` devices among `available` (must include
  // `must_include`). Never fails: a problem is a fallback with its reason.
  ChoiceAnswer Choose(const DeviceTable& devices, std::span<const std::string> available,
                      std::span<const std::string> must_include, int size);
  // Allocate gave `count` devices to a container: they count against the pod chosen last for a
  // request of that size, else against the pod being admitted now.
  void NoteAllocated(int count);

  int64_t followed() const;
  int64_t fallbacks(ChoiceFallback f) const;
  // The counters in the Prometheus text format (toposched_device_plugin_gang_choices_total,
  // toposched_device_plugin_gang_fallbacks_total{reason}).
  std::string MetricsText() const;

 private:
  // The pods listed, or the reason they are not (with `fallback` set).
  StatusOr<std::vector<NodePod>> ListPods();
  // The pod being admitted among `pods` (given_ pruned to them), null when none; mu_ held.
  const NodePod* Admitting(const std::vector<NodePod>& pods);
  ChoiceAnswer Fallback(ChoiceAnswer a, ChoiceFallback f, std::string reason);

  PodListFn list_;
  std::string resource_;
  std::string annotation_;
  mutable std::mutex mu_;
  std::map<std::string, int> given_;  // pod uid -> devices Allocate gave its containers
  std::string last_uid_;              // the pod chosen by the last request ...
  int last_size_ = 0;                 // ... and its size
  int64_t followed_ = 0;
  int64_t fallbacks_[static_cast<int>(ChoiceFallback::kCount)] = {};
};

}  // namespace toposched::deviceplugin
