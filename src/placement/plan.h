// A plan of the gang search: GPU counts per node, before the GPUs and ranks are chosen.
#pragma once

#include <utility>
#include <vector>

namespace toposched::sched {

// A chosen set of GPU counts per node, in fill order.
struct GangPlan {
  std::vector<std::pair<int, int>> chunks;  // (node, GPUs)
  int frag = 0;                             // GPUs left free in partly used nodes
};

}  // namespace toposched::sched
