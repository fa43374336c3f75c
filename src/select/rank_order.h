// From a chosen GPU set in rank order to what a launcher needs: the NIC, NUMA node and CPU list
// of every rank, the environment to export (CUDA_VISIBLE_DEVICES, NCCL_IB_HCA, NUMA binding)
// and warnings where the placement forces a slow path. Knows nothing of how the set was chosen
// or of costs.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "topo/node_topology.h"

namespace toposched::sched {

struct RankPlacement {
  int rank = 0;
  int gpu = 0;        // position in NodeTopology::gpus
  int gpu_index = 0;  // Gpu::index, as nvidia-smi numbers it
  int tp_group = 0;   // ranks [g·tp, (g+1)·tp) form TP group g; 0 without TP
  int nic = -1;       // position in NodeTopology::nics; -1 = the node has none
  std::optional<topo::Path> nic_path;
  std::optional<int> numa;
  std::vector<int> cpus;   // CPU list to bind to; empty = unknown
  bool gpudirect = false;  // GPUDirect RDMA possible: NIC at PIX or PXB
};

struct RankLayout {
  std::vector<RankPlacement> ranks;
  std::vector<std::pair<std::string, std::string>> env;  // in a fixed, documented order
  std::vector<std::string> warnings;
};

// NIC per rank (positions in t.nics, -1 when none): each GPU gets one of its nearest healthy
// NICs (best path class); ranks with fewer nearest candidates choose first, and each takes its
// least-used candidate, so no two ranks share a NIC while an equally near one is unused (ties:
// the lowest NIC). O(k · nics · log k).
std::vector<int> AssignNics(const topo::NodeTopology& t, std::span<const int> order);

// Lays out ranks for GPU positions in rank order; `tp` > 1 marks consecutive TP groups.
// Environment, in this order (a variable is left out when nothing is known for it):
//   CUDA_DEVICE_ORDER=PCI_BUS_ID      so CUDA ordinals are nvidia-smi indices
//   CUDA_VISIBLE_DEVICES=3,1,0,2      GPU indices in rank order (local rank i → device i)
//   NCCL_IB_HCA==mlx5_0,mlx5_3        exact-match list of the ranks' RDMA NICs, first-use order
//                                     (NICs the input names only "NIC<i>" are left out)
//   TOPOSCHED_NUMA_NODES=0,0,1,1      NUMA node per local rank (-1 unknown)
//   TOPOSCHED_CPU_LISTS=0-23;0-23;... CPU list per local rank, ';'-separated (numactl -C / taskset)
// Warnings: ranks whose NIC is not at PIX/PXB (no GPUDirect RDMA); no InfiniBand/RoCE NIC
// (NCCL falls back to TCP sockets between nodes); a TP group spanning sockets (GPUs on
// different NUMA nodes or a SYS path inside the group).
RankLayout LayOutRanks(const topo::NodeTopology& t, std::span<const int> order, int tp);

}  // namespace toposched::sched
