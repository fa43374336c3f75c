// The cluster of the Alibaba openb trace, built from its node list (openb_node_list_*.csv:
// sn, cpu_milli, memory_mib, gpu, model). The trace has no network or intra-node topology, so
// both are assumed and documented (docs/simulator.md): 8-GPU V100 nodes are DGX-1-like hybrid
// cube-mesh, every other GPU node is PCIe only; one 100 Gb/s RoCE NIC per node; leaves of 32
// nodes in list order, non-blocking, under one spine. Knows nothing of jobs or the scheduler.
#pragma once

#include <string>

#include "core/status.h"
#include "topo/cluster.h"

namespace toposched::sim {

// The cluster spec (YAML, docs/cluster-spec.md) for a node list. Nodes without GPUs are left
// out. InvalidArgument `file:line: column "gpu": ...` for a malformed row, a duplicate node name
// or a list without GPU nodes.
StatusOr<std::string> OpenbNodesToClusterYaml(const std::string& text, const std::string& source);

// Reads the node list and builds the (finalized) cluster. NotFound when unreadable.
StatusOr<topo::Cluster> ReadOpenbNodeList(const std::string& path);

// True when the file's first line is an openb node-list header (starts with "sn,").
bool LooksLikeOpenbNodeList(const std::string& path);

}  // namespace toposched::sim
