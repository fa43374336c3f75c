// Alpha-beta cost model of NCCL-style collectives on a concrete GPU set (one node or many):
// ring / tree / hierarchical AllReduce, AllGather, ReduceScatter, AllToAll, Send/Recv. Reports
// time in ms, algorithm and bus bandwidth, and the bottleneck hop with the transport NCCL would
// use. Rates and latencies come from data tables (data/hardware/*.json), never literals.
// Knows nothing of jobs or scheduling policy.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/cost_tables.h"
#include "cost/node_cost.h"
#include "cost/types.h"
#include "topo/cluster.h"
#include "topo/hardware.h"
#include "topo/node_topology.h"

namespace toposched::cost {

// Which algorithms Algorithm::kAuto may choose from.
struct CostModelOptions {
  bool allow_nvls = true;  // consider NVLS for AllReduce where the hardware has it
  // With allow_nvls: also NVLS-tree across nodes (off where a consumer cannot bound it yet,
  // e.g. the placement-quality oracle, tests/sched/ilp_oracle.h).
  bool allow_nvls_tree = true;
  bool allow_tree = true;
  bool allow_hierarchical = true;
  Status Validate() const { return OkStatus(); }
};

// The cost model over a cluster. Holds a pointer to the cluster, which must outlive it, and a
// NodeCostModel per hardware profile (built in the constructor: O(profiles · g²)).
// Immutable after construction; const methods are safe from many threads.
class CostModel {
 public:
  using Options = CostModelOptions;

  explicit CostModel(const topo::Cluster& cluster, Options options = {},
                     const CostTables& tables = CostTables::Default(),
                     const topo::HardwareTable& hw = topo::HardwareTable::Default());

  // A one-node cluster around a topology (GPU names print without a node prefix). The model
  // owns the cluster it builds.
  static std::unique_ptr<CostModel> ForNode(
      const topo::NodeTopology& topology, Options options = {},
      const CostTables& tables = CostTables::Default(),
      const topo::HardwareTable& hw = topo::HardwareTable::Default());

  // Time of `collective` moving `bytes` (nccl-tests convention: the per-rank buffer size; the
  // AllGather/ReduceScatter output/input size) over `gpus` in this rank order (ring collectives
  // may reorder within a node to the best ring). kAuto picks the fastest applicable algorithm.
  // InvalidArgument: empty set, duplicate GPU, node/GPU out of range, bytes < 0, an algorithm
  // that does not apply (NVLS off a switched fabric, tree for non-AllReduce, ...).
  // Cost: O(k) for GPUs on switched fabrics; O(2^m m²) for m ≤ 10 GPUs of one node on direct
  // links (exact ring search), heuristic beyond; plus O(k) for the network part.
  StatusOr<Estimate> Evaluate(Collective collective, std::span<const GpuRef> gpus, double bytes,
                              Algorithm algorithm = Algorithm::kAuto) const;

  // Evaluate's time_ms alone, the same number and the same errors, without naming GPUs, NICs
  // or hops and without the rank order: no strings and no hop list are built, for callers that
  // price many sets and read only the time (the placer's score).
  StatusOr<double> TimeMs(Collective collective, std::span<const GpuRef> gpus, double bytes,
                          Algorithm algorithm = Algorithm::kAuto) const;

  // Rails (topo::Cluster::rails): whether GPU a has a nearest NIC on a rail, and whether GPUs a
  // and b have nearest NICs on one rail (NCCL sends a GPU's network traffic through those NICs).
  // False on a cluster without rails. O(NICs per GPU²).
  bool OnRail(const GpuRef& a) const;
  bool SameRail(const GpuRef& a, const GpuRef& b) const;

  const topo::Cluster& cluster() const { return *cluster_; }
  const NodeCostModel& node_model(int node) const;
  const CostTables& tables() const { return tables_; }

 private:
  struct Island;      // cost/prepared.h
  struct Prepared;    // cost/prepared.h
  class Collectives;  // one model per collective × algorithm (cost/collectives.cc)
  // detail: name the hops and keep the rank order (Evaluate); without it the hops, bottleneck
  // and order stay empty and the rest of the estimate is the same (TimeMs).
  StatusOr<Estimate> Run(Collective collective, std::span<const GpuRef> gpus, double bytes,
                         Algorithm algorithm, bool detail) const;
  // The set checked and grouped into islands, each with its ring and its network share
  // (cost/prepare.cc).
  StatusOr<Prepared> Prepare(std::span<const GpuRef> gpus, bool detail) const;
  Status CheckSet(std::span<const GpuRef> gpus, Prepared& p) const;
  void GroupIslands(std::span<const GpuRef> gpus, Prepared& p) const;
  void PrepareNodeIsland(std::span<const GpuRef> gpus, bool detail, bool multi_node,
                         Island& isl) const;
  void PrepareDomainIsland(std::span<const GpuRef> gpus, bool detail, Island& isl) const;
  void AddIslandNetwork(std::span<const GpuRef> gpus, bool detail, bool multi_node,
                        Island& isl) const;
  std::string GpuName(const GpuRef& g, bool multi_node) const;

  std::unique_ptr<topo::Cluster> owned_;
  const topo::Cluster* cluster_;
  Options options_;
  CostTables tables_;
  std::vector<NodeCostModel> profile_models_;  // by profile index
};

}  // namespace toposched::cost
