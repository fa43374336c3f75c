// The refine plugin "local-search"'s starting plans (plugins/refine_starts.h).
#include "plugins/refine_starts.h"

#include <algorithm>
#include <numeric>
#include <span>
#include <unordered_map>
#include <utility>

#include "plugins/node_plugins.h"
#include "plugins/stage_pack.h"

namespace toposched::sched {

std::vector<GangPlan> BalancedPlans(const RefineHandle& h, const std::vector<int>& region) {
  const std::span<const int> cap = h.Caps();
  const int world = h.layout().WorldSize();
  std::vector<GangPlan> out;
  if (h.TpInNvlinkDomains()) return out;
  const int unit = h.unit();
  std::vector<int> nodes;
  for (int n : region) {
    if (cap[n] >= unit) nodes.push_back(n);
  }
  std::stable_sort(nodes.begin(), nodes.end(), [&](int a, int b) { return cap[a] > cap[b]; });
  const int units = world / unit;
  int sum = 0;
  size_t m_min = 0;
  while (m_min < nodes.size() && sum < world) sum += cap[nodes[m_min++]];
  if (sum < world) return out;
  for (size_t m = std::max<size_t>(m_min, 2); m <= std::min(nodes.size(), m_min + 2); ++m) {
    if (static_cast<int>(m) > units) break;
    // Water filling in units: every node gets min(cap, level) units, the level as low as holds
    // the job; the remainder goes one unit each to the nodes that still have room.
    std::vector<int> capu(m), take(m, 0);
    for (size_t i = 0; i < m; ++i) capu[i] = cap[nodes[i]] / unit;
    int left = units;
    std::vector<size_t> open(m);
    std::iota(open.begin(), open.end(), 0);
    while (left > 0 && !open.empty()) {
      const int share = std::max(1, left / static_cast<int>(open.size()));
      std::vector<size_t> still;
      for (size_t i : open) {
        const int t = std::min({share, capu[i] - take[i], left});
        take[i] += t;
        left -= t;
        if (take[i] < capu[i]) still.push_back(i);
      }
      open = std::move(still);
    }
    if (left > 0) continue;
    std::vector<std::pair<int, int>> chunks;
    for (size_t i = 0; i < m; ++i) {
      if (take[i] > 0) chunks.emplace_back(nodes[i], take[i] * unit);
    }
    std::sort(chunks.begin(), chunks.end());
    GangPlan plan;
    for (const auto& [n, k] : chunks) {
      h.AddChunk(plan, n, k);
    }
    out.push_back(std::move(plan));
  }
  return out;
}

std::vector<GangPlan> StageAlignedPlans(const RefineHandle& h, const std::vector<int>& nodes) {
  const std::span<const int> cap = h.Caps();
  const int world = h.layout().WorldSize();
  std::vector<GangPlan> out;
  const job::Layout& l = h.layout();
  if (h.TpInNvlinkDomains() || l.pp < 2) return out;
  const int unit = h.unit();
  const int stage = l.tp * l.dp;
  int max_cap = 0;
  for (int n : nodes) max_cap = std::max(max_cap, cap[n]);
  // g = unit is the plain best fit (MakePlan).
  for (int g = std::min(stage, max_cap); g > unit && out.size() < 2; --g) {
    if (stage % g != 0 || g % unit != 0) continue;
    std::vector<int> caps;
    for (int n : nodes) caps.push_back(cap[n] / g * g);
    const std::vector<int> take = PickBins(caps, world);
    if (take.empty()) continue;
    GangPlan plan;
    for (size_t i = 0; i < take.size(); ++i) {
      if (take[i] == 0) continue;
      h.AddChunk(plan, nodes[i], take[i]);
    }
    std::sort(plan.chunks.begin(), plan.chunks.end());
    out.push_back(std::move(plan));
  }
  return out;
}

std::vector<GangPlan> StagePiecePlans(const RefineHandle& h, std::vector<int> nodes) {
  const std::span<const int> cap = h.Caps();
  std::vector<GangPlan> out;
  const job::Layout& l = h.layout();
  if (h.TpInNvlinkDomains() || l.pp < 2) return out;
  const int unit = h.unit();
  const int units = l.tp * l.dp / unit;  // a stage, in units
  int max_cap = 0;
  for (int n : nodes) max_cap = std::max(max_cap, cap[n] / unit);
  if (max_cap == 0) return out;
  const int k = (units + max_cap - 1) / max_cap;
  // Equal pieces divide the stage: StageAlignedPlans covers them, packed best fit.
  if (units % k == 0) return out;
  std::vector<int> pieces;  // one stage, in GPUs, largest first
  for (int i = 0; i < k; ++i) pieces.push_back((units / k + (i < units % k ? 1 : 0)) * unit);
  std::sort(nodes.begin(), nodes.end());
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) std::reverse(pieces.begin(), pieces.end());
    GangPlan plan;
    size_t next = 0;  // the next piece, over every stage
    const size_t total = pieces.size() * static_cast<size_t>(l.pp);
    for (int n : nodes) {
      if (next == total) break;
      int take = 0;
      while (next < total && take + pieces[next % pieces.size()] <= cap[n]) {
        take += pieces[next++ % pieces.size()];
      }
      if (take == 0) continue;
      h.AddChunk(plan, n, take);
    }
    if (next == total) out.push_back(std::move(plan));
  }
  return out;
}

