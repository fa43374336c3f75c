// The starting plans the refine plugin "local-search" builds for the search to price and refine,
// beside the node plugin's plan (plugins/refine_plugins.h: RefinePlugin::StartPlans). Each sees the
// search through RefineHandle; each is empty where TP groups sit inside NVLink domains.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plugins/search_handle.h"

namespace toposched::sched {

// Plans that spread the job as evenly as the nodes allow over the m nodes of `region` with the
// most room, for the smallest m that holds it and the next two.
std::vector<GangPlan> BalancedPlans(const RefineHandle& h, const std::vector<int>& region);
// Plans whose first node (the lowest id, where rank 0 and its TP and DP groups start) is one
// of the roomiest nodes of `region`, filled as far as it goes, the rest best fit on nodes
// after it.
// Anchors come from the first `home` nodes of `region` (the candidate domain).
std::vector<GangPlan> AnchoredPlans(const RefineHandle& h, const std::vector<int>& region,
                                    size_t home);
// Plans whose pipeline stages start on node boundaries: every node of the plan takes a
// multiple of g GPUs, g the stage (TP·DP GPUs) or, for a stage larger than the nodes, the
// largest piece of it a node can hold (g divides the stage; a multiple of the TP unit), best
// fit over `nodes`. Each stage's DP groups then span as few nodes as the free GPUs allow, in
// equal pieces. The two largest such g with a plan; none for a job of one stage.
std::vector<GangPlan> StageAlignedPlans(const RefineHandle& h, const std::vector<int>& nodes);
// Plans that cut each stage into the fewest pieces a node can hold, as even as the TP unit
// allows (a 10-GPU stage on 8-GPU nodes: 6 + 4), and give the pieces, stage after stage, to the
// nodes of `nodes` in id order, each node as many whole pieces as it has room for. The pieces
// largest first and smallest first; none for a job of one stage or for pieces all alike
// (StageAlignedPlans covers those).
std::vector<GangPlan> StagePiecePlans(const RefineHandle& h, std::vector<int> nodes);
// Plans whose stages' pieces are as large as `region` allows: counts per node in id order
// (the order ranks are filled) such that every node's share of every stage it holds is at
// least m units (TP groups when each sits on one node, else GPUs). A stage's DP groups are as
// slow as their thinnest node (GroupShape); cutting stages at node boundaries (StageAlignedPlans,
// StagePiecePlans) can leave a stage a thin piece of a node where other counts would not.
// Among the counts for one m: fewest crossings (a stage's next node under another lowest
// domain than its previous one),
// then fewest nodes beyond the first `home` of `region`, then fewest nodes, then fewest units
// left free on them. The plan for the largest feasible m; when it splits a node between two
// stages, the one for the same m with the fewest such nodes; when its stages cross domains,
// the one for the largest m whose stages do not (plugins/stage_pack.h); for a job of one stage,
// the thickest shares per node, and the thickest inside one domain. On nodes of several
// hardware profiles also the thickest plan by network bandwidth (StagePackByBandwidth) and,
// per profile, the plan with the fewest nodes of the others (pieces of any size;
// StagePackFewestAway). None when the packer's
// work would exceed kStagePackWork on `region` and on its first `home` nodes alike (on a
// large region the candidate domain alone is packed).
std::vector<GangPlan> StagePackPlans(const RefineHandle& h, const std::vector<int>& region,
                                     size_t home);
// Bounds StagePackPlans' dynamic program (nodes × (units + 1) × (domains + 1) × largest node,
// per value of m tried): a few hundred microseconds at most, so large jobs on large regions,
// whose plans the other starts build in linear time, skip it.
inline constexpr int64_t kStagePackWork = int64_t{1} << 16;

}  // namespace toposched::sched
