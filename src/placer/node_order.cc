#include "placer/node_order.h"

#include <utility>

#include "plugins/price.h"

namespace toposched::sched {

bool NodeOrderMatters(const job::Layout& l) {
  return (l.pp > 1 && l.pp_bytes > 0) || (l.tp > 1 && l.dp > 1 && l.dp_bytes > 0);
}

std::vector<int> ImproveNodeOrder(const cost::CostModel& cost, const job::Layout& layout, int node,
                                  std::vector<int> order) {
  const int k = static_cast<int>(order.size());
  if (k < 2 || k != layout.WorldSize()) return order;
  Placement p;
  for (int i = 0; i < k; ++i) p.ranks.push_back(RankSlot{i, node, order[i], -1});
  if (!ScorePlacement(cost, layout, p).ok()) return order;
  double now = p.predicted_ms;
  for (int round = 0; round < k; ++round) {
    int best_i = -1, best_j = -1;
    double best = now * (1 - 1e-9);
    for (int i = 0; i < k; ++i) {
      for (int j = i + 1; j < k; ++j) {
        std::swap(p.ranks[i].gpu, p.ranks[j].gpu);
        if (ScorePlacement(cost, layout, p).ok() && p.predicted_ms < best) {
          best = p.predicted_ms;
          best_i = i;
          best_j = j;
        }
        std::swap(p.ranks[i].gpu, p.ranks[j].gpu);
      }
    }
    if (best_i < 0) break;
    std::swap(p.ranks[best_i].gpu, p.ranks[best_j].gpu);
    std::swap(order[best_i], order[best_j]);
    now = best;
  }
  return order;
}

}  // namespace toposched::sched
