// The `rails` choice point as plugin objects: whether the search puts the ranks that talk across
// nodes on common rails beyond what the cost model prices. The rules are documented at
// PlacementPlugins::rails. A plugin sees the search through RailHandle.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plugins/rail_ranks.h"
#include "plugins/search_handle.h"
#include "plugins/slots.h"

namespace toposched::sched {

class RailPlugin : public Plugin<RailRule> {
 public:
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
