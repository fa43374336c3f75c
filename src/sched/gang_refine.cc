// The starting plans of the gang placer's local search (the refine plugin: sched/refine_plugins.h),
// and when it runs.

#include "sched/gang_search.h"

namespace toposched::sched::gang_internal {

bool Search::RefineOn() const {
  return plug_.refine->refines() && comm_w_ > 0 && plug_.gpus->priced() && mode_ != Mode::kNvdTp &&
         opt_.max_refine_evaluations > 0;
}

bool Search::WholeNodesOfOneKind(const Plan& plan) const {
  // Only large plans: on a few nodes, other count vectors (a roomier first node for rank 0's
  // groups) can still win, and trying them is cheap there.
  if (plan.chunks.size() <= 8) return false;
  const int* prof = ix_.node_profile.data();
  const int n0 = plan.chunks[0].first;
  for (const auto& [n, k] : plan.chunks) {
    if (k != nodes_[n].free || k != state_.GpuCount(n) || prof[n] != prof[n0] ||
        c_.nodes[n].domain != c_.nodes[n0].domain) {
      return false;
    }
  }
  return true;
}

std::vector<Plan> Search::BalancedPlans(const std::vector<int>& region) const {
  std::vector<Plan> out;
  if (mode_ == Mode::kNvdTp) return out;
  const int unit = this->unit();
  std::vector<int> nodes;
  for (int n : region) {
    if (nodes_[n].cap >= unit) nodes.push_back(n);
  }
  std::stable_sort(nodes.begin(), nodes.end(),
                   [&](int a, int b) { return nodes_[a].cap > nodes_[b].cap; });
  const int units = world_ / unit;
  int sum = 0;
  size_t m_min = 0;
  while (m_min < nodes.size() && sum < world_) sum += nodes_[nodes[m_min++]].cap;
  if (sum < world_) return out;
  for (size_t m = std::max<size_t>(m_min, 2); m <= std::min(nodes.size(), m_min + 2); ++m) {
    if (static_cast<int>(m) > units) break;
    // Water filling in units: every node gets min(cap, level) units, the level as low as holds
    // the job; the remainder goes one unit each to the nodes that still have room.
    std::vector<int> capu(m), take(m, 0);
    for (size_t i = 0; i < m; ++i) capu[i] = nodes_[nodes[i]].cap / unit;
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
    Plan plan;
    for (const auto& [n, k] : chunks) {
      AddChunk(plan, n, k);
    }
    out.push_back(std::move(plan));
  }
  return out;
}

std::vector<Plan> Search::StageAlignedPlans(const std::vector<int>& nodes) const {
  std::vector<Plan> out;
  const job::Layout& l = job_.layout;
  if (mode_ == Mode::kNvdTp || l.pp < 2) return out;
  const int unit = this->unit();
  const int stage = l.tp * l.dp;
  int max_cap = 0;
  for (int n : nodes) max_cap = std::max(max_cap, nodes_[n].cap);
  // g = unit is the plain best fit (MakePlan).
  for (int g = std::min(stage, max_cap); g > unit && out.size() < 2; --g) {
    if (stage % g != 0 || g % unit != 0) continue;
    std::vector<int> caps;
    for (int n : nodes) caps.push_back(nodes_[n].cap / g * g);
    const std::vector<int> take = PickBins(caps, world_);
    if (take.empty()) continue;
    Plan plan;
    for (size_t i = 0; i < take.size(); ++i) {
      if (take[i] == 0) continue;
      AddChunk(plan, nodes[i], take[i]);
    }
    std::sort(plan.chunks.begin(), plan.chunks.end());
    out.push_back(std::move(plan));
  }
  return out;
}

std::vector<Plan> Search::StagePiecePlans(std::vector<int> nodes) const {
  std::vector<Plan> out;
  const job::Layout& l = job_.layout;
  if (mode_ == Mode::kNvdTp || l.pp < 2) return out;
  const int unit = this->unit();
  const int units = l.tp * l.dp / unit;  // a stage, in units
  int max_cap = 0;
  for (int n : nodes) max_cap = std::max(max_cap, nodes_[n].cap / unit);
  if (max_cap == 0) return out;
  const int k = (units + max_cap - 1) / max_cap;
  // Equal pieces divide the stage: StageAlignedPlans covers them, packed best fit.
  if (units % k == 0) return out;
  std::vector<int> pieces;  // one stage, in GPUs, largest first
  for (int i = 0; i < k; ++i) pieces.push_back((units / k + (i < units % k ? 1 : 0)) * unit);
  std::sort(nodes.begin(), nodes.end());
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) std::reverse(pieces.begin(), pieces.end());
    Plan plan;
    size_t next = 0;  // the next piece, over every stage
    const size_t total = pieces.size() * static_cast<size_t>(l.pp);
    for (int n : nodes) {
      if (next == total) break;
      int take = 0;
      while (next < total && take + pieces[next % pieces.size()] <= nodes_[n].cap) {
        take += pieces[next++ % pieces.size()];
      }
      if (take == 0) continue;
      AddChunk(plan, n, take);
    }
    if (next == total) out.push_back(std::move(plan));
  }
  return out;
}

