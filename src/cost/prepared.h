// Internal to src/cost: a GPU set prepared for the collective models (its islands: the GPUs
// that share one NVLink fabric, in ring order, with their rates inside and on the network), the
// candidate estimate each model returns, and the models themselves (CostModel::Collectives:
// one function per collective × algorithm over the prepared islands, cost/collectives.cc).
// Included by the cost model's own sources only.
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/numeric.h"
#include "core/status.h"
#include "cost/cost_model.h"

namespace toposched::cost {

// Milliseconds to move `bytes` at `gbps` GB/s.
inline double Ms(double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e9) * 1e3 : kInf; }

// GPUs of the set that share one NVLink fabric: a node, or the nodes of one multi-node NVLink
// domain. Collectives cross between islands over the network.
struct CostModel::Island {
  int nvlink_domain = -1;    // -1: a single node
  std::vector<int> members;  // indices into the input, in ring order once prepared
  std::vector<int> nodes;    // distinct nodes, first-seen order
  // Inside the island.
  double ring_gbps = kInf;    // ring capacity (kInf for one GPU)
  double sum_latency_us = 0;  // Σ alpha over the ring's hops
  Hop ring_hop;               // the ring's bottleneck hop
  double nvls_busbw = 0;      // 0: no NVLS
  double min_port_eff = 0;    // switched fabric: smallest port × efficiency (0: not switched)
  bool fabric = false;        // every member on one switched fabric
  double alpha_intra_us = 0;  // mean per-hop alpha inside
  // Network side.
  double net_gbps = 0;  // Σ distinct NICs the members use (× efficiency, GDR, socket cap)
  Transport net_transport = Transport::kNetIB;
  std::string nics;                // NIC names for hops
  std::vector<double> share_gbps;  // per member (same order): its NIC's GB/s / GPUs sharing it
  // Rails (Cluster::rails): per distinct NIC the members use, its rail (-1: not on a rail) and
  // GB/s before the socket cap; their sum; the rails used, sorted.
  std::vector<std::pair<int, double>> rail_gbps;
  double raw_net_gbps = 0;
  std::vector<int> rails;
  bool HasRail(int r) const { return std::binary_search(rails.begin(), rails.end(), r); }
};

struct CostModel::Prepared {
  std::vector<Island> islands;
  int n = 0;
  int nodes = 0;
  bool multi_node = false;
};

// The network bandwidth a group of GPUs (`members`, indices into `gpus`) has together. Each
// distinct NIC counts once, at the best rate any member gets through it: NCCL sends a channel's
// network traffic through the GPU closest to the NIC. `share`: what each member gets through
// its own NICs when every member sends at once (NICs split evenly among the members that have
// them). NET/Socket is capped per node.
struct NetShare {
  double total = 0;
  bool socket = false;
  std::vector<double> share;
  std::vector<std::string> names;
  std::vector<std::pair<int, double>> nic_gbps;  // per distinct NIC: its position, GB/s
};
// names: fill NetShare::names (NIC names, node-prefixed with prefix_node); without it they stay
// empty and nothing else changes.
NetShare ComputeNet(const CostModel& model, std::span<const GpuRef> gpus,
                    const std::vector<int>& members, bool prefix_node, bool names);

// One algorithm's estimate of a collective on the prepared set.
struct Candidate {
  Algorithm algorithm = Algorithm::kRing;
  double time_ms = kInf;
  Hop bottleneck;
  std::vector<Hop> hops;
  std::vector<int> order;  // input indices
};

// The collective models over one prepared set (`p`, of `gpus`), for one collective moving
// `bytes`; `detail` names hops and keeps the rank order (Evaluate), else only times and rates
// are computed (TimeMs). Holds references: it lives inside one CostModel::Run call.
class CostModel::Collectives {
 public:
  Collectives(const CostModel& model, const Prepared& p, std::span<const GpuRef> gpus,
              Collective collective, double bytes, bool detail);

  // The candidates `algorithm` asks for (kAuto: every one the options allow and the set
  // supports); InvalidArgument when an explicitly asked algorithm cannot run on this set.
  StatusOr<std::vector<Candidate>> Candidates(Algorithm algorithm) const;

  // One model per collective × algorithm; nullopt where the algorithm does not apply.
  Candidate RingAllReduce() const;
  Candidate RingAllGather() const;
  Candidate RingReduceScatter() const;
  Candidate TreeAllReduce() const;
  std::optional<Candidate> NvlsTreeAllReduce() const;
  std::optional<Candidate> HierarchicalAllReduce() const;
  std::optional<Candidate> NvlsAllReduce() const;
  Candidate DirectAllToAll() const;
  Candidate DirectSendRecv() const;

 private:
  // The double binary tree across islands (tree and NVLS-tree).
  struct Across {
    std::vector<double> algbw;  // per island, GB/s
    std::vector<Hop> bottleneck;
    std::vector<Hop> hops;
    double alpha_us = 0;
  };

  Candidate Ring(double traffic) const;
  Across TreeAcross() const;
  // The shared builder of links and hops.
  std::string Name(int m) const;
  double Link(int a, int b) const;
  double GpuFactor(const GpuRef& x, const GpuRef& y) const;
  Hop IntraHop(int a, int b) const;
  Hop NetHop(int from_island, int a, int b, double gbps) const;
  void NvswitchHops(const Island& isl, Candidate& c) const;

  const CostModel& m_;
  const Prepared& p_;
  std::span<const GpuRef> gpus_;
  Collective collective_;
  double bytes_;
  bool detail_;
  int n_;                        // GPUs in the set
  int ni_;                       // islands
  double base_ms_;               // every collective's base latency
  bool multi_;                   // the set spans nodes (GPU names carry the node)
  bool rails_;                   // the cluster's rails are priced
  std::vector<int> ring_order_;  // islands' members in ring order (detail only)
};

}  // namespace toposched::cost
