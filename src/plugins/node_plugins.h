// The `nodes` choice point as plugin objects: how a job's GPUs are taken from the nodes of the
// chosen domain, and which node holds a job that fits on one. The rules are documented at
// PlacementPlugins::nodes. "spread" and "random" place GPU by GPU (placer/scatter.h); the gang
// search never asks them (a job that is one pod is placed by "least-allocated" instead).
#pragma once

#include <string>
#include <vector>

#include "plugins/slots.h"

namespace toposched::sched {

class NodePlugin : public Plugin<NodeRule> {
 public:
  // Places GPU by GPU, topology ignored (placer/scatter.h).
  virtual bool scatters() const { return false; }

  // How much of `need` each bin (a node, or an NVLink domain) takes, given what each can hold;
  // empty when they hold less than `need` together. Ties go to the lowest bin index.
  virtual std::vector<int> Take(const std::vector<int>& caps, int need) const = 0;

  // Whether the search's scores choose the node for a job that one node holds ("best-fit": the
  // fullest nodes that hold it, compared by predicted time and fragmentation); then OneNode is
  // not asked.
  virtual bool ScoresOneNode() const { return false; }
  // The node for a job of `need` GPUs that one node holds, by this rule alone: an index into
  // `free` (per node its free GPUs, -1 where the job may not go); -1 when none has `need` free.
  virtual int OneNode(const std::vector<int>& free, int need) const = 0;
};

// The registered node plugins, in registry order (the order of NodeRule).
const std::vector<const NodePlugin*>& NodePlugins();

// Greedy bin choice ("best-fit"): while the rest fits in one bin, take the smallest such bin;
// otherwise take the largest bin whole. Returns the amount per bin; empty when sum < need.
// Ties go to the lowest bin index. O(bins + largest cap) via a counting sort of the bins by
// capacity (descending, index ascending): the bins taken whole are a prefix of that order and
// the best-fit bin is found by binary search in the rest.
std::vector<int> PickBins(const std::vector<int>& caps, int need);

}  // namespace toposched::sched
