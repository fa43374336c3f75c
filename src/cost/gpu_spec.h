// Text forms the cost command line uses: message sizes ("1GiB") and GPU sets on a node
// ("0-7", "0,2,4") or across a cluster ("gpu001:0-7,gpu002:0-7", "gpu[001-002]"). Pure
// functions over a topology/cluster; no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "cost/types.h"
#include "topo/cluster.h"
#include "topo/node_topology.h"

namespace toposched::cost {

// "1048576", "1GiB"/"512MiB"/"64KiB" (1024^k), "1GB"/"500MB" (1000^k), "1G"/"512M"/"64K"
// (1024^k, as nccl-tests -b/-e read them), an optional "B"/space. InvalidArgument otherwise or
// when negative/over 2^50.
StatusOr<double> ParseByteSize(std::string_view s);
// 1073741824 -> "1 GiB", 1000 -> "1000 B", 1536 -> "1.5 KiB".
std::string FormatBytes(double bytes);

// GPUs of one node by index as the topology names them (GPU<index>): "0-7", "0,2,4", "all".
// Returns positions in NodeTopology::gpus, in the order written (ranges ascending).
// InvalidArgument: unknown index, duplicates, empty.
StatusOr<std::vector<int>> ParseNodeGpuSpec(const topo::NodeTopology& t, std::string_view spec);

// GPUs of a cluster. Items separated by commas outside brackets:
//   host:list     GPUs `list` (indices, ranges) of host; host may be a host list
//                 ("gpu[001-002]:0-3" = GPUs 0-3 of each)
//   host          every GPU of host (or of every host of a host list "gpu[001-004]")
//   list item     a bare index or range after "host:..." continues that host's list
//                 ("gpu001:0,2,4,gpu002:1" = GPUs 0,2,4 of gpu001 and 1 of gpu002)
//   all           every GPU of the cluster
// InvalidArgument: unknown host or GPU index, duplicates, empty.
StatusOr<std::vector<GpuRef>> ParseClusterGpuSpec(const topo::Cluster& c, std::string_view spec);

}  // namespace toposched::cost
