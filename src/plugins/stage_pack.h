// Counts per node that give every pipeline stage thick pieces of its nodes.
//
// Ranks are filled node by node, stage after stage (rank = tp + TP·(dp + DP·stage)), so the
// counts per node decide which nodes each stage lands on and how many of its units (TP groups
// when each sits on one node, else GPUs) each holds. A stage's DP groups are as slow as their
// thinnest node (placement/group_shape.h), and a stage continued onto a node of another lowest
// domain sends its DP traffic up the network. StagePackCounts finds, by dynamic programming over
// (node, units placed, domain of the stage in progress), counts whose every piece is at least m
// units for the largest m that allows it.
#pragma once

#include <cstdint>
#include <vector>

namespace toposched::sched {

struct PackSlot {
  int cap = 0;        // units the node can take
  int group = 0;      // its lowest network domain, numbered from 0
  bool away = false;  // beyond the nodes preferred (the candidate domain)
  // For StagePackByBandwidth: the node's NICs and the rate one of them gives (GB/s).
  int nics = 0;
  double nic_gbps = 0;
};

// Slots are in fill order. Among the counts whose pieces are all ≥ m, the chosen ones have the
// fewest crossings (a stage's next node in another group than its previous one: a stage over
// groups 0, 1, 0 counts two), then the fewest away nodes, then the fewest nodes, then the fewest
// units left free on the nodes used. Returns the counts for the largest
// feasible m; when those split a node between two stages, also the counts for the same m with
// the fewest such nodes after crossings and away nodes (present only when it has fewer: a split
// node carries two stages' DP traffic through its NICs at once); and, when the first counts make
// a stage cross groups, the counts for the largest m with no crossing stage (may be absent). A job
// of one stage is one DP group: its pieces are its nodes' shares, and the last counts keep it
// inside one group. Empty when nothing fits, for no stage, for fewer than two slots, for a negative
// cap or group, when max_work exceeds 2^20 (the cost's weights stop being lexicographic there), or
// when slots × (units + 1) × (groups + 1) × largest cap exceeds `max_work`.
std::vector<std::vector<int>> StagePackCounts(const std::vector<PackSlot>& slots, int stage_units,
                                              int stages, int64_t max_work);

// Thickness as network bandwidth, for nodes of several hardware profiles: a piece of p units
// (unit_gpus GPUs each) on a slot that takes t units in all is p · min(unit_gpus, nics / t) ·
// nic_gbps, its share of the node's NICs (a NIC per GPU while the GPUs do not outnumber them),
// and a stage whole on one node has no network piece and always holds. A stage's DP
// groups are as slow as their piece with the least network bandwidth, which on a node with one
// NIC for 8 GPUs is no thicker with 7 GPUs than with 1, and thinner when another stage shares
// the node. The counts for the largest thickness
// every piece can have, ties as StagePackCounts' first. Empty on StagePackCounts' conditions,
// for unit_gpus < 1, or when a slot with room has no NIC figures.
std::vector<int> StagePackByBandwidth(const std::vector<PackSlot>& slots, int stage_units,
                                      int stages, int unit_gpus, int64_t max_work);

// Pieces of any size (m = 1): the counts with the fewest away nodes, then the fewest crossings,
// then the fewest nodes, then the fewest units left free. Where the thickest pieces would take
// nodes the caller would rather leave (another hardware profile), the plan that takes fewest.
// Empty on StagePackCounts' conditions.
std::vector<int> StagePackFewestAway(const std::vector<PackSlot>& slots, int stage_units,
                                     int stages, int64_t max_work);

}  // namespace toposched::sched
