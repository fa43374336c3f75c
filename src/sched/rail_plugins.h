// The `rails` choice point as plugin objects: whether the search puts the ranks that talk across
// nodes on common rails beyond what the cost model prices. The rules are documented at
// PlacementPlugins::rails. A plugin sees the search through RailHandle.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sched/gang.h"
#include "sched/gang_plan.h"
#include "sched/placement_plugins.h"
#include "sched/refine_plugins.h"

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

// What a rail plugin may ask of the search that calls it: all a refine plugin may (the rail polish
// and the plans on shared rails score and count like local search; TpInNvlinkDomains stops the
// plans and placements built on shared rails, StartPlans and StagePlacements, not alignment or
// the polish) and the rest below.
class RailHandle : public RefineHandle {
 public:
  // The plan's k GPUs on `node` in rank order (`order`), given `want[i]`, the rails the i-th
  // rank's peers on other nodes use: among reorderings of the set and other free sets of the
  // node that are no slower inside the node (and, for another set, use as many NICs), the one
  // where the most ranks share a rail with their peers. True when `order` changed.
  virtual bool AlignNode(int node, int k, const std::vector<std::vector<int>>& want,
                         std::vector<int>& order) const = 0;
  // The most GPUs on one node of the cluster.
  virtual int MaxNodeGpus() const = 0;
  // Whether the policy's GPU plugin prices GPU sets with the cost model ("cost-model"): only
  // then is a node's choice of GPUs and their rank order the search's to improve.
  virtual bool GpusPriced() const = 0;
  // q.parts rebuilt from q.ranks (the plan's chunks hold its ranks in order) and q scored by the
  // cost model; false where the cost model refuses.
  virtual bool Rescore(const GangPlan& plan, Placement& q) const = 0;
  // A placement whose ranks and parts are set, scored by the cost model.
  virtual bool Price(Placement& p) const = 0;
};

class RailPlugin {
 public:
  virtual ~RailPlugin() = default;
  virtual RailRule rule() const = 0;
  // The registry name ("align").
  virtual const std::string& name() const = 0;
  // Whether the plugin works for rails where the cluster's rails are priced (RailsPriced): the
  // search reads it as RailHandle::RailsAligned, which gates StartPlans, StagePlacements and
  // Polish here and, in the search itself, the rails' scope level as a candidate domain and
  // local search's tie-break on DP hops across rails.
  virtual bool aligns() const = 0;
  // Other rank orders of a multi-node plan's `ranks` worth pricing, each different from it and
  // from the others (the search keeps the fastest; empty: none). Asked on every cluster with
  // rails, priced or not, for the "cost-model" GPU choice.
  virtual std::vector<std::vector<RankSlot>> Alignments(
      const RailHandle& h, const GangPlan& plan, const std::vector<RankSlot>& ranks) const = 0;
  // Starting plans for local search beside the node plugin's and the refine plugin's, over
  // `region`, whose first `home` nodes are the candidate domain (empty: none).
  virtual std::vector<GangPlan> StartPlans(const RailHandle& h, const std::vector<int>& region,
                                           size_t home) const = 0;
  // Placements that compete with the refined and polished best one, over the same region.
  virtual std::vector<RailPlacement> StagePlacements(const RailHandle& h,
                                                     const std::vector<int>& region,
                                                     size_t home) const = 0;
  // Improves the chosen multi-node placement `p` of `plan` (weighted score `score`) keeping its
  // GPU count per node; replaces `p` and `score` and returns true when it finds better.
  virtual bool Polish(const RailHandle& h, const GangPlan& plan, Placement& p,
                      double& score) const = 0;
};

// The registered rail plugins, in registry order (the order of RailRule).
const std::vector<const RailPlugin*>& RailPlugins();

}  // namespace toposched::sched