std::vector<Plan> Search::StagePackPlans(const std::vector<int>& region, size_t home) const {
  const job::Layout& l = job_.layout;
  if (mode_ == Mode::kNvdTp) return {};
  const int unit = this->unit();
  const int stage_units = l.tp * l.dp / unit;
  const int64_t units = stage_units * static_cast<int64_t>(l.pp);
  // The network a node's GPUs reach: its distinct NICs and the best rate one gives (GB/s).
  auto network = [&](int n, PackSlot& x) {
    const cost::NodeCostModel& nm = cost_.node_model(n);
    std::vector<int> seen;
    for (int g = 0; g < state_.GpuCount(n); ++g) {
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
    std::vector<Plan> out;
    std::vector<std::pair<int, bool>> nodes;
    int max_cap = 0;
    for (size_t i = 0; i < upto; ++i) {
      if (nodes_[region[i]].cap < unit) continue;
      const bool other = profile >= 0 && ix_.node_profile[region[i]] != profile;
      nodes.emplace_back(region[i], i >= home || other);
      max_cap = std::max(max_cap, nodes_[region[i]].cap / unit);
    }
    // The work is at least nodes × (units + 1) × 2 × largest node: skip the numbering of
    // domains when that is over already (StagePackCounts checks the exact figure).
    if (static_cast<int64_t>(nodes.size()) * (units + 1) * 2 * max_cap > kStagePackWork) return out;
    std::sort(nodes.begin(), nodes.end());
    std::vector<PackSlot> slots;
    std::unordered_map<int, int> groups;  // lowest domain -> its number
    for (const auto& [n, away] : nodes) {
      const int g =
          groups.emplace(c_.nodes[n].domain, static_cast<int>(groups.size())).first->second;
      slots.push_back(PackSlot{nodes_[n].cap / unit, g, away});
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
      Plan plan;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (counts[i] > 0) AddChunk(plan, nodes[i].first, counts[i] * unit);
      }
      out.push_back(std::move(plan));
    }
    return out;
  };
  // The whole region where the program stays small; else the candidate domain alone (a leaf
  // of a large cluster, where most of the gain is). Nothing else empties the region's answer
  // that the domain, a subset of it, could escape: too few free units or fewer than two nodes.
  size_t upto = region.size();
  std::vector<Plan> out = pack(upto, -1);
  if (out.empty() && home < region.size()) out = pack(upto = home, -1);
  if (out.empty() || c_.profiles.size() < 2) return out;
  // Nodes of several hardware profiles: also the plans with the fewest nodes of the others, per
  // profile (a stage's DP groups are as slow as their slowest node).
  std::vector<uint8_t> present(c_.profiles.size(), 0);
  for (size_t i = 0; i < upto; ++i) {
    if (nodes_[region[i]].cap >= unit) present[ix_.node_profile[region[i]]] = 1;
  }
  if (std::count(present.begin(), present.end(), 1) < 2) return out;
  for (Plan& p : pack(upto, kByBandwidth)) out.push_back(std::move(p));
  for (size_t pi = 0; pi < present.size(); ++pi) {
    if (!present[pi]) continue;
    for (Plan& p : pack(upto, static_cast<int>(pi))) out.push_back(std::move(p));
  }
  return out;
}

