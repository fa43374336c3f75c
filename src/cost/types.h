// Vocabulary of the cost model: collectives, algorithms, transports, GPU references, hops and
// estimates. Plain value types; no topology knowledge. Included by cost/cost_model.h, which is
// the header users include.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace toposched::cost {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
// kNvls: NVLink SHARP (in-switch reduction, NVSwitch gen3+ / NVLink 4+), AllReduce only, all
// GPUs in one switched NVLink fabric (a node or a multi-node NVLink domain).
// kNvlsTree: NVLS inside each of 2+ such fabrics, NCCL's double binary tree across them.
// kDirect: pairwise sends (AllToAll, Send/Recv), the only algorithm those two have.
enum class Algorithm { kAuto, kRing, kTree, kHierarchical, kNvls, kNvlsTree, kDirect };
enum class Transport { kNVLink, kPcieP2P, kShm, kNetIB, kNetSocket };

const char* CollectiveName(Collective c);  // "allreduce", ...
// Accepts allreduce|all_reduce|all-reduce (same for the others), sendrecv|p2p.
StatusOr<Collective> ParseCollective(std::string_view s);
// "ring", "tree", "hierarchical", "nvls", "nvls-tree", "direct", "auto"
const char* AlgorithmName(Algorithm a);
StatusOr<Algorithm> ParseAlgorithm(std::string_view s);
const char* TransportName(Transport t);  // "NVLink", "PCIe P2P", "SHM", "NET/IB", "NET/Socket"
// nccl-tests bus factor: allreduce 2(n-1)/n, allgather/reducescatter/alltoall (n-1)/n,
// sendrecv 1. 0 for n < 2.
double BusFactor(Collective c, int n);

// One GPU of the cluster: node id (index into Cluster::nodes, 0 for a lone node) and the GPU's
// position in that node's NodeTopology::gpus.
struct GpuRef {
  int node = 0;
  int gpu = 0;
  bool operator==(const GpuRef&) const = default;
};

struct Hop {
  std::string from, to;  // "GPU3", "gpu017/GPU3", NIC names for network hops
  std::string path;      // "NV18", "PIX", ..., "NET" across nodes
  Transport transport = Transport::kNVLink;
  double bandwidth_gbps = 0;  // GB/s the hop gets in this collective (after sharing)
  std::string via;            // NICs used by a network hop ("mlx5_0>mlx5_0"), else empty
};

struct Estimate {
  double time_ms = 0;
  double algbw_gbps = 0;  // bytes / time, GB/s
  double busbw_gbps = 0;  // algbw × the collective's bus factor (nccl-tests convention)
  Algorithm algorithm = Algorithm::kRing;
  Hop bottleneck;
  // Extensions of the lead's contract:
  int ranks = 0;              // GPUs in the set
  int nodes = 0;              // distinct nodes
  std::vector<Hop> hops;      // every hop of the chosen algorithm (ring edges in ring order)
  std::vector<GpuRef> order;  // rank order the estimate assumes (ring order for ring)
};

}  // namespace toposched::cost
