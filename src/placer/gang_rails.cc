// The gang placer's rail work that needs its node selector: one node's ranks aligned to the rails
// their peers use (for the rail plugin, plugins/rail_plugins.h), and the explanation's rail count.
#include "placer/gang_search.h"

namespace toposched::sched::gang_internal {

bool Search::AlignRails(int node, const NodeRequest& req, const std::vector<std::vector<int>>& want,
                        std::vector<int>& order) const {
  const int k = static_cast<int>(order.size());
  const int rails = c_.rails.count;
  const cost::NodeCostModel& nm = cost_.node_model(node);
  auto matches = [&](int slot, int g) {
    const std::vector<int>& w = want[slot];
    for (int c : nm.NicsOf(g)) {
      if (c >= 0 && c < rails && std::find(w.begin(), w.end(), c) != w.end()) {
        return true;
      }
    }
    return false;
  };
  auto count = [&](const std::vector<int>& o) {
    int n = 0;
    for (int i = 0; i < k; ++i) n += matches(i, o[i]) ? 1 : 0;
    return n;
  };
  int wanted = 0;
  for (int i = 0; i < k; ++i) wanted += want[i].empty() ? 0 : 1;
  const int have = count(order);
  if (have == wanted) return false;

  const NodeSelector& sel = *selectors_[c_.nodes[node].profile];
  auto time = [&](const std::vector<int>& o) {
    GpuMask set;
    for (int g : o) set.set(g);
    NodeRequest whole = req;
    whole.tp = 1;
    double ms = sel.SetTimeMs(set, whole);
    if (req.tp > 1) {
      NodeRequest group;
      group.gpus = req.tp;
      group.dp_bytes = req.tp_bytes;
      double worst = 0;
      for (int first = 0; first < k; first += req.tp) {
        GpuMask m;
        for (int i = first; i < first + req.tp; ++i) m.set(o[i]);
        worst = std::max(worst, sel.SetTimeMs(m, group));
      }
      ms += worst;
    }
    return ms;
  };
  auto distinct_nics = [&](const std::vector<int>& o) {
    std::vector<int> all;
    for (int g : o) all.insert(all.end(), nm.NicsOf(g).begin(), nm.NicsOf(g).end());
    std::sort(all.begin(), all.end());
    return std::unique(all.begin(), all.end()) - all.begin();
  };
  // Slot by slot from `pool` (GPUs in preference order): keep a GPU that already shares a rail
  // with its peers, give each other slot the first unused GPU that does, fill the rest in pool
  // order.
  auto build = [&](const std::vector<int>& pool) {
    std::vector<int> out(k, -1);
    std::vector<char> used(pool.size(), 0);
    auto take = [&](int slot, size_t j) {
      out[slot] = pool[j];
      used[j] = 1;
    };
    for (int i = 0; i < k; ++i) {
      if (matches(i, order[i]))
        take(i, std::find(pool.begin(), pool.end(), order[i]) - pool.begin());
    }
    for (int i = 0; i < k; ++i) {
      if (out[i] >= 0 || want[i].empty()) continue;
      for (size_t j = 0; j < pool.size(); ++j) {
        if (!used[j] && matches(i, pool[j])) {
          take(i, j);
          break;
        }
      }
    }
    size_t next = 0;
    for (int i = 0; i < k; ++i) {
      if (out[i] >= 0) continue;
      while (used[next]) ++next;
      take(i, next);
    }
    return out;
  };
  const double base_ms = time(order) * (1 + 1e-9) + 1e-12;
  std::vector<int> best = order;
  int best_have = have;
  std::vector<int> same = build(order);
  if (int n = count(same); n > best_have && time(same) <= base_ms) {
    best = std::move(same);
    best_have = n;
  }
  if (best_have < wanted) {
    std::vector<int> pool = order;
    const GpuMask& free = state_.FreeMask(node);
    for (int g = 0; g < state_.GpuCount(node); ++g) {
      if (free.test(g) && std::find(order.begin(), order.end(), g) == order.end()) {
        pool.push_back(g);
      }
    }
    if (pool.size() > order.size()) {
      std::vector<int> other = build(pool);
      if (int n = count(other);
          n > best_have && time(other) <= base_ms && distinct_nics(other) >= distinct_nics(order)) {
        best = std::move(other);
        best_have = n;
      }
    }
  }
  if (best_have == have) return false;
  order = std::move(best);
  return true;
}

std::string Search::RailNote(const Placement& p) const {
  if (c_.rails.count <= 0 || p.parts.size() < 2 || job_.layout.dp < 2) return "";
  const RailPairs all = CountRailPairs(cost_, job_.layout, p.ranks);
  if (all.pairs == 0) return "";
  return "; DP neighbours across nodes on one rail: " + std::to_string(all.pairs - all.crossed) +
         "/" + std::to_string(all.pairs);
}

}  // namespace toposched::sched::gang_internal
