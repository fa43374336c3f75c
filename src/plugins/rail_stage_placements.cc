// The rails plugin "align"'s placements built stage by stage on shared rails
// (plugins/rail_starts.h).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "plugins/rail_starts.h"
#include "select/rank_order.h"

namespace toposched::sched {

namespace {

// A node of the region as the stages use it up: per rail the unused free GPU whose NIC is on it.
struct RailNode {
  int node = 0;
  bool home = false;
  std::vector<int> gpu_of;  // rail -> GPU (-1: none free and unused)
  uint32_t rem = 0;         // rails with such a GPU
};

// One stage's pieces: per node (an index into the RailNodes) the rails whose GPUs it takes.
struct StageOption {
  double quality = 0;  // the slowest island's network rate, in NICs at full rate
  int nodes = 0;
  int free = 0;  // unused rails on the nodes taken, before the stage
  std::vector<std::pair<size_t, uint32_t>> pieces;
};

// What a stage needs and how its options are ranked.
struct StageAsk {
  int rails = 0;          // rails of the cluster (≤ kMaxMaskRails)
  int unit = 1;           // GPUs per unit (the TP group when each sits on one node)
  int units = 0;          // units per stage
  bool few_nodes = true;  // rank options by (nodes, unused rails) or by (unused rails, nodes)
};

// How the stage's islands reach each other: per island, the rate to its ring neighbours in NICs
// at full rate, a NIC on a rail the neighbour has paying the same-rail factor and the others the
// cross-rail factor (cost::CostModel's pricing of an island's link); the slowest. One island: the
// stage stays on one node, no network.
double StageQuality(const topo::Cluster& c, const std::vector<RailNode>& nodes,
                    const std::vector<std::pair<size_t, uint32_t>>& pieces) {
  const size_t m = pieces.size();
  if (m < 2) return std::numeric_limits<double>::infinity();
  double q = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < m; ++i) {
    for (const size_t j : {(i + 1) % m, (i + m - 1) % m}) {
      const auto f =
          c.RailOversubscription(nodes[pieces[i].first].node, nodes[pieces[j].first].node);
      const int same = std::popcount(pieces[i].second & pieces[j].second);
      const int cross = std::popcount(pieces[i].second) - same;
      q = std::min(q, same / f.same_rail + cross / f.cross_rail);
    }
  }
  return q;
}

// The rail sets a stage may gather on: each node's unused rails, and per size the set the most
// nodes hold whole.
std::vector<uint32_t> CandidateSets(const std::vector<RailNode>& nodes, int rails) {
  std::vector<uint32_t> sets;
  for (const RailNode& x : nodes) {
    if (x.rem != 0) sets.push_back(x.rem);
  }
  // Per size, the first set (lowest mask) of the highest cover.
  std::vector<uint32_t> best(static_cast<size_t>(rails) + 1, 0);
  std::vector<int> best_cover(static_cast<size_t>(rails) + 1, 0);
  for (uint32_t r = 1; r < (uint32_t{1} << rails); ++r) {
    int cover = 0;
    for (const RailNode& x : nodes) cover += (x.rem & r) == r ? 1 : 0;
    const auto k = static_cast<size_t>(std::popcount(r));
    if (cover > best_cover[k]) best[k] = r, best_cover[k] = cover;
  }
  for (size_t k = 1; k < best.size(); ++k) {
    if (best_cover[k] > 0) sets.push_back(best[k]);
  }
  std::sort(sets.begin(), sets.end());
  sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
  return sets;
}

// The stage on the `pick`ed nodes in pieces as even as their room allows (the smallest rooms
// take their fair share first), each taking its rails of `r` first, then its others, lowest rail
// first, so that the pieces' rail sets overlap as far as they can. Empty when they lack room.
std::optional<StageOption> EvenPieces(const topo::Cluster& c, const std::vector<RailNode>& nodes,
                                      std::vector<size_t> pick, uint32_t r, const StageAsk& ask) {
  const size_t m = pick.size();
  std::sort(pick.begin(), pick.end(), [&](size_t a, size_t b) {
    return std::popcount(nodes[a].rem) < std::popcount(nodes[b].rem);
  });
  StageOption o;
  o.nodes = static_cast<int>(m);
  int left = ask.units;
  for (size_t j = 0; j < m; ++j) {
    const RailNode& x = nodes[pick[j]];
    const int fair = (left + static_cast<int>(m - j) - 1) / static_cast<int>(m - j);
    const int units = std::min(fair, std::popcount(x.rem) / ask.unit);
    left -= units;
    uint32_t take = 0;
    int need = units * ask.unit;
    for (uint32_t pool : {x.rem & r, x.rem & ~r}) {
      for (int rail = 0; rail < ask.rails && need > 0; ++rail) {
        if (pool >> rail & 1) take |= uint32_t{1} << rail, --need;
      }
    }
    o.free += std::popcount(x.rem);
    o.pieces.emplace_back(pick[j], take);
  }
  if (left != 0) return std::nullopt;
  std::sort(o.pieces.begin(), o.pieces.end(), [&](const auto& a, const auto& b) {
    return nodes[a.first].node < nodes[b.first].node;
  });
  o.quality = StageQuality(c, nodes, o.pieces);
  return o;
}

// One stage's options on what is left: per candidate rail set R, the nodes by how much of R they
// hold (the candidate domain first, then the smallest room), and the fewest of them whose even
// pieces reach `target`. Returns the best by the ask's ranking (none when no option reaches
// it) and the finite qualities met on the way, for the caller's targets.
std::pair<std::optional<StageOption>, std::vector<double>> StageOptions(
    const topo::Cluster& c, const std::vector<RailNode>& nodes, double target,
    const StageAsk& ask) {
  std::optional<StageOption> chosen;
  std::vector<double> seen;
  const auto key = [&](const StageOption& s) {
    return ask.few_nodes ? std::make_pair(s.nodes, s.free) : std::make_pair(s.free, s.nodes);
  };
  std::vector<size_t> order;
  for (uint32_t r : CandidateSets(nodes, ask.rails)) {
    order.clear();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (std::popcount(nodes[i].rem) >= ask.unit) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const int oa = std::popcount(nodes[a].rem & r), ob = std::popcount(nodes[b].rem & r);
      if (oa != ob) return oa > ob;
      if (nodes[a].home != nodes[b].home) return nodes[a].home;
      return std::popcount(nodes[a].rem) < std::popcount(nodes[b].rem);
    });
    int room = 0;
    for (size_t m = 1; m <= order.size() && m <= static_cast<size_t>(ask.units); ++m) {
      room += std::popcount(nodes[order[m - 1]].rem) / ask.unit;
      if (room < ask.units) continue;
      std::optional<StageOption> o = EvenPieces(
          c, nodes, std::vector<size_t>(order.begin(), order.begin() + static_cast<long>(m)), r,
          ask);
      if (!o) continue;
      if (o->quality < std::numeric_limits<double>::infinity()) seen.push_back(o->quality);
      if (o->quality < target) continue;
      if (!chosen || key(*o) < key(*chosen)) chosen = std::move(o);
      break;  // more nodes only thin the pieces
    }
  }
  return {std::move(chosen), std::move(seen)};
}

