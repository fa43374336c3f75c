// Which of a job's communication groups the network makes slowest, judged by shape alone.
//
// Every TP group, every DP group and every pair of neighbouring pipeline stages communicate at
// once in a synchronous training step, and the step waits for the slowest of each kind. Pricing
// every group with the cost model costs one evaluation per group (up to TP·PP DP groups); these
// helpers find, in one O(world) pass, the group whose shape is worst, so that the score prices
// it beside rank 0's group. A shape is worse when the group reaches higher in the network (a
// spine before a leaf, a leaf before a multi-node NVLink domain, that before one node), then
// when its thinnest node holds fewer of its ranks (fewer GPUs and NICs carry that node's share
// of a ring or tree), then when it spans more nodes.
#pragma once

#include <vector>

#include "job/job_spec.h"
#include "placement/placement.h"
#include "topo/cluster.h"

namespace toposched::sched {

struct GroupShape {
  // How close the group's nodes are: levels.size() + 2 on one node, levels.size() + 1 inside
  // one multi-node NVLink domain, else the level index where all its nodes meet (0 the top;
  // -1 for nodes under different roots).
  int reach = 0;
  int thinnest = 0;  // fewest of the group's ranks on one of its nodes
  int nodes = 0;     // distinct nodes
  // True when this shape is worse than `o` (the order above).
  bool WorseThan(const GroupShape& o) const;
};

// The shape of the group of `members` (rank indexes into `ranks`). `scratch` is reused.
GroupShape ShapeOfGroup(const topo::Cluster& cluster, const std::vector<RankSlot>& ranks,
                        const std::vector<int>& members, std::vector<int>& scratch);

// A rank of the DP group whose shape is worse than rank 0's DP group's (the worst such, the
// first among equals); -1 when none is worse. Likewise for TP groups, and for the pairs of
// neighbouring stages (the returned rank r sends to r + TP·DP).
int WorstDpGroupRank(const topo::Cluster& cluster, const job::Layout& l,
                     const std::vector<RankSlot>& ranks);
int WorstTpGroupRank(const topo::Cluster& cluster, const job::Layout& l,
                     const std::vector<RankSlot>& ranks);
int WorstPpPairRank(const topo::Cluster& cluster, const job::Layout& l,
                    const std::vector<RankSlot>& ranks);

}  // namespace toposched::sched
