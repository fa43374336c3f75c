// What the placer reads of a job and a node before it searches: the key of a job's placement
// shape, the filters' views of a node, and the node selector's request for part of a job.
#pragma once

#include <string>

#include "job/job_spec.h"
#include "select/node_select.h"
#include "topo/node_topology.h"

namespace toposched::sched {

// Everything about a job that its placement depends on (layout, traffic, constraints), as a
// key: two specs with the same key get the same verdict on the same state.
std::string PlacementShapeKey(const job::JobSpec& job);

// The filters' views of a node: its GPU model (node-wide, else its first GPU's; "" when
// unknown) and whether a healthy NIC speaks InfiniBand or RoCE.
const std::string& NodeGpuModel(const topo::NodeTopology& t);
bool HasRdma(const topo::NodeTopology& t);

// The node-selector request for `gpus` GPUs of a job with this layout, TP groups of `tp` (1 =
// none) inside the node; negative byte counts count as 0.
NodeRequest NodeRequestFor(const job::Layout& layout, int gpus, int tp);

}  // namespace toposched::sched
