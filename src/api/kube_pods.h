// Reading the pods bound to one node from the Kubernetes API server (GET /api/v1/pods with the
// field selector spec.nodeName=NODE): what the device plugin asks when the kubelet admits a pod,
// to find the GPUs the extender chose for it (docs/kubernetes.md, "How the gang's choice reaches
// the container"). Knows nothing of what the pods mean.
#pragma once

#include <string>

#include "api/kube_client.h"
#include "core/status.h"

namespace toposched::api {

// A node's pod list is at most a few MiB (the kubelet's default is 110 pods per node, a pod
// object tens of KiB); 16 MiB bounds what one answer may take.
inline constexpr size_t kMaxNodePodListBytes = size_t{16} << 20;

// The PodList JSON text of the pods whose spec.nodeName is `node`, read from the API server
// (a consistent read: resourceVersion unset). InvalidArgument for a node name that is not a
// DNS-1123 name; NotFound when the token cannot be read; Unavailable when the server cannot be
// reached or answers other than 200 (with its Status message), or the answer exceeds
// kMaxNodePodListBytes.
StatusOr<std::string> ListNodePods(const KubeApiOptions& options, const std::string& node);

}  // namespace toposched::api
