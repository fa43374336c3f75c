#include "placer/scatter.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "placer/job_views.h"

namespace toposched::sched {

namespace {

bool Eligible(const topo::Cluster& c, const ClusterState& state, const job::JobSpec& job,
              int node) {
  if (state.NodeHealth(node) == topo::Health::kUnhealthy || state.NodeDrained(node)) return false;
  const topo::NodeTopology& t = c.topology(node);
  if (!job.constraints.gpu_model.empty() && NodeGpuModel(t) != job.constraints.gpu_model) {
    return false;
  }
  if (job.constraints.rdma_required && !HasRdma(t)) return false;
  return true;
}

std::vector<std::pair<int, int>> PickSpread(const topo::Cluster& c, const ClusterState& state,
                                            const job::JobSpec& job, int k) {
  // (free GPUs, −node): the most free first, ties to the lowest node id.
  std::priority_queue<std::pair<int, int>> heap;
  std::vector<GpuMask> free(c.nodes.size());
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    if (!Eligible(c, state, job, n)) continue;
    free[n] = state.FreeMask(n);
    if (free[n].count() > 0) heap.emplace(free[n].count(), -n);
  }
  std::vector<std::pair<int, int>> out;
  while (static_cast<int>(out.size()) < k && !heap.empty()) {
    const int n = -heap.top().second;
    heap.pop();
    int g = 0;
    while (!free[n].test(g)) ++g;
    free[n].reset(g);
    out.emplace_back(n, g);
    if (free[n].count() > 0) heap.emplace(free[n].count(), -n);
  }
  return out;
}

std::vector<std::pair<int, int>> PickRandom(const topo::Cluster& c, const ClusterState& state,
                                            const job::JobSpec& job, int k, uint64_t seed) {
  std::vector<std::pair<int, int>> all;
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    if (!Eligible(c, state, job, n)) continue;
    const GpuMask& m = state.FreeMask(n);
    const int g_count = static_cast<int>(c.topology(n).gpus.size());
    for (int g = 0; g < g_count; ++g) {
      if (m.test(g)) all.emplace_back(n, g);
    }
  }
  if (static_cast<int>(all.size()) < k) return {};
  std::mt19937_64 rng(seed ^ std::hash<std::string>{}(job.name) ^
                      (static_cast<uint64_t>(all.size()) << 32));
  // Partial Fisher–Yates on the raw 64-bit output (no library distribution).
  for (int i = 0; i < k; ++i) {
    const size_t j = i + static_cast<size_t>(rng() % (all.size() - i));
    std::swap(all[i], all[j]);
  }
  all.resize(k);
  return all;
}

}  // namespace

std::optional<Placement> PlaceScattered(const cost::CostModel& cost, const ClusterState& state,
                                        const job::JobSpec& job, ScatterRule rule, uint64_t seed) {
  const topo::Cluster& c = cost.cluster();
  const int k = job.total_gpus;
  std::vector<std::pair<int, int>> picked = rule == ScatterRule::kSpread
                                                ? PickSpread(c, state, job, k)
                                                : PickRandom(c, state, job, k, seed);
  if (static_cast<int>(picked.size()) < k || k < 1) return std::nullopt;
  Placement p;
  std::map<int, GpuMask> by_node;
  for (int r = 0; r < k; ++r) {
    by_node[picked[r].first].set(picked[r].second);
    p.ranks.push_back(RankSlot{r, picked[r].first, picked[r].second, -1});
  }
  for (const auto& [node, mask] : by_node) p.parts.push_back(NodeGpus{node, mask});
  p.domain = "cluster";
  if (!ScorePlacement(cost, job.layout, p).ok()) return std::nullopt;
  p.explanation = std::string(rule == ScatterRule::kSpread ? "spread" : "random") + ": " +
                  std::to_string(k) + " GPUs one at a time over " + std::to_string(p.parts.size()) +
                  " node(s), topology ignored; predicted " + std::to_string(p.predicted_ms) + " ms";
  return p;
}

}  // namespace toposched::sched
