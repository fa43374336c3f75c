// Before a job runs: the NCCL transport each hop of its placement is predicted to use, and the
// environment that keeps NCCL on the NICs the placement pairs with its ranks. So a fallback to
// TCP, or network traffic without GPUDirect RDMA, is seen before it happens (docs/diagnose.md).
#pragma once

#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "placement/placement.h"

namespace toposched::sched {

// One kind of hop in one dimension: how many of the group's ring hops use it, and one of them.
struct HopTransport {
  std::string dimension;  // "TP", "PP" or "DP"
  std::string transport;  // cost::TransportName ("NVLink", "PCIe P2P", "SHM", "NET/IB",
                          // "NET/Socket"), "NET/IB" + " without GPUDirect RDMA" when the GPU
                          // and its NIC do not share a PCIe switch
  int hops = 0;           // hops of rank 0's group ring with this transport
  std::string example;    // "gpu001/GPU3 -> gpu002/GPU3"
  std::string via;        // network hops: the two ranks' NICs ("mlx5_3 -> mlx5_3"); else ""
};

struct TransportPlan {
  std::vector<HopTransport> hops;     // TP, then PP, then DP; per dimension fastest first
  std::string nccl_ib_hca;            // the NICs the ranks use ("mlx5_0,...": NCCL_IB_HCA), or ""
  std::vector<std::string> warnings;  // a network hop on NET/Socket or without GPUDirect RDMA
};

// Rank 0's TP, PP and DP groups (the groups the placement's score prices), each as the ring of
// its members in rank order: every hop between consecutive members (the last back to the first)
// classed by the cost model — within a node the GPU pair's transport (NodeCostModel), across
// nodes the sending GPU's network transport through its NIC. Dimensions of size 1 have no hop.
// O(group sizes).
TransportPlan PredictTransports(const cost::CostModel& cost, const Placement& p,
                                const job::Layout& layout);

}  // namespace toposched::sched
