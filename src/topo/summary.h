// Human-readable summaries of a node topology and a cluster (what `toposched topo show` and
// `toposched cluster check` print). Pure formatting: no I/O.
#pragma once

#include <string>

#include "topo/cluster.h"
#include "topo/node_topology.h"

namespace toposched::topo {

// NVLink islands, NUMA layout, the nearest NIC of every GPU, and the path matrix.
std::string FormatTopologySummary(const NodeTopology& t);
// Nodes, GPUs, profiles, the network tree per level, rails and NVLink domains.
std::string FormatClusterSummary(const Cluster& c);

}  // namespace toposched::topo
