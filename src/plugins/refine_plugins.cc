// The refine plugins: hill climbing over the GPU count per node ("local-search"), and none.
#include "plugins/refine_plugins.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

#include "plugins/node_plugins.h"
#include "plugins/refine_starts.h"

namespace toposched::sched {

namespace {

// DP neighbours, a group's last and first included (its ring closes), in different lowest
// network domains whose GPUs share no rail. On a rail-optimised network such a hop climbs above
// the rail switches; so does a hop between rails inside one domain, which this count leaves out:
// counting those too sent the search sideways inside a leaf and lost a plan over both leaves
// that was twice as fast (rails quality table, case 1772). The score prices a ring by its
// slowest hop, so a move that mends one of two such hops leaves the score as it was; this count
// tells the search that it mended one. O(world).
int CrossedRailHops(const cost::CostModel& cost, const job::Layout& l,
                    const std::vector<RankSlot>& ranks) {
  const topo::Cluster& c = cost.cluster();
  int out = 0;
  for (int s = 0; s < l.pp; ++s) {
    for (int t = 0; t < l.tp; ++t) {
      for (int d = 0; d < l.dp; ++d) {
        const RankSlot& a = ranks[l.RankOf(t, d, s)];
        const RankSlot& b = ranks[l.RankOf(t, (d + 1) % l.dp, s)];
        if (c.nodes[a.node].domain != c.nodes[b.node].domain &&
            !cost.SameRail({a.node, a.gpu}, {b.node, b.gpu})) {
          ++out;
        }
      }
    }
  }
  return out;
}

// One run of local search: the count vector k over the nodes ids (the plan's nodes and, per
// kind of node, one outside it), the best plan found, and the moves that reach it.
class HillClimb {
 public:
  HillClimb(const RefineHandle& h, const std::vector<int>& region, size_t home,
            const GangPlan& plan, const Placement& p, double score)
      : h_(h),
        best_score_(score),
        home_ms_(p.predicted_ms),
        rails_(h.RailsAligned() && h.layout().dp > 1) {
    Nodes(region, home, plan);
    memo_.emplace(k_, score);
    best_hops_ = Hops(p);
    // The budget grows with the plan: a job over more nodes has more moves worth trying.
    budget_ = h.limits().max_refine_evaluations *
              std::max<int>(1, (static_cast<int>(plan.chunks.size()) + 1) / 2);
  }

  // Climbs until no move improves or the budget is spent; true when it found better.
  bool Climb() {
    bool split_tried = false;
    while (evals_ < budget_ || split_tried) {
      const int start = taken_;
      Sweep();
      if (taken_ == start && !split_tried) {
        // A plateau: one unit moved at a time leaves a thin node until the node is empty or
        // even, and the spread move fills the first nodes with room. Try two units from one
        // node to another, and a two-unit share split over any two other nodes (one unit
        // each), within one more budget.
        split_tried = true;
        SplitSweep(evals_ + budget_);
        if (taken_ == start) break;
        k_ = best_k_;
        continue;
      }
      if (taken_ == start) break;
      k_ = best_k_;
    }
    return best_p_.has_value();
  }

  void Take(GangPlan& plan, Placement& p, double& score) {
    best_p_->domain = p.domain;
    p = std::move(*best_p_);
    plan = std::move(best_plan_);
    score = best_score_;
  }

