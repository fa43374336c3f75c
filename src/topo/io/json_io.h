// JSON writer and reader for the whole model (node topology and cluster). Lossless:
// import -> JSON -> import gives an equal model. Errors name the JSON path of the bad field.
#pragma once

#include <string>

#include "core/status.h"
#include "topo/cluster.h"
#include "topo/node_topology.h"

namespace toposched::topo::io {

// The documented output of `toposched topo import`: gpus, nics, links (one per unordered
// device pair: {"a","b","path","nvlinks"}), numa_nodes, pcie_switches, host_bridges, ...
std::string TopologyToJson(const NodeTopology& t, int indent = 2);
StatusOr<NodeTopology> TopologyFromJson(std::string_view text, const std::string& source);

std::string ClusterToJson(const Cluster& c, int indent = 2);
StatusOr<Cluster> ClusterFromJson(std::string_view text, const std::string& source);

}  // namespace toposched::topo::io
