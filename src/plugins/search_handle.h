// What a refine or rail plugin may ask of the gang search that calls it (the search implements
// both handles; a test may too): the state of one Place call, seen through an interface the way
// a scheduler framework's plugin sees the framework through its handle. Knows nothing of how
// the search is built.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "placement/placement.h"
#include "placement/plan.h"
#include "state/gpu_mask.h"
#include "topo/cluster.h"

namespace toposched::sched {

// The placer's search limits a refine or rail plugin obeys (GangPlacerOptions' fields of the
// same names, copied by the search).
struct SearchLimits {
  int max_refine_evaluations = 32;
  int max_refine_nodes = 32;
  bool ranks_in_node_blocks = false;
};

// What a refine plugin may ask of the search that calls it: the state of one Place call.
class RefineHandle {
 public:
  virtual ~RefineHandle() = default;
  virtual const topo::Cluster& cluster() const = 0;
  virtual const cost::CostModel& cost() const = 0;
  virtual const job::Layout& layout() const = 0;
  // The placer's search limits (max_refine_nodes, max_refine_evaluations, ranks_in_node_blocks).
  virtual const SearchLimits& limits() const = 0;
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

}  // namespace toposched::sched