std::vector<Plan> Search::AnchoredPlans(const std::vector<int>& region, size_t home) const {
  std::vector<Plan> out;
  if (mode_ == Mode::kNvdTp) return out;
  // The roomiest nodes, one per distinct free count (among equals the lowest id leaves the most
  // nodes after it): up to 4 from the domain, 2 more from the whole region.
  auto roomiest = [&](size_t from, size_t to, size_t count, std::vector<int>& picked) {
    std::vector<int> nodes;
    for (size_t i = from; i < to && i < region.size(); ++i) {
      if (nodes_[region[i]].cap > 0) nodes.push_back(region[i]);
    }
    std::stable_sort(nodes.begin(), nodes.end(), [&](int a, int b) {
      return nodes_[a].cap != nodes_[b].cap ? nodes_[a].cap > nodes_[b].cap : a < b;
    });
    size_t added = 0;
    for (int a : nodes) {
      if (added >= count) break;
      bool dup = false;
      for (int p : picked) dup = dup || p == a || nodes_[p].cap == nodes_[a].cap;
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
    Plan plan;
    int left = world_;
    for (int a : lead) {
      const int k = std::min(nodes_[a].cap, left);
      if (k <= 0) return;
      AddChunk(plan, a, k);
      left -= k;
    }
    if (left > 0) {
      std::vector<int> rest_nodes, caps;
      for (int n : region) {
        if (n > lead.back() && nodes_[n].cap > 0) {
          rest_nodes.push_back(n);
          caps.push_back(nodes_[n].cap);
        }
      }
      std::vector<int> take = PickBins(caps, left);
      if (take.empty()) return;
      for (size_t i = 0; i < take.size(); ++i) {
        if (take[i] == 0) continue;
        AddChunk(plan, rest_nodes[i], take[i]);
      }
    }
    std::sort(plan.chunks.begin(), plan.chunks.end());
    out.push_back(std::move(plan));
  };
  int max_cap = 0;
  for (int a : picked) {
    plan_from({a});
    max_cap = std::max(max_cap, nodes_[a].cap);
  }
  // When no node holds the first stage (rank 0's TP and DP groups), two anchors: the pairs of
  // the three roomiest from the domain, in node order.
  const int stage = job_.layout.tp * job_.layout.dp;
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

std::string Search::CommonDomainName(const Plan& plan) const {
  std::vector<int> nodes;
  for (const auto& [n, k] : plan.chunks) nodes.push_back(n);
  const int d = c_.LowestCommonDomain(nodes);
  if (d >= 0) return c_.domains[d].name;
  return c_.name.empty() ? "cluster" : c_.name;
}

std::vector<int> Search::RefineRegion(const std::vector<int>& domain_nodes) const {
  // The domain's nodes come first (RefineRegion()[0 .. domain_nodes.size()) ).
  if (job_.constraints.job.mode == ConstraintMode::kRequired ||
      domain_nodes.size() == nodes_.size()) {
    return domain_nodes;
  }
  std::vector<int> r = domain_nodes;
  std::vector<char> in(nodes_.size(), 0);
  for (int n : domain_nodes) in[n] = 1;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (!in[n] && nodes_[n].cap > 0) r.push_back(static_cast<int>(n));
  }
  return r;
}

}  // namespace toposched::sched::gang_internal
