// The rails plugin "align"'s starting plans on nodes that share a set of rails
// (plugins/rail_starts.h).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <utility>

#include "plugins/rail_starts.h"

namespace toposched::sched {

namespace {

constexpr size_t kMaskSets = 1;  // rail sets tried per share, the most covered first

// RailMaskPlans' plans on the rail set `best_r` of s rails over m nodes (`ids`' free rails in
// `masks`).
void AddRailMaskPlans(const RailHandle& h, const std::vector<int>& ids,
                      const std::vector<uint32_t>& masks, const std::vector<char>& in_home,
                      uint32_t best_r, int s, int m, std::vector<GangPlan>& out) {
  const std::span<const int> cap = h.Caps();
  const int unit = h.unit();
  const int world = h.layout().WorldSize();
  std::vector<int> pick;
  for (size_t i = 0; i < ids.size(); ++i) {
    if ((masks[i] & best_r) == best_r && cap[ids[i]] >= s) pick.push_back(ids[i]);
  }
  std::stable_sort(pick.begin(), pick.end(), [&](int a, int b) {
    if (in_home[a] != in_home[b]) return in_home[a] > in_home[b];
    return cap[a] < cap[b];
  });
  // The fewest nodes that hold the rest too: a node beyond the first m adds its s.
  std::vector<int> take;
  int room = 0, placed = 0;
  for (int n : pick) {
    if (placed + room >= world && static_cast<int>(take.size()) >= m) break;
    take.push_back(n);
    placed += s;
    room += cap[n] - s;
  }
  if (placed > world) return;  // the first m nodes with R lack the room for the rest
  if (placed + room < world) return;
  std::sort(take.begin(), take.end());
  // The rest's units from the first node on, and evenly spaced (so that stages can end on
  // node boundaries: 5, 4, 5, 4 for two stages of 9 on shares of 4).
  const int extra = (world - placed) / unit;
  const size_t stride = extra > 0 ? std::max<size_t>(1, take.size() / extra) : 1;
  for (size_t step : {size_t{1}, stride}) {
    if (step == stride && (stride == 1 || extra == 0)) continue;
    std::vector<int> k(take.size(), s);
    int rest = extra;
    for (size_t i = 0, tries = 0; rest > 0 && tries < 4 * take.size() * (extra + 1); ++tries) {
      if (k[i] + unit <= cap[take[i]]) {
        k[i] += unit;
        --rest;
      }
      i = (i + step) % take.size();
      if (step > 1 && i < step && rest > 0) i = (i + 1) % take.size();
    }
    if (rest > 0) continue;
    GangPlan plan;
    for (size_t i = 0; i < take.size(); ++i) h.AddChunk(plan, take[i], k[i]);
    out.push_back(std::move(plan));
  }
}

}  // namespace

std::vector<GangPlan> RailMaskPlans(const RailHandle& h, const std::vector<int>& region,
                                    size_t home) {
  const std::span<const int> cap = h.Caps();
  std::vector<GangPlan> out;
  const int rails = h.cluster().rails.count;
  if (!h.RailsAligned() || rails > kMaxMaskRails || h.layout().dp < 2 || h.TpInNvlinkDomains()) {
    return out;
  }
  const int unit = h.unit();
  const int world = h.layout().WorldSize();
  // The region's nodes with room for a unit, and the rails of their free GPUs.
  std::vector<int> ids;
  for (int n : region) {
    if (cap[n] < unit) continue;
    if (ids.size() == static_cast<size_t>(kMaxMaskNodes)) return out;
    ids.push_back(n);
  }
  std::vector<uint32_t> masks;
  for (int n : ids) {
    uint32_t m = 0;
    const GpuMask& free = h.FreeMaskOf(n);
    for (int g = 0; g < h.GpusOn(n); ++g) {
      if (!free.test(g)) continue;
      for (int c : h.cost().node_model(n).NicsOf(g)) {
        if (c >= 0 && c < rails) m |= uint32_t{1} << c;
      }
    }
    masks.push_back(m);
  }
  std::vector<char> in_home(h.cluster().nodes.size(), 0);
  for (size_t i = 0; i < home && i < region.size(); ++i) in_home[region[i]] = 1;
  // Per share s (GPUs per node, a multiple of the unit): the rail set R of s rails that most
  // nodes' free GPUs cover, and a plan over m = world / s of them (home first, then the fullest),
  // each taking s GPUs and the rest of the job spread one unit at a time over their spare room.
  for (int s = h.MaxNodeGpus() / unit * unit; s >= unit; s -= unit) {
    const int m = world / s;
    if (m < 2 || m > h.limits().max_refine_nodes) continue;
    std::vector<std::pair<int, uint32_t>> sets;  // (nodes covered, rails), the most first
    for (uint32_t r = 1; r < (uint32_t{1} << rails); ++r) {
      if (std::popcount(r) != s) continue;
      int cover = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        cover += (masks[i] & r) == r && cap[ids[i]] >= s ? 1 : 0;
      }
      if (cover >= m) sets.emplace_back(-cover, r);
    }
    std::sort(sets.begin(), sets.end());
    if (sets.size() > kMaskSets) sets.resize(kMaskSets);
    for (const auto& [neg_cover, best_r] : sets)
      AddRailMaskPlans(h, ids, masks, in_home, best_r, s, m, out);
  }
  return out;
}

}  // namespace toposched::sched
