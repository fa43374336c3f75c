// Alpha-beta cost model of NCCL-style collectives on a concrete GPU set (one node or many):
// ring / tree / hierarchical AllReduce, AllGather, ReduceScatter, AllToAll, Send/Recv. Reports
// time in ms, algorithm and bus bandwidth, and the bottleneck hop with the transport NCCL would
// use. Rates and latencies come from data tables (data/hardware/*.json), never literals.
// Knows nothing of jobs or scheduling policy.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "topo/cluster.h"
#include "topo/node_topology.h"

namespace toposched::cost {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
enum class Algorithm { kAuto, kRing, kTree, kHierarchical };
enum class Transport { kNVLink, kPcieP2P, kShm, kNetIB, kNetSocket };

const char* CollectiveName(Collective c);   // "allreduce", ...
StatusOr<Collective> ParseCollective(std::string_view s);
const char* AlgorithmName(Algorithm a);     // "ring", "tree", "hierarchical", "auto"
StatusOr<Algorithm> ParseAlgorithm(std::string_view s);
const char* TransportName(Transport t);     // "NVLink", "PCIe P2P", "SHM", "NET/IB", "NET/Socket"

// One GPU of the cluster: node id (index into Cluster::nodes, 0 for a lone node) and the GPU's
// position in that node's NodeTopology::gpus.
struct GpuRef {
  int node = 0;
  int gpu = 0;
  bool operator==(const GpuRef&) const = default;
};

struct Hop {
  std::string from, to;       // "GPU3", "gpu017/GPU3", NIC names for network hops
  std::string path;           // "NV18", "PIX", ..., "NET" across nodes
  Transport transport = Transport::kNVLink;
  double bandwidth_gbps = 0;  // GB/s the hop gets in this collective (after sharing)
};

struct Estimate {
  double time_ms = 0;
  double algbw_gbps = 0;      // bytes / time, GB/s
  double busbw_gbps = 0;      // algbw × the collective's bus factor (nccl-tests convention)
  Algorithm algorithm = Algorithm::kRing;
  Hop bottleneck;
};

}  // namespace toposched::cost
