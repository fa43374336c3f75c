// The daemon's view of this node's GPUs' health: a GPU the daemon holds failed (a health report
// `unhealthy`, e.g. from the node agent or an operator, on which it drained and moved the jobs
// there) is offered to the kubelet as Unhealthy too, so that no pod is given it. Read from the
// daemon's node list (GET /api/v1/nodes, docs/api.md). Knows nothing of HTTP or gRPC.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace toposched::deviceplugin {

// The positions (NodeTopology::gpus order, as the daemon numbers them) of `node`'s GPUs whose
// health in the daemon's `{"nodes": [...]}` answer is "unhealthy" ("degraded" GPUs stay
// offered: the daemon still places jobs on them). InvalidArgument naming the field for a body
// that is not that answer; NotFound when the daemon has no node `node`; FailedPrecondition when
// the daemon's node has another GPU count than `gpus` (its topology is not this node's, so its
// positions cannot be trusted).
StatusOr<std::vector<int>> DaemonFailedGpus(std::string_view nodes_json, const std::string& node,
                                            int gpus);

}  // namespace toposched::deviceplugin
