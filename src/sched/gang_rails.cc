// The gang placer's rail work that needs its node selector and score: one node's ranks aligned to
// the rails their peers use (for the rail plugin, sched/rail_plugins.h), the chosen placement
// polished against the score, and the explanation's rail count.
#include "sched/gang_search.h"

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

bool Search::RailsMatched(const std::vector<RankSlot>& ranks) const {
  const job::Layout& l = job_.layout;
  if (l.pp > 1 && CountRailPairs(cost_, l, ranks, RailPeers::kPp).crossed > 0) return false;
  if (l.dp < 2) return true;
  // Per DP class, its islands in DP order: (node, rails of its ranks there).
  std::vector<std::pair<int, std::vector<int>>> islands;
  for (int s = 0; s < l.pp; ++s) {
    for (int t = 0; t < l.tp; ++t) {
      islands.clear();
      for (int d = 0; d < l.dp; ++d) {
        const RankSlot& r = ranks[l.RankOf(t, d, s)];
        auto it = std::find_if(islands.begin(), islands.end(),
                               [&](const auto& isl) { return isl.first == r.node; });
        if (it == islands.end()) {
          islands.emplace_back(r.node, std::vector<int>{});
          it = islands.end() - 1;
        }
        AddRails(cost_, it->second, r);
      }
      const size_t n = islands.size();
      if (n < 2) continue;
      for (size_t i = 0; i < n; ++i) {
        const std::vector<int>& own = islands[i].second;
        for (const std::vector<int>* other :
             {&islands[(i + 1) % n].second, &islands[(i + n - 1) % n].second}) {
          for (int c : own) {
            if (std::find(other->begin(), other->end(), c) == other->end()) return false;
          }
        }
      }
    }
  }
  return true;
}

bool Search::PolishRails(const Plan& plan, Placement& p, double& score) const {
  const job::Layout& l = job_.layout;
  if (!RailsAligned() || plan.chunks.size() < 2 || !plug_.gpus->priced() ||
      (l.dp < 2 && l.pp < 2)) {
    return false;
  }
  if (RailsMatched(p.ranks)) return false;
  // With TP 1 and one stage a node's ranks form one island whatever their order: only the set
  // of GPUs can change the score.
  const bool trades = l.tp > 1 || l.pp > 1;
  // Scorings allowed: as many per node as local search may make in all (a 100-fold budget
  // fixed no further case of the rails quality table).
  const int budget = opt_.max_refine_evaluations * static_cast<int>(plan.chunks.size());
  int evals = 0;
  bool improved = false;
  while (evals < budget) {
    double best_sc = score * (1 - 1e-9);
    std::optional<Placement> best;
    auto try_order = [&](int node, int base, const std::vector<int>& o) {
      ++evals;
      Placement q;
      q.ranks = p.ranks;
      q.domain = p.domain;
      PlaceOnNode(c_, q.ranks, node, base, o);
      if (!ScoreRanks(plan, q)) return;
      const double sc = Weighted(q, plan.frag);
      if (sc < best_sc) {
        best_sc = sc;
        best = std::move(q);
      }
    };
    int base = 0;
    for (const auto& [node, k] : plan.chunks) {
      if (evals >= budget) break;
      const std::vector<int> order = GpuOrder(p.ranks, base, k);
      std::vector<int> spare;
      const GpuMask& free = state_.FreeMask(node);
      for (int g = 0; g < state_.GpuCount(node); ++g) {
        if (free.test(g) && std::find(order.begin(), order.end(), g) == order.end()) {
          spare.push_back(g);
        }
      }
      for (int i = 0; i < k && evals < budget; ++i) {
        for (int g : spare) {
          std::vector<int> o = order;
          o[i] = g;
          try_order(node, base, o);
        }
        if (!trades) continue;
        for (int j = i + 1; j < k && evals < budget; ++j) {
          std::vector<int> o = order;
          std::swap(o[i], o[j]);
          try_order(node, base, o);
        }
      }
      base += k;
    }
    if (!best) break;
    p = std::move(*best);
    score = best_sc;
    improved = true;
  }
  return improved;
}

std::string Search::RailNote(const Placement& p) const {
  if (c_.rails.count <= 0 || p.parts.size() < 2 || job_.layout.dp < 2) return "";
  const RailPairs all = CountRailPairs(cost_, job_.layout, p.ranks);
  if (all.pairs == 0) return "";
  return "; DP neighbours across nodes on one rail: " + std::to_string(all.pairs - all.crossed) +
         "/" + std::to_string(all.pairs);
}

}  // namespace toposched::sched::gang_internal