// Every stage at `target` or above, one after the other on what the earlier left: the ranks in
// rank order (GPUs of a piece lowest rail first), or empty.
std::vector<RankSlot> BuildStages(const topo::Cluster& c, std::vector<RailNode> nodes, int stages,
                                  double target, const StageAsk& ask) {
  std::vector<RankSlot> ranks;
  for (int s = 0; s < stages; ++s) {
    std::optional<StageOption> o = StageOptions(c, nodes, target, ask).first;
    if (!o) return {};
    for (const auto& [i, take] : o->pieces) {
      RailNode& x = nodes[i];
      for (int rail = 0; rail < ask.rails; ++rail) {
        if (!(take >> rail & 1)) continue;
        ranks.push_back(RankSlot{static_cast<int>(ranks.size()), x.node,
                                 x.gpu_of[static_cast<size_t>(rail)], -1});
        x.gpu_of[static_cast<size_t>(rail)] = -1;
      }
      x.rem &= ~take;
    }
  }
  return ranks;
}

// The placement of `ranks` (rank order, NICs unset): per node its GPUs as a part and their NICs
// (AssignNics over the node's GPUs in rank order), and per node its GPU count as the plan.
RailPlacement Staged(const RailHandle& h, std::vector<RankSlot> ranks) {
  const topo::Cluster& c = h.cluster();
  RailPlacement rs;
  std::vector<int> used;
  for (const RankSlot& x : ranks) used.push_back(x.node);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (int n : used) {
    std::vector<size_t> at;  // n's ranks, in rank order
    std::vector<int> gpus;
    GpuMask mask;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i].node != n) continue;
      at.push_back(i);
      gpus.push_back(ranks[i].gpu);
      mask.set(ranks[i].gpu);
    }
    const std::vector<int> nics = AssignNics(c.topology(n), gpus);
    for (size_t i = 0; i < at.size(); ++i) ranks[at[i]].nic = nics[i];
    h.AddChunk(rs.plan, n, static_cast<int>(gpus.size()));
    rs.p.parts.push_back(NodeGpus{n, mask});
  }
  rs.p.ranks = std::move(ranks);
  return rs;
}

}  // namespace

