// The rail plugins: align the ranks that talk across nodes to common rails ("align"), or leave
// rails to the cost model's price ("none").
#include "plugins/rail_plugins.h"

#include <algorithm>
#include <utility>

#include "plugins/rail_polish.h"
#include "plugins/rail_starts.h"
#include "select/rank_order.h"

namespace toposched::sched {

namespace {

// The alignment passes over one plan's ranks.
class RankAligner {
 public:
  RankAligner(const RailHandle& h, const GangPlan& plan) : h_(h), plan_(plan), l_(h.layout()) {}

  // The alignments worth scoring: pipeline neighbours alone, DP neighbours alone, and DP
  // neighbours then pipeline neighbours (the DP alignment kept). The pair counts these passes
  // lower are not the score: a set of GPUs that shares more pairs' rails can share fewer of its
  // islands' rails (the cost model prices an island's NICs against the rails of the next
  // island), so the search prices each.
  std::vector<std::vector<RankSlot>> Alignments(const std::vector<RankSlot>& ranks) const {
    std::vector<std::vector<RankSlot>> out;
    auto add = [&](std::vector<RankSlot>&& r) {
      if (r.empty() || r == ranks || std::find(out.begin(), out.end(), r) != out.end()) return;
      out.push_back(std::move(r));
    };
    // `from` with its pipeline neighbours aligned; empty when none of them crosses rails.
    auto piped = [&](const std::vector<RankSlot>& from) {
      std::vector<RankSlot> r;
      if (l_.pp < 2 || Crossed(from, RailPeers::kPp) == 0) return r;
      r = from;
      AlignPipeline(r);
      return r;
    };
    add(piped(ranks));
    if (l_.dp < 2) return out;
    std::vector<RankSlot> dp = ranks;
    AlignDp(dp);
    std::vector<RankSlot> both = piped(dp);
    add(std::move(dp));
    add(std::move(both));
    return out;
  }

 private:
  int Crossed(const std::vector<RankSlot>& ranks, RailPeers peers) const {
    return CountRailPairs(h_.cost(), l_, ranks, peers).crossed;
  }

  // Pipeline neighbours (ranks r - TP·DP and r on different nodes): each node against its
  // ranks' neighbours before it, then, while pairs still cross, against those on either side
  // (kept only when fewer pairs cross).
  void AlignPipeline(std::vector<RankSlot>& ranks) const {
    const int stage = l_.tp * l_.dp;
    const int world = static_cast<int>(ranks.size());
    // want[i]: the rails of rank base + i's pipeline neighbours on other nodes (before it only,
    // or on both sides).
    auto align = [&](std::vector<RankSlot>& rs, bool both_sides) {
      int base = 0;
      for (const auto& [node, k] : plan_.chunks) {
        std::vector<std::vector<int>> want(k);
        for (int i = 0; i < k; ++i) {
          const int r = base + i;
          if (r - stage >= 0 && rs[r - stage].node != node) {
            AddRails(h_.cost(), want[i], rs[r - stage]);
          }
          if (both_sides && r + stage < world && rs[r + stage].node != node) {
            AddRails(h_.cost(), want[i], rs[r + stage]);
          }
        }
        std::vector<int> order = GpuOrder(rs, base, k);
        if (h_.AlignNode(node, k, want, order)) PlaceOnNode(h_.cluster(), rs, node, base, order);
        base += k;
      }
    };
    align(ranks, false);
    const int crossed = Crossed(ranks, RailPeers::kPp);
    if (crossed == 0) return;
    std::vector<RankSlot> next = ranks;
    align(next, true);
    if (Crossed(next, RailPeers::kPp) < crossed) ranks = std::move(next);
  }

  // Per slot of a node, the rails its DP class uses elsewhere.
  std::vector<std::vector<int>> WantOf(const std::vector<std::vector<int>>& class_rails, int base,
                                       int k) const {
    std::vector<std::vector<int>> want(k);
    for (int i = 0; i < k; ++i) want[i] = class_rails[DpClass(l_, base + i)];
    return want;
  }

  // DP neighbours: unless every pair already shares a rail, each node against the nodes before
  // it, then, while pairs still cross rails, each node against all the others (kept only when
  // fewer pairs cross).
  void AlignDp(std::vector<RankSlot>& ranks) const {
    if (Crossed(ranks, RailPeers::kDp) == 0) return;  // the node selector agrees already
    // Pass 1: each node against the rails of the nodes before it.
    std::vector<std::vector<int>> before(static_cast<size_t>(l_.tp) * l_.pp);
    int base = 0;
    for (const auto& [node, k] : plan_.chunks) {
      std::vector<int> order = GpuOrder(ranks, base, k);
      if (base > 0 && h_.AlignNode(node, k, WantOf(before, base, k), order)) {
        PlaceOnNode(h_.cluster(), ranks, node, base, order);
      }
      for (int i = 0; i < k; ++i) {
        AddRails(h_.cost(), before[DpClass(l_, base + i)], ranks[base + i]);
      }
      base += k;
    }
    const int crossed = Crossed(ranks, RailPeers::kDp);
    if (crossed == 0) return;
    std::vector<RankSlot> next = ranks;
    AlignDpAgainstAll(next);
    if (Crossed(next, RailPeers::kDp) < crossed) ranks = std::move(next);
  }