std::vector<GangPlan> StagePackPlans(const RefineHandle& h, const std::vector<int>& region,
                                     size_t home) {
  const std::span<const int> cap = h.Caps();
  const job::Layout& l = h.layout();
  if (h.TpInNvlinkDomains()) return {};
  const int unit = h.unit();
  const int stage_units = l.tp * l.dp / unit;
  const int64_t units = stage_units * static_cast<int64_t>(l.pp);
  // The network a node's GPUs reach: its distinct NICs and the best rate one gives (GB/s).
  auto network = [&](int n, PackSlot& x) {
    const cost::NodeCostModel& nm = h.cost().node_model(n);
    std::vector<int> seen;
    for (int g = 0; g < h.GpusOn(n); ++g) {
      for (int c : nm.NicsOf(g)) {
        if (std::find(seen.begin(), seen.end(), c) == seen.end()) seen.push_back(c);
        x.nic_gbps = std::max(x.nic_gbps, nm.NicGbps(g, c));
      }
    }
    x.nics = static_cast<int>(seen.size());
  };
  constexpr int kByBandwidth = -2;
  // Stage-pack plans over the first `upto` nodes of `region` with room, in id order (each marked
  // away when it lies beyond `home` or, for a profile >= 0, is of another hardware profile);
  // none when the program's work would exceed kStagePackWork.
  auto pack = [&](size_t upto, int profile) {
    // A profile's plan: fewest nodes of the others (m = 1); kByBandwidth: the thickest pieces
    // by network bandwidth; else the thickest pieces in units.
    std::vector<GangPlan> out;
    std::vector<std::pair<int, bool>> nodes;
    int max_cap = 0;
    for (size_t i = 0; i < upto; ++i) {
      if (cap[region[i]] < unit) continue;
      const bool other = profile >= 0 && h.ProfileOf(region[i]) != profile;
      nodes.emplace_back(region[i], i >= home || other);
      max_cap = std::max(max_cap, cap[region[i]] / unit);
    }
    // The work is at least nodes × (units + 1) × 2 × largest node: skip the numbering of
    // domains when that is over already (StagePackCounts checks the exact figure).
    if (static_cast<int64_t>(nodes.size()) * (units + 1) * 2 * max_cap > kStagePackWork) return out;
    std::sort(nodes.begin(), nodes.end());
    std::vector<PackSlot> slots;
    std::unordered_map<int, int> groups;  // lowest domain -> its number
    for (const auto& [n, away] : nodes) {
      const int g = groups.emplace(h.cluster().nodes[n].domain, static_cast<int>(groups.size()))
                        .first->second;
      slots.push_back(PackSlot{cap[n] / unit, g, away});
      if (profile == kByBandwidth) network(n, slots.back());
    }
    std::vector<std::vector<int>> all;
    if (profile == kByBandwidth) {
      std::vector<int> thick = StagePackByBandwidth(slots, stage_units, l.pp, unit, kStagePackWork);
      if (!thick.empty()) all.push_back(std::move(thick));
    } else if (profile < 0) {
      all = StagePackCounts(slots, stage_units, l.pp, kStagePackWork);
    } else if (std::vector<int> few = StagePackFewestAway(slots, stage_units, l.pp, kStagePackWork);
               !few.empty()) {
      all.push_back(std::move(few));
    }
    for (const std::vector<int>& counts : all) {
      GangPlan plan;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (counts[i] > 0) h.AddChunk(plan, nodes[i].first, counts[i] * unit);
      }
      out.push_back(std::move(plan));
    }
    return out;
  };
  // The whole region where the program stays small; else the candidate domain alone (a leaf
  // of a large cluster, where most of the gain is). Nothing else empties the region's answer
  // that the domain, a subset of it, could escape: too few free units or fewer than two nodes.
  size_t upto = region.size();
  std::vector<GangPlan> out = pack(upto, -1);
  if (out.empty() && home < region.size()) out = pack(upto = home, -1);
  if (out.empty() || h.cluster().profiles.size() < 2) return out;
  // Nodes of several hardware profiles: also the plans with the fewest nodes of the others, per
  // profile (a stage's DP groups are as slow as their slowest node).
  std::vector<uint8_t> present(h.cluster().profiles.size(), 0);
  for (size_t i = 0; i < upto; ++i) {
    if (cap[region[i]] >= unit) present[h.ProfileOf(region[i])] = 1;
  }
  if (std::count(present.begin(), present.end(), 1) < 2) return out;
  for (GangPlan& p : pack(upto, kByBandwidth)) out.push_back(std::move(p));
  for (size_t pi = 0; pi < present.size(); ++pi) {
    if (!present[pi]) continue;
    for (GangPlan& p : pack(upto, static_cast<int>(pi))) out.push_back(std::move(p));
  }
  return out;
}

