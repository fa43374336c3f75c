// The `rails` choice point as plugin objects: whether the search puts the ranks that talk across
// nodes on common rails beyond what the cost model prices. The rules are documented at
// PlacementPlugins::rails. A plugin sees the search through RailHandle.
#pragma once

#include <string>
#include <vector>

#include "sched/gang.h"
#include "sched/gang_plan.h"
#include "sched/placement_plugins.h"

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

// What a rail plugin may ask of the search that calls it.
class RailHandle {
 public:
  virtual ~RailHandle() = default;
  virtual const topo::Cluster& cluster() const = 0;
  virtual const cost::CostModel& cost() const = 0;
  virtual const job::Layout& layout() const = 0;
  // The plan's k GPUs on `node` in rank order (`order`), given `want[i]`, the rails the i-th
  // rank's peers on other nodes use: among reorderings of the set and other free sets of the
  // node that are no slower inside the node (and, for another set, use as many NICs), the one
  // where the most ranks share a rail with their peers. True when `order` changed.
  virtual bool AlignNode(int node, int k, const std::vector<std::vector<int>>& want,
                         std::vector<int>& order) const = 0;
};

class RailPlugin {
 public:
  virtual ~RailPlugin() = default;
  virtual RailRule rule() const = 0;
  // The registry name ("align").
  virtual const std::string& name() const = 0;
  // Whether the search works for rails where the cluster's rails are priced (RailsPriced): the
  // plans built on shared rails, the rail polish of the chosen plan, the rails' scope level as a
  // candidate domain, and local search's tie-break on DP hops across rails.
  virtual bool aligns() const = 0;
  // Other rank orders of a multi-node plan's `ranks` worth pricing, each different from it and
  // from the others (the search keeps the fastest; empty: none). Asked on every cluster with
  // rails, priced or not, for the "cost-model" GPU choice.
  virtual std::vector<std::vector<RankSlot>> Alignments(
      const RailHandle& h, const GangPlan& plan, const std::vector<RankSlot>& ranks) const = 0;
};

// The registered rail plugins, in registry order (the order of RailRule).
const std::vector<const RailPlugin*>& RailPlugins();

}  // namespace toposched::sched
