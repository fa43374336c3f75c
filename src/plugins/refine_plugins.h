// The `refine` choice point as plugin objects: what happens to a multi-node plan (its GPU count
// per node) before it is scored against the other candidates. The rules are documented at
// PlacementPlugins::refine. A plugin sees the search only through RefineHandle, the way a
// scheduler framework's plugin sees the framework through its handle.
#pragma once

#include <string>
#include <vector>

#include "plugins/search_handle.h"
#include "plugins/slots.h"

namespace toposched::sched {

class RefinePlugin : public Plugin<RefineRule> {
 public:
  // Whether the plugin changes plans at all. Only for a refining plugin does the search ask for
  // StartPlans, weigh multi-node plans against a slower single node, and on a cluster of several
  // hardware profiles search the domains with each profile alone; with the rails plugin "align"
  // it also adds that plugin's plans on shared rails, stage-by-stage rail placements and polish.
  virtual bool refines() const = 0;
  // Improves `plan`, whose placement is `p` with weighted score `score`, moving GPUs only
  // between nodes of `region`; replaces all three when it finds better. The first `home` nodes
  // of `region` are the candidate domain.
  virtual void Refine(const RefineHandle& h, const std::vector<int>& region, size_t home,
                      GangPlan& plan, Placement& p, double& score) const = 0;
  // Starting plans beside the node plugin's, for the search to price and refine the best of:
  // over the candidate domain's nodes `domain` and over `region`, the nodes local search may
  // use, whose first domain.size() are `domain` (plugins/refine_starts.h). The search asks only
  // when refines() and when the node plugin's plan is not settled (RefineHandle::Settled).
  virtual std::vector<GangPlan> StartPlans(const RefineHandle& h, const std::vector<int>& domain,
                                           const std::vector<int>& region) const = 0;
};

// The registered refine plugins, in registry order (the order of RefineRule).
const std::vector<const RefinePlugin*>& RefinePlugins();

}  // namespace toposched::sched