std::vector<GangPlan> AnchoredPlans(const RefineHandle& h, const std::vector<int>& region,
                                    size_t home) {
  const std::span<const int> cap = h.Caps();
  const int world = h.layout().WorldSize();
  std::vector<GangPlan> out;
  if (h.TpInNvlinkDomains()) return out;
  // The roomiest nodes, one per distinct free count (among equals the lowest id leaves the most
  // nodes after it): up to 4 from the domain, 2 more from the whole region.
  auto roomiest = [&](size_t from, size_t to, size_t count, std::vector<int>& picked) {
    std::vector<int> nodes;
    for (size_t i = from; i < to && i < region.size(); ++i) {
      if (cap[region[i]] > 0) nodes.push_back(region[i]);
    }
    std::stable_sort(nodes.begin(), nodes.end(),
                     [&](int a, int b) { return cap[a] != cap[b] ? cap[a] > cap[b] : a < b; });
    size_t added = 0;
    for (int a : nodes) {
      if (added >= count) break;
      bool dup = false;
      for (int p : picked) dup = dup || p == a || cap[p] == cap[a];
      if (!dup) {
        picked.push_back(a);
        ++added;
      }
    }
  };
  std::vector<int> picked;
  roomiest(0, home, 4, picked);
  const size_t from_home = picked.size();
  roomiest(home, region.size(), 2, picked);
  // Anchors in node order: `lead` first (each as far as it goes), the rest best fit on the
  // nodes after the last of them.
  auto plan_from = [&](const std::vector<int>& lead) {
    GangPlan plan;
    int left = world;
    for (int a : lead) {
      const int k = std::min(cap[a], left);
      if (k <= 0) return;
      h.AddChunk(plan, a, k);
      left -= k;
    }
    if (left > 0) {
      std::vector<int> rest_nodes, caps;
      for (int n : region) {
        if (n > lead.back() && cap[n] > 0) {
          rest_nodes.push_back(n);
          caps.push_back(cap[n]);
        }
      }
      std::vector<int> take = PickBins(caps, left);
      if (take.empty()) return;
      for (size_t i = 0; i < take.size(); ++i) {
        if (take[i] == 0) continue;
        h.AddChunk(plan, rest_nodes[i], take[i]);
      }
    }
    std::sort(plan.chunks.begin(), plan.chunks.end());
    out.push_back(std::move(plan));
  };
  int max_cap = 0;
  for (int a : picked) {
    plan_from({a});
    max_cap = std::max(max_cap, cap[a]);
  }
  // When no node holds the first stage (rank 0's TP and DP groups), two anchors: the pairs of
  // the three roomiest from the domain, in node order.
  const int stage = h.layout().tp * h.layout().dp;
  if (stage > max_cap) {
    const size_t k = std::min<size_t>(from_home, 3);
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = i + 1; j < k; ++j) {
        plan_from({std::min(picked[i], picked[j]), std::max(picked[i], picked[j])});
      }
    }
  }
  return out;
}

}  // namespace toposched::sched
