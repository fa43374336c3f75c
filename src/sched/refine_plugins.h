// The `refine` choice point as plugin objects: what happens to a multi-node plan (its GPU count
// per node) before it is scored against the other candidates. The rules are documented at
// PlacementPlugins::refine. A plugin sees the search only through RefineHandle, the way a
// scheduler framework's plugin sees the framework through its handle.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sched/gang.h"
#include "sched/gang_plan.h"
#include "sched/gpu_mask.h"
#include "sched/placement_plugins.h"

namespace toposched::sched {

// What a refine plugin may ask of the search that calls it: the state of one Place call.
class RefineHandle {
 public:
  virtual ~RefineHandle() = default;
  virtual const topo::Cluster& cluster() const = 0;
  virtual const cost::CostModel& cost() const = 0;
  virtual const job::Layout& layout() const = 0;
  // The placer's search limits (max_refine_nodes, max_refine_evaluations).
  virtual const GangPlacerOptions& limits() const = 0;
  // The GPUs a move carries: a TP group where each sits on one node, else 1.
  virtual int unit() const = 0;
  // A node's free GPUs.
  virtual int FreeOn(int node) const = 0;
  // Per node of the cluster, by node id, the free GPUs the job may use (0 where it may not go):
  // one call for loops over many nodes; CapOn for one node.
  virtual std::span<const int> Caps() const = 0;
  int CapOn(int node) const { return Caps()[node]; }
  // A node's hardware profile (an index into Cluster::profiles) and free GPU set: two nodes
  // alike in both and in their lowest network domain differ only in their id.
  virtual int ProfileOf(int node) const = 0;
  virtual const GpuMask& FreeMaskOf(int node) const = 0;
  // The GPUs of `node`, free or not.
  virtual int GpusOn(int node) const = 0;
  // Whether the job's TP groups are larger than a node and laid out inside NVLink domains (then
  // no start is built and nothing is refined). Else a TP group sits on one node when unit() is
  // TP, and may span nodes when unit() is 1 below a TP above 1.
  virtual bool TpInNvlinkDomains() const = 0;
  // A plan that other count vectors could only spread over more nodes or domains (many whole
  // free nodes of one kind under one domain): not worth refining.
  virtual bool Settled(const GangPlan& plan) const = 0;
  // The plan's placement, ranks ordered and scored by the cost model; nullopt where a node
  // refuses.
  virtual std::optional<Placement> Build(const GangPlan& plan) const = 0;
  // The policy's weighted score of a built placement that leaves `frag` GPUs free on partly
  // used nodes (lower is better).
  virtual double ScoreOf(const Placement& p, int frag) const = 0;
  // Whether the policy's rail plugin aligns ranks to rails on a cluster whose rails are priced
  // (then a move that scores the same and crosses rails fewer times is taken too).
  virtual bool RailsAligned() const = 0;

  // Adds k GPUs of `node` to `plan`, counting the GPUs it leaves free there as fragmentation.
  void AddChunk(GangPlan& plan, int node, int k) const {
    plan.chunks.emplace_back(node, k);
    const int free = FreeOn(node);
    if (free > k) plan.frag += free - k;
  }
};

class RefinePlugin {
 public:
  virtual ~RefinePlugin() = default;
  virtual RefineRule rule() const = 0;
  // The registry name ("local-search").
  virtual const std::string& name() const = 0;
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
  // use, whose first domain.size() are `domain` (sched/refine_starts.h). The search asks only
  // when refines() and when the node plugin's plan is not settled (RefineHandle::Settled).
  virtual std::vector<GangPlan> StartPlans(const RefineHandle& h, const std::vector<int>& domain,
                                           const std::vector<int>& region) const = 0;
};

// The registered refine plugins, in registry order (the order of RefineRule).
const std::vector<const RefinePlugin*>& RefinePlugins();

}  // namespace toposched::sched