 private:
  // The plan's nodes, then nodes of the region outside it with room for a unit, one per
  // (profile, free GPUs, lowest domain): such nodes differ only in their id, which only orders
  // the ranks. Sorted; k_ and cap_ by them.
  void Nodes(const std::vector<int>& region, size_t home, const GangPlan& plan) {
    const topo::Cluster& c = h_.cluster();
    const int unit = h_.unit();
    for (const auto& [n, k] : plan.chunks) ids_.push_back(n);
    struct Key {
      int profile;
      uint64_t lo, hi;
      int domain;
    };
    std::vector<Key> seen;
    outside_.assign(c.nodes.size(), 0);
    for (size_t i = home; i < region.size(); ++i) outside_[region[i]] = 1;
    int others = 0;
    for (int n : region) {
      if (others >= h_.limits().max_refine_nodes) break;
      if (h_.CapOn(n) < unit) continue;
      if (std::find(ids_.begin(), ids_.end(), n) != ids_.end()) continue;
      const GpuMask& m = h_.FreeMaskOf(n);
      const int prof = h_.ProfileOf(n);
      bool dup = false;
      for (const Key& x : seen) {
        dup = dup || (x.profile == prof && x.lo == m.lo() && x.hi == m.hi() &&
                      x.domain == c.nodes[n].domain);
      }
      if (dup) continue;
      seen.push_back(Key{prof, m.lo(), m.hi(), c.nodes[n].domain});
      ids_.push_back(n);
      ++others;
    }
    std::sort(ids_.begin(), ids_.end());
    const size_t m = ids_.size();
    cap_.resize(m);
    k_.assign(m, 0);
    for (size_t i = 0; i < m; ++i) cap_[i] = h_.CapOn(ids_[i]);
    for (const auto& [n, kk] : plan.chunks) {
      k_[std::lower_bound(ids_.begin(), ids_.end(), n) - ids_.begin()] = kk;
    }
  }

  // On rails, a move that scores the same and has fewer DP hops across domains and rails is
  // taken too (CrossedRailHops): the next move can mend the hop that still decides the score.
  int Hops(const Placement& q) const {
    return rails_ ? CrossedRailHops(h_.cost(), h_.layout(), q.ranks) : 0;
  }

  // Builds and scores the count vector kv once; keeps it when it beats the best so far. A plan
  // that uses a node beyond the candidate domain must also beat the domain's best predicted
  // time by 1%: leaving the domain is worth only real communication time, never the
  // fragmentation term alone.
  void Consider(const std::vector<int>& kv) {
    if (memo_.count(kv)) return;
    ++evals_;
    GangPlan pl;
    bool away = false;
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (kv[i] == 0) continue;
      h_.AddChunk(pl, ids_[i], kv[i]);
      away = away || outside_[ids_[i]];
    }
    std::optional<Placement> q = h_.Build(pl);
    const double sc = q ? h_.ScoreOf(*q, pl.frag) : std::numeric_limits<double>::infinity();
    memo_.emplace(kv, sc);
    if (q && !away) home_ms_ = std::min(home_ms_, q->predicted_ms);
    if (q && away && !(q->predicted_ms < home_ms_ * 0.99)) return;
    if (!q) return;
    const bool better = sc < best_score_ * (1 - 1e-9);
    if (!better && !(rails_ && sc <= best_score_ * (1 + 1e-9))) return;
    const int hops = Hops(*q);
    if (!better && hops >= best_hops_) return;
    best_score_ = sc;
    best_hops_ = hops;
    best_k_ = kv;
    best_p_ = std::move(q);
    best_plan_ = std::move(pl);
    ++taken_;
  }

  // Per node a: its share spread over the others (best fit), one unit to each other node, and
  // its whole share to an empty node that holds it.
  void Sweep() {
    const size_t m = ids_.size();
    const int unit = h_.unit();
    std::vector<int> spare(m);
    for (size_t a = 0; a < m && evals_ < budget_; ++a) {
      if (k_[a] == 0) continue;
      for (size_t b = 0; b < m; ++b) spare[b] = b == a ? 0 : cap_[b] - k_[b];
      std::vector<int> take = PickBins(spare, k_[a]);
      if (!take.empty()) {
        std::vector<int> kv = k_;
        kv[a] = 0;
        for (size_t b = 0; b < m; ++b) kv[b] += take[b];
        Consider(kv);
      }
      for (size_t b = 0; b < m && evals_ < budget_; ++b) {
        if (b == a || cap_[b] - k_[b] < unit) continue;
        std::vector<int> kv = k_;
        kv[a] -= unit;
        kv[b] += unit;
        Consider(kv);  // one unit from a to b
        if (k_[b] == 0 && k_[a] > unit && cap_[b] >= k_[a]) {
          kv = k_;
          kv[b] = k_[a];
          kv[a] = 0;
          Consider(kv);  // a's whole share to b
        }
      }
    }
  }

