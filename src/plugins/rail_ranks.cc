#include "plugins/rail_ranks.h"

#include <algorithm>

#include "select/rank_order.h"

namespace toposched::sched {

RailPairs CountRailPairs(const cost::CostModel& cost, const job::Layout& l,
                         const std::vector<RankSlot>& ranks, RailPeers peers) {
  RailPairs out;
  const int n = static_cast<int>(ranks.size());
  const bool dp = peers == RailPeers::kDp;
  const int stride = dp ? l.tp : l.tp * l.dp;
  for (int r = stride; r < n; ++r) {
    if (dp && (r / l.tp) % l.dp == 0) continue;
    const RankSlot& a = ranks[r - stride];
    const RankSlot& b = ranks[r];
    if (a.node == b.node) continue;
    ++out.pairs;
    if (!cost.SameRail({a.node, a.gpu}, {b.node, b.gpu})) {
      ++out.crossed;
      if (!dp) continue;
      if (out.crossed_by_class.empty()) {
        out.crossed_by_class.assign(static_cast<size_t>(l.tp) * l.pp, 0);
      }
      ++out.crossed_by_class[DpClass(l, r)];
    }
  }
  return out;
}

void AddRails(const cost::CostModel& cost, std::vector<int>& rails, const RankSlot& r) {
  const int count = cost.cluster().rails.count;
  for (int c : cost.node_model(r.node).NicsOf(r.gpu)) {
    if (c >= 0 && c < count && std::find(rails.begin(), rails.end(), c) == rails.end()) {
      rails.push_back(c);
    }
  }
}

std::vector<int> GpuOrder(const std::vector<RankSlot>& ranks, int base, int k) {
  std::vector<int> order(k);
  for (int i = 0; i < k; ++i) order[i] = ranks[base + i].gpu;
  return order;
}

void PlaceOnNode(const topo::Cluster& c, std::vector<RankSlot>& ranks, int node, int base,
                 const std::vector<int>& order) {
  const std::vector<int> nics = AssignNics(c.topology(node), order);
  for (size_t i = 0; i < order.size(); ++i) {
    ranks[base + i] = RankSlot{base + static_cast<int>(i), node, order[i], nics[i]};
  }
}

}  // namespace toposched::sched
