// The gang placer's rail alignment: DP and pipeline neighbours on different nodes put on a
// common rail.
#include "sched/gang_search.h"

namespace toposched::sched::gang_internal {

int Search::CrossedRailPairs(const std::vector<RankSlot>& ranks, RailPeers peers) const {
  return CountRailPairs(cost_, job_.layout, ranks, peers).crossed;
}

void Search::AddRails(std::vector<int>& rails, const RankSlot& r) const {
  for (int c : cost_.node_model(r.node).NicsOf(r.gpu)) {
    if (c >= 0 && c < c_.rails.count && std::find(rails.begin(), rails.end(), c) == rails.end()) {
      rails.push_back(c);
    }
  }
}

namespace {

void Apply(const topo::Cluster& c, std::vector<RankSlot>& out, int node, int base,
           const std::vector<int>& order) {
  const std::vector<int> nics = AssignNics(c.topology(node), order);
  for (size_t i = 0; i < order.size(); ++i) {
    out[base + i] = RankSlot{base + static_cast<int>(i), node, order[i], nics[i]};
  }
}

std::vector<int> OrderOf(const std::vector<RankSlot>& from, int base, int k) {
  std::vector<int> order(k);
  for (int i = 0; i < k; ++i) order[i] = from[base + i].gpu;
  return order;
}

}  // namespace

std::vector<std::vector<RankSlot>> Search::RailAlignments(
    const Plan& plan, const std::vector<RankSlot>& ranks) const {
  const job::Layout& l = job_.layout;
  std::vector<std::vector<RankSlot>> out;
  auto add = [&](std::vector<RankSlot>&& r) {
    if (r.empty() || r == ranks || std::find(out.begin(), out.end(), r) != out.end()) return;
    out.push_back(std::move(r));
  };
  // `from` with its pipeline neighbours aligned; empty when none of them crosses rails.
  auto piped = [&](const std::vector<RankSlot>& from) {
    std::vector<RankSlot> r;
    if (l.pp < 2 || CrossedRailPairs(from, RailPeers::kPp) == 0) return r;
    r = from;
    AlignPipelineToRails(plan, r);
    return r;
  };
  add(piped(ranks));
  if (l.dp < 2) return out;
  std::vector<RankSlot> dp = ranks;
  AlignToRails(plan, dp);
  std::vector<RankSlot> both = piped(dp);
  add(std::move(dp));
  add(std::move(both));
  return out;
}

void Search::AlignPipelineToRails(const Plan& plan, std::vector<RankSlot>& ranks) const {
  const int stage = job_.layout.tp * job_.layout.dp;
  const int world = static_cast<int>(ranks.size());
  // want[i]: the rails of rank base + i's pipeline neighbours on other nodes (before it only,
  // or on both sides).
  auto align = [&](std::vector<RankSlot>& rs, bool both_sides) {
    int base = 0;
    for (const auto& [node, k] : plan.chunks) {
      std::vector<std::vector<int>> want(k);
      for (int i = 0; i < k; ++i) {
        const int r = base + i;
        if (r - stage >= 0 && rs[r - stage].node != node) AddRails(want[i], rs[r - stage]);
        if (both_sides && r + stage < world && rs[r + stage].node != node) {
          AddRails(want[i], rs[r + stage]);
        }
      }
      std::vector<int> order = OrderOf(rs, base, k);
      if (AlignRails(node, ChunkRequest(k), want, order)) Apply(c_, rs, node, base, order);
      base += k;
    }
  };
  align(ranks, false);
  const int crossed = CrossedRailPairs(ranks, RailPeers::kPp);
  if (crossed == 0) return;
  std::vector<RankSlot> next = ranks;
  align(next, true);
  if (CrossedRailPairs(next, RailPeers::kPp) < crossed) ranks = std::move(next);
}

void Search::AlignToRails(const Plan& plan, std::vector<RankSlot>& ranks) const {
  const size_t classes = static_cast<size_t>(job_.layout.tp) * job_.layout.pp;
  // Per slot of a node, the rails its DP class uses elsewhere.
  auto want_of = [&](const std::vector<std::vector<int>>& class_rails, int base, int k) {
    std::vector<std::vector<int>> want(k);
    for (int i = 0; i < k; ++i) want[i] = class_rails[DpClass(base + i)];
    return want;
  };
  if (CrossedRailPairs(ranks, RailPeers::kDp) == 0) return;  // the node selector agrees already
  // Pass 1: each node against the rails of the nodes before it.
  std::vector<std::vector<int>> before(classes);
  int base = 0;
  for (const auto& [node, k] : plan.chunks) {
    std::vector<int> order = OrderOf(ranks, base, k);
    if (base > 0 && AlignRails(node, ChunkRequest(k), want_of(before, base, k), order)) {
      Apply(c_, ranks, node, base, order);
    }
    for (int i = 0; i < k; ++i) AddRails(before[DpClass(base + i)], ranks[base + i]);
    base += k;
  }
  int crossed = CrossedRailPairs(ranks, RailPeers::kDp);
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
    AddRails(seen, r);
    for (int c : seen) counts[row + c] += delta;
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
    std::vector<int> order = OrderOf(next, base, k);
    if (AlignRails(node, ChunkRequest(k), want_of(others, base, k), order)) {
      for (int i = 0; i < k; ++i) count_rails(on_rail, next[base + i], -1);
      Apply(c_, next, node, base, order);
      for (int i = 0; i < k; ++i) count_rails(on_rail, next[base + i], 1);
    }
    base += k;
  }
  if (CrossedRailPairs(next, RailPeers::kDp) < crossed) ranks = std::move(next);
}

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
  if (l.pp > 1 && CrossedRailPairs(ranks, RailPeers::kPp) > 0) return false;
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
        AddRails(it->second, r);
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
  if (!c_.RailsPriced() || plan.chunks.size() < 2 || !plug_.gpus->priced() ||
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
      Apply(c_, q.ranks, node, base, o);
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
      const std::vector<int> order = OrderOf(p.ranks, base, k);
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
