// The rails plugin "align"'s polish of the chosen placement (plugins/rail_polish.h).
#include "plugins/rail_polish.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace toposched::sched {

namespace {

// Whether every NIC already reaches the next island on its own rail: per DP class (TP index and
// stage), the rails of each node's ranks are among those of the nodes before and after it in
// the ring, and every pipeline neighbour pair on different nodes shares a rail. Then the polish
// has no rail to mend. O(world · nodes of a DP group).
bool RailsMatched(const cost::CostModel& cost, const job::Layout& l,
                  const std::vector<RankSlot>& ranks) {
  if (l.pp > 1 && CountRailPairs(cost, l, ranks, RailPeers::kPp).crossed > 0) return false;
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
        AddRails(cost, it->second, r);
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

}  // namespace

bool PolishRails(const RailHandle& h, const GangPlan& plan, Placement& p, double& score) {
  const job::Layout& l = h.layout();
  if (!h.RailsAligned() || plan.chunks.size() < 2 || !h.GpusPriced() || (l.dp < 2 && l.pp < 2)) {
    return false;
  }
  if (RailsMatched(h.cost(), l, p.ranks)) return false;
  // With TP 1 and one stage a node's ranks form one island whatever their order: only the set
  // of GPUs can change the score.
  const bool trades = l.tp > 1 || l.pp > 1;
  // Scorings allowed: as many per node as local search may make in all (a 100-fold budget
  // fixed no further case of the rails quality table).
  const int budget = h.limits().max_refine_evaluations * static_cast<int>(plan.chunks.size());
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
      PlaceOnNode(h.cluster(), q.ranks, node, base, o);
      if (!h.Rescore(plan, q)) return;
      const double sc = h.ScoreOf(q, plan.frag);
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
      const GpuMask& free = h.FreeMaskOf(node);
      for (int g = 0; g < h.GpusOn(node); ++g) {
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

}  // namespace toposched::sched
