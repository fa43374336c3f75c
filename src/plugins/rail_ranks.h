// Ranks and rails: which neighbouring ranks sit on nodes whose nearest NICs share a rail, the
// rails of a rank, and ranks laid on one node's GPUs. What the rail plugins build on and what
// the price of a placement counts (plugins/price.h: the DP group with the most neighbours across
// rails).
#pragma once

#include <vector>

#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "placement/placement.h"
#include "placement/plan.h"
#include "topo/cluster.h"

namespace toposched::sched {

// Which neighbours rail alignment puts on a common rail: DP neighbours (ranks r - TP and r: the
// same TP index and stage, consecutive DP indexes), or pipeline neighbours (ranks r - TP·DP and
// r: the same TP and DP indexes, consecutive stages).
enum class RailPeers { kDp, kPp };

// Neighbours of kind `peers` on different nodes: how many pairs there are, and, for DP, per DP
// class (TP index + TP·stage) how many of them share no rail (empty when none does). One pass
// over the ranks, O(world).
struct RailPairs {
  int pairs = 0;
  int crossed = 0;
  std::vector<int> crossed_by_class;
};
RailPairs CountRailPairs(const cost::CostModel& cost, const job::Layout& l,
                         const std::vector<RankSlot>& ranks, RailPeers peers = RailPeers::kDp);

// A rank's DP class: its TP index and stage (the ranks of one DP group share it).
inline int DpClass(const job::Layout& l, int rank) {
  return rank % l.tp + l.tp * (rank / (l.tp * l.dp));
}
// The rails of the NICs nearest `r`'s GPU (those below the cluster's rail count), added to
// `rails` once each.
void AddRails(const cost::CostModel& cost, std::vector<int>& rails, const RankSlot& r);
// The GPUs of ranks base .. base + k - 1, in rank order.
std::vector<int> GpuOrder(const std::vector<RankSlot>& ranks, int base, int k);
// Ranks base .. base + k - 1 on `node`'s GPUs `order`, each with its nearest NIC (AssignNics).
void PlaceOnNode(const topo::Cluster& c, std::vector<RankSlot>& ranks, int node, int base,
                 const std::vector<int>& order);

// A placement built stage by stage on shared rails (RailPlugin::StagePlacements): its ranks,
// which a GangPlan cannot express (they are not contiguous per node), and the plan of its GPU
// count per node that goes with it (for fragmentation and the domain checks).
struct RailPlacement {
  GangPlan plan;
  Placement p;
};

}  // namespace toposched::sched
