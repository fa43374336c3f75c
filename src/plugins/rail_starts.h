// What the rails plugin "align" builds on shared rails, beside the refine plugin's starting plans:
// plans whose nodes share a set of rails (rail_mask_plans.cc), and placements built stage by
// stage on shared rails (rail_stage_placements.cc). Both see the search through RailHandle.
#pragma once

#include <cstddef>
#include <vector>

#include "plugins/rail_ranks.h"
#include "plugins/search_handle.h"

namespace toposched::sched {

// Bounds of both: rails and nodes with room beyond which they build nothing (the rail sets are
// enumerated as bit masks of the rails).
inline constexpr int kMaxMaskRails = 8;
inline constexpr int kMaxMaskNodes = 64;

// On a cluster whose rails are priced (h.RailsAligned()), for a job with DP: plans whose nodes
// share a set of rails (an island reaches the next on its own rails only where the next has a
// NIC on each of its rails, and which nodes' free GPUs share rails is what the other starts do
// not look at). Per share s of a node (a multiple of the TP unit), the s rails that most nodes
// of `region` have free GPUs on, and world / s such nodes (the first `home` of `region` first,
// then the fullest), each s GPUs plus the rest of the job one unit at a time. None with more
// than kMaxMaskRails rails or kMaxMaskNodes nodes with room, or for TP groups inside NVLink
// domains.
std::vector<GangPlan> RailMaskPlans(const RailHandle& h, const std::vector<int>& region,
                                    size_t home);

// On a cluster whose rails are priced, for a job with DP: a placement built stage by stage on
// what the earlier stages left. Per stage, candidate rail sets R (each node's unused rails, and
// per size the set the most nodes hold); per R the nodes of `region` by how much of R they hold
// (then the first `home` of `region`, then the least room), and the fewest of them whose
// pieces, as even as their room allows and each on its rails of R first, lowest rail first (so
// that the pieces' rail sets nest), reach the target: the slowest island's rate to its ring
// neighbours, in NICs at full rate, priced as cost::CostModel prices an island's link. The
// target is the highest such rate every stage reaches (a binary search over stage 0's options'
// rates; a greedy build, so not always the highest there is). Per stage the option with the
// fewest nodes, then the fewest unused rails on them; a second placement ranks the two the
// other way round. A node may hold GPUs of two stages that are not neighbours: the ranks are
// not contiguous per node, which a GangPlan cannot express (the search fills nodes in turn). A
// GPU serves its first NIC's rail only, one GPU per rail of a node. Scored; unrefined. Empty
// where the rails are not priced, beyond kMaxMaskRails rails or kMaxMaskNodes nodes with room,
// without DP, for TP groups inside NVLink domains or spanning nodes, without a priced GPU
// choice, with ranks_in_node_blocks, or when a stage finds no nodes with room.
std::vector<RailPlacement> StageRailPlacements(const RailHandle& h, const std::vector<int>& region,
                                               size_t home);

}  // namespace toposched::sched
