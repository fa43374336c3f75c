// The gang placer's options: its plugins (the policy as data), its search limits, the node
// selector's and the cost model's options, and its seed.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "cost/cost_model.h"
#include "plugins/registry.h"
#include "select/node_select.h"

namespace toposched::sched {

struct GangPlacerOptions {
  PlacementPlugins plugins;
  // Candidate domains scored with the cost model per level (best fit first).
  int max_candidate_domains = 4;
  // Tied single-node candidates (same leftover) whose predicted time is compared.
  int max_node_evaluations = 8;
  // Placements scored by the "local-search" refine plugin per candidate plan (times half the
  // plan's node count, rounded up), and the distinct
  // nodes outside the plan (by profile, free GPUs and leaf) it may move GPUs to.
  int max_refine_evaluations = 32;
  int max_refine_nodes = 32;
  NodeSelectOptions node_select;
  // The cost model's algorithm choices (default: all).
  cost::CostModelOptions cost_model;
  // Seeds the "random" node rule's draws (with the job's name and the free GPU count).
  uint64_t seed = 1;
  // Ranks come in one block per node, nodes in id order: for a launcher that numbers ranks node
  // by node (srun's block distribution; the Slurm integration sets it). Off: a placement may put
  // two stages that are not neighbours on one node (stages placed on nodes that share rails).
  bool ranks_in_node_blocks = false;
  // InvalidArgument unless the plugins are known with finite weights ≥ 0, the limits are in
  // [1, 1024] (max_refine_evaluations in [0, 100000]) and node_select is valid.
  Status Validate() const;
};

}  // namespace toposched::sched
