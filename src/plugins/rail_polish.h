// The rails plugin "align"'s last step: the chosen multi-node placement's GPUs polished against
// the score itself. It sees the search through RailHandle.
#pragma once

#include "plugins/rail_ranks.h"
#include "plugins/search_handle.h"

namespace toposched::sched {

// On a cluster whose rails are priced (h.RailsAligned()), with a priced GPU choice, for a
// multi-node plan of a job with DP or stages: the placement's GPUs polished against the score
// (the rail passes count neighbour pairs on one rail; the cost model prices each island of a DP
// group against the rails of the next): moves that keep every node's GPU count (a rank to a free
// GPU of its node the placement does not use; with TP or stages, two ranks of one node trade
// GPUs), each round the best that lowers the weighted score, while one does and within
// max_refine_evaluations scorings per node of the plan. Skipped where every NIC already reaches
// the next island on its own rail (rail_polish.cc). Replaces `p` and `score` and returns true
// when it finds better.
bool PolishRails(const RailHandle& h, const GangPlan& plan, Placement& p, double& score);

}  // namespace toposched::sched