std::vector<RailPlacement> StageRailPlacements(const RailHandle& h, const std::vector<int>& region,
                                               size_t home) {
  const std::span<const int> cap = h.Caps();
  std::vector<RailPlacement> out;
  const topo::Cluster& c = h.cluster();
  const job::Layout& l = h.layout();
  const int rails = c.rails.count;
  // TP groups inside NVLink domains, or spanning nodes (a unit of one GPU below a TP above 1).
  if (!h.RailsAligned() || rails > kMaxMaskRails || l.dp < 2 || h.TpInNvlinkDomains() ||
      h.unit() != l.tp || !h.GpusPriced() || h.limits().ranks_in_node_blocks) {
    return out;
  }
  StageAsk ask;
  ask.rails = rails;
  ask.unit = h.unit();
  ask.units = l.tp * l.dp / ask.unit;
  std::vector<RailNode> base;
  for (size_t i = 0; i < region.size(); ++i) {
    const int n = region[i];
    if (cap[n] < ask.unit) continue;
    if (base.size() == static_cast<size_t>(kMaxMaskNodes)) return out;
    RailNode x;
    x.node = n;
    x.home = i < home;
    x.gpu_of.assign(static_cast<size_t>(rails), -1);
    const GpuMask& free = h.FreeMaskOf(n);
    for (int g = 0; g < h.GpusOn(n); ++g) {
      if (!free.test(g)) continue;
      for (int nic : h.cost().node_model(n).NicsOf(g)) {
        if (nic < 0 || nic >= rails) continue;
        if (x.gpu_of[static_cast<size_t>(nic)] < 0) {
          x.gpu_of[static_cast<size_t>(nic)] = g;
          x.rem |= uint32_t{1} << nic;
        }
        break;  // a GPU serves one rail here: its first NIC on one
      }
    }
    base.push_back(std::move(x));
  }
  // The highest quality every stage reaches: a binary search over the qualities of stage 0's
  // options (a lower target only admits more options; 0 admits any).
  std::vector<double> levels = StageOptions(c, base, 0, ask).second;
  levels.push_back(0);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  for (const bool few_nodes : {true, false}) {
    ask.few_nodes = few_nodes;
    std::vector<RankSlot> ranks = BuildStages(c, base, l.pp, 0, ask);
    size_t lo = 0, hi = levels.size();  // levels[lo] reached; levels[hi] (if any) not
    while (!ranks.empty() && hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      std::vector<RankSlot> r = BuildStages(c, base, l.pp, levels[mid], ask);
      if (r.empty()) {
        hi = mid;
      } else {
        lo = mid;
        ranks = std::move(r);
      }
    }
    if (static_cast<int>(ranks.size()) != l.WorldSize()) continue;
    if (!out.empty() && out.back().p.ranks.size() == ranks.size()) {
      bool same = true;
      for (size_t i = 0; i < ranks.size() && same; ++i) {
        same = out.back().p.ranks[i].node == ranks[i].node &&
               out.back().p.ranks[i].gpu == ranks[i].gpu;
      }
      if (same) continue;
    }
    RailPlacement rs = Staged(h, std::move(ranks));
    if (!h.Price(rs.p)) continue;
    out.push_back(std::move(rs));
  }
  return out;
}

}  // namespace toposched::sched
