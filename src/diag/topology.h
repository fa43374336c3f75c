// Diagnosis: what the node's hardware says about a network cause — its RDMA NICs (name, rate,
// link layer), the NCCL_IB_HCA value that keeps NCCL on them, and the cost model's predicted
// AllReduce time over NET/IB against NET/Socket. Reads the topology; knows nothing of logs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::diag {

// The node a diagnosis is tied to: its name (a cluster node name, or the topology file) and
// topology.
struct NodeContext {
  std::string node_name;
  topo::NodeTopology topology;
};

struct NetworkAdvice {
  std::vector<std::string> rdma_nics;  // IB/RoCE NICs (or unknown link layer with an RDMA name)
  std::string rdma_description;        // "mlx5_0..mlx5_7 (8 × 400 Gb/s ib)"; "" when none
  std::string nccl_ib_hca;             // "mlx5_0,mlx5_1,..." ("" when none)
  // The cost model's 1 GiB AllReduce over two such nodes (all GPUs), each NIC as the topology
  // says vs every NIC used through NET/Socket; absent when the node has no GPU or no NIC.
  std::optional<double> ib_ms;
  std::optional<double> socket_ms;
};

// O(cost-model evaluation of 2 × GPUs); never fails: missing facts stay empty.
NetworkAdvice AdviseNetwork(const NodeContext& node);

}  // namespace toposched::diag