  // Pass 2: each node, the first included, against the rails of all the others. The others'
  // rails come from counts of the ranks per (DP class, rail) over every node less the node's
  // own: O(world + nodes · k · rails), not a walk over every rank per node. Only the node's own
  // ranks' classes are looked at, and the buffers are reused from node to node (a 16k-GPU job
  // has thousands of nodes).
  void AlignDpAgainstAll(std::vector<RankSlot>& next) const {
    const size_t classes = static_cast<size_t>(l_.tp) * l_.pp;
    const int rails = h_.cluster().rails.count;
    std::vector<int> on_rail(classes * static_cast<size_t>(rails), 0);
    std::vector<int> own(on_rail.size(), 0);  // the node's own ranks; back to 0 after each node
    std::vector<int> seen;                    // one rank's rails
    auto count_rails = [&](std::vector<int>& counts, const RankSlot& r, int delta) {
      const size_t row = static_cast<size_t>(DpClass(l_, r.rank)) * rails;
      seen.clear();
      AddRails(h_.cost(), seen, r);
      for (int c : seen) counts[row + c] += delta;
    };
    for (const RankSlot& r : next) count_rails(on_rail, r, 1);
    int base = 0;
    for (const auto& [node, k] : plan_.chunks) {
      for (int i = 0; i < k; ++i) count_rails(own, next[base + i], 1);
      // Per slot: the rails its DP class uses on the other nodes.
      std::vector<std::vector<int>> want(k);
      for (int i = 0; i < k; ++i) {
        const size_t row = static_cast<size_t>(DpClass(l_, base + i)) * rails;
        for (int c = 0; c < rails; ++c) {
          if (on_rail[row + c] > own[row + c]) want[i].push_back(c);
        }
      }
      for (int i = 0; i < k; ++i) count_rails(own, next[base + i], -1);
      std::vector<int> order = GpuOrder(next, base, k);
      if (h_.AlignNode(node, k, want, order)) {
        for (int i = 0; i < k; ++i) count_rails(on_rail, next[base + i], -1);
        PlaceOnNode(h_.cluster(), next, node, base, order);
        for (int i = 0; i < k; ++i) count_rails(on_rail, next[base + i], 1);
      }
      base += k;
    }
  }

  const RailHandle& h_;
  const GangPlan& plan_;
  const job::Layout& l_;
};

// "align": the rank alignments and the rest of the search's rail work.
class RailAlign : public Named<RailPlugin, RailRule> {
 public:
  RailAlign() : Named(RailRule::kAlign, "align") {}
  bool aligns() const override { return true; }
  std::vector<std::vector<RankSlot>> Alignments(const RailHandle& h, const GangPlan& plan,
                                                const std::vector<RankSlot>& ranks) const override {
    return RankAligner(h, plan).Alignments(ranks);
  }
  std::vector<GangPlan> StartPlans(const RailHandle& h, const std::vector<int>& region,
                                   size_t home) const override {
    return RailMaskPlans(h, region, home);
  }
  std::vector<RailPlacement> StagePlacements(const RailHandle& h, const std::vector<int>& region,
                                             size_t home) const override {
    return StageRailPlacements(h, region, home);
  }
  bool Polish(const RailHandle& h, const GangPlan& plan, Placement& p,
              double& score) const override {
    return PolishRails(h, plan, p, score);
  }
};

// "none": rails count only through the cost model's price of each placement.
class NoRails : public Named<RailPlugin, RailRule> {
 public:
  NoRails() : Named(RailRule::kNone, "none") {}
  bool aligns() const override { return false; }
  std::vector<std::vector<RankSlot>> Alignments(const RailHandle&, const GangPlan&,
                                                const std::vector<RankSlot>&) const override {
    return {};
  }
  std::vector<GangPlan> StartPlans(const RailHandle&, const std::vector<int>&,
                                   size_t) const override {
    return {};
  }
  std::vector<RailPlacement> StagePlacements(const RailHandle&, const std::vector<int>&,
                                             size_t) const override {
    return {};
  }
  bool Polish(const RailHandle&, const GangPlan&, Placement&, double&) const override {
    return false;
  }
};

}  // namespace

const std::vector<const RailPlugin*>& RailPlugins() {
  static const RailAlign align;
  static const NoRails none;
  static const std::vector<const RailPlugin*> all = {&align, &none};
  return all;
}

}  // namespace toposched::sched
