// The pods bound to this node as the device plugin needs them to find the one the kubelet is
// admitting: identity, creation time, whether the kubelet has taken it already, how many of the
// plugin's devices it asks, and the GPU choice the extender wrote on it at bind. Read from the
// API server's PodList JSON (GET /api/v1/pods?fieldSelector=spec.nodeName=NODE). Knows nothing
// of gRPC, of HTTP or of selection.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace toposched::deviceplugin {

struct NodePod {
  std::string uid;
  std::string name;         // "<namespace>/<name>"
  std::string created;      // metadata.creationTimestamp, RFC 3339 in UTC as the API server
                            // writes it ("2024-03-31T09:03:25Z"): text order is time order
  bool taken = false;       // phase other than Pending, or status.startTime set: the kubelet
                            // admitted it (or ended it) already
  int requested = 0;        // the resource over the pod's containers (limits, else requests)
  bool has_choice = false;  // the choice annotation is present
  std::string choice;       // its value, unparsed
};

// The pods of a PodList, in the list's order. InvalidArgument naming the item and field
// ("items[2].spec.containers[0].resources.limits[nvidia.com/gpu]: expected a whole number of
// devices, got \"1.5\"") for a body that is not a PodList or a pod field of the wrong type.
// Unknown fields are ignored (the API server adds fields over versions).
StatusOr<std::vector<NodePod>> ReadNodePods(std::string_view pod_list_json,
                                            const std::string& resource_name,
                                            const std::string& choice_annotation);

// The GPU indices of a choice annotation ("4,5,6,7", Gpu::index in rank order). InvalidArgument
// naming the annotation for an empty list, an entry that is not a non-negative integer, or an
// index given twice.
StatusOr<std::vector<int>> ParseChoice(std::string_view value, const std::string& annotation);

}  // namespace toposched::deviceplugin