  // Two units from one node to another, and a two-unit share split over two other nodes.
  void SplitSweep(int split_budget) {
    const size_t m = ids_.size();
    const int unit = h_.unit();
    for (size_t a = 0; a < m && evals_ < split_budget; ++a) {
      if (k_[a] < 2 * unit) continue;
      for (size_t b = 0; b < m && evals_ < split_budget; ++b) {
        if (b == a || cap_[b] - k_[b] < unit) continue;
        if (cap_[b] - k_[b] >= 2 * unit) {
          std::vector<int> kv = k_;
          kv[a] -= 2 * unit;
          kv[b] += 2 * unit;
          Consider(kv);  // two units from a to b
        }
        if (k_[a] != 2 * unit) continue;
        for (size_t c = b + 1; c < m && evals_ < split_budget; ++c) {
          if (c == a || cap_[c] - k_[c] < unit) continue;
          std::vector<int> kv = k_;
          kv[a] = 0;
          kv[b] += unit;
          kv[c] += unit;
          Consider(kv);
        }
      }
    }
  }

  const RefineHandle& h_;
  std::vector<int> ids_, cap_, k_;
  std::vector<char> outside_;  // per node: in the region beyond the candidate domain
  std::map<std::vector<int>, double> memo_;
  int evals_ = 0, budget_ = 0, taken_ = 0;
  std::vector<int> best_k_;
  double best_score_;
  double home_ms_;  // best predicted time inside the domain so far
  const bool rails_;
  int best_hops_ = 0;
  std::optional<Placement> best_p_;
  GangPlan best_plan_;
};

// "local-search": hill climbing over the GPU count per node (PlacementPlugins::refine).
class LocalSearch : public Named<RefinePlugin, RefineRule> {
 public:
  LocalSearch() : Named(RefineRule::kLocalSearch, "local-search") {}
  bool refines() const override { return true; }
  void Refine(const RefineHandle& h, const std::vector<int>& region, size_t home, GangPlan& plan,
              Placement& p, double& score) const override {
    if (plan.chunks.empty()) return;
    if (plan.chunks.size() < 2 && h.FreeOn(plan.chunks[0].first) == plan.chunks[0].second) {
      return;  // one whole node: nothing to move
    }
    if (static_cast<int>(plan.chunks.size()) > h.limits().max_refine_nodes) return;
    if (h.Settled(plan)) return;
    HillClimb climb(h, region, home, plan, p, score);
    if (climb.Climb()) climb.Take(plan, p, score);
  }
  std::vector<GangPlan> StartPlans(const RefineHandle& h, const std::vector<int>& domain,
                                   const std::vector<int>& region) const override {
    std::vector<GangPlan> out;
    auto add = [&](std::vector<GangPlan>&& plans) {
      for (GangPlan& b : plans) out.push_back(std::move(b));
    };
    add(BalancedPlans(h, domain));
    add(StageAlignedPlans(h, domain));
    add(StagePiecePlans(h, domain));
    if (region.size() > domain.size()) {
      add(StageAlignedPlans(h, region));
      add(StagePiecePlans(h, region));
    }
    add(AnchoredPlans(h, region, domain.size()));
    add(StagePackPlans(h, region, domain.size()));
    return out;
  }
};

// "none": the plan as the node plugin made it.
class NoRefine : public Named<RefinePlugin, RefineRule> {
 public:
  NoRefine() : Named(RefineRule::kNone, "none") {}
  bool refines() const override { return false; }
  void Refine(const RefineHandle&, const std::vector<int>&, size_t, GangPlan&, Placement&,
              double&) const override {}
  std::vector<GangPlan> StartPlans(const RefineHandle&, const std::vector<int>&,
                                   const std::vector<int>&) const override {
    return {};
  }
};

}  // namespace

const std::vector<const RefinePlugin*>& RefinePlugins() {
  static const LocalSearch local_search;
  static const NoRefine none;
  static const std::vector<const RefinePlugin*> all = {&local_search, &none};
  return all;
}

}  // namespace toposched::sched
