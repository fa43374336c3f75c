// The `gpus` choice point as plugin objects: which free GPUs of a node a job's share of it takes.
// "cost-model" is priced: the gang search asks the node selector for the exact optimum under the
// cost model (select/node_select.h) and, with the rails plugin "align", aligns ranks to rails; the
// others choose from the free
// GPUs alone (what a device plugin hands out). The rules are documented at
// PlacementPlugins::gpus.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "plugins/slots.h"
#include "topo/node_topology.h"

namespace toposched::sched {

class GpuPlugin : public Plugin<GpuRule> {
 public:
  // Whether the choice is the node selector's under the cost model (then Choose is not asked:
  // the search prices sets, orders ranks, aligns rails (rails "align") and refines plans with
  // the selector).
  virtual bool priced() const { return false; }
  // Whether Choose costs enough that its answers are worth caching by (profile, free set, k).
  virtual bool costly() const { return false; }
  // k of `free` (the node's free GPUs, ascending), ascending; empty when fewer than k are free.
  virtual std::vector<int> Choose(const topo::NodeTopology& node, std::span<const int> free,
                                  int k) const = 0;
};

// The registered GPU plugins, in registry order (the order of GpuRule).
const std::vector<const GpuPlugin*>& GpuPlugins();

}  // namespace toposched::sched
