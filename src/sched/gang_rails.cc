// The gang placer's rail alignment: DP neighbours on different nodes put on a common rail.
#include "sched/gang_search.h"

namespace toposched::sched::gang_internal {

int Search::CrossedRailPairs(const std::vector<RankSlot>& ranks) const {
  return CountRailPairs(cost_, job_.layout, ranks).crossed;
}

void Search::AlignToRails(const Plan& plan, std::vector<RankSlot>& ranks) const {
  const size_t classes = static_cast<size_t>(job_.layout.tp) * job_.layout.pp;
  auto add_rails = [&](std::vector<std::vector<int>>& class_rails, const RankSlot& r) {
    std::vector<int>& rails = class_rails[DpClass(r.rank)];
    for (int c : cost_.node_model(r.node).NicsOf(r.gpu)) {
      if (c >= 0 && c < c_.rails.count && std::find(rails.begin(), rails.end(), c) == rails.end()) {
        rails.push_back(c);
      }
    }
  };
  auto apply = [&](std::vector<RankSlot>& out, int node, int base, const std::vector<int>& order) {
    const std::vector<int> nics = AssignNics(c_.topology(node), order);
    for (size_t i = 0; i < order.size(); ++i) {
      out[base + i] = RankSlot{base + static_cast<int>(i), node, order[i], nics[i]};
    }
  };
  auto order_of = [&](const std::vector<RankSlot>& from, int base, int k) {
    std::vector<int> order(k);
    for (int i = 0; i < k; ++i) order[i] = from[base + i].gpu;
    return order;
  };
  if (CrossedRailPairs(ranks) == 0) return;  // the node selector's choices already agree
  // Pass 1: each node against the rails of the nodes before it.
  std::vector<std::vector<int>> before(classes);
  int base = 0;
  for (const auto& [node, k] : plan.chunks) {
    std::vector<int> order = order_of(ranks, base, k);
    if (base > 0 && AlignRails(node, ChunkRequest(k), base, before, order))
      apply(ranks, node, base, order);
    for (int i = 0; i < k; ++i) add_rails(before, ranks[base + i]);
    base += k;
  }
  int crossed = CrossedRailPairs(ranks);
  if (crossed == 0) return;
  // Pass 2: each node, the first included, against the rails of all the others; kept when
  // fewer DP neighbours end up on different rails. The others' rails come from counts of the
  // ranks per (DP class, rail) over every node less the node's own: O(world + nodes · classes ·
  // rails), not a walk over every rank per node.
  std::vector<RankSlot> next = ranks;
  const int rails = c_.rails.count;
  std::vector<int> on_rail(classes * static_cast<size_t>(rails), 0);
  auto count_rails = [&](std::vector<int>& counts, const RankSlot& r, int delta) {
    const size_t row = static_cast<size_t>(DpClass(r.rank)) * rails;
    std::vector<int> seen;
    for (int c : cost_.node_model(r.node).NicsOf(r.gpu)) {
      if (c < 0 || c >= rails || std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
      seen.push_back(c);
      counts[row + c] += delta;
    }
  };
  for (const RankSlot& r : next) count_rails(on_rail, r, 1);
  base = 0;
  for (const auto& [node, k] : plan.chunks) {
    std::vector<int> own(on_rail.size(), 0);
    for (int i = 0; i < k; ++i) count_rails(own, next[base + i], 1);
    std::vector<std::vector<int>> others(classes);
    for (size_t cls = 0; cls < classes; ++cls) {
      for (int c = 0; c < rails; ++c) {
        const size_t at = cls * rails + c;
        if (on_rail[at] > own[at]) others[cls].push_back(c);
      }
    }
    std::vector<int> order = order_of(next, base, k);
    if (AlignRails(node, ChunkRequest(k), base, others, order)) {
      for (int i = 0; i < k; ++i) count_rails(on_rail, next[base + i], -1);
      apply(next, node, base, order);
      for (int i = 0; i < k; ++i) count_rails(on_rail, next[base + i], 1);
    }
    base += k;
  }
  if (CrossedRailPairs(next) < crossed) ranks = std::move(next);
}

bool Search::AlignRails(int node, const NodeRequest& req, int base,
                        const std::vector<std::vector<int>>& class_rails,
                        std::vector<int>& order) const {
  const int k = static_cast<int>(order.size());
  const int rails = c_.rails.count;
  const cost::NodeCostModel& nm = cost_.node_model(node);
  auto matches = [&](int slot, int g) {
    const std::vector<int>& want = class_rails[DpClass(base + slot)];
    for (int c : nm.NicsOf(g)) {
      if (c >= 0 && c < rails && std::find(want.begin(), want.end(), c) != want.end()) {
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
  for (int i = 0; i < k; ++i) wanted += class_rails[DpClass(base + i)].empty() ? 0 : 1;
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
  // with its class, give each other slot the first unused GPU that does, fill the rest in pool
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
      if (out[i] >= 0 || class_rails[DpClass(base + i)].empty()) continue;
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
