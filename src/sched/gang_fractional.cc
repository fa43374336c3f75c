// The gang placer's fractional GPU shares (jobs of gpu_milli < 1000).
#include "sched/gang_search.h"

namespace toposched::sched::gang_internal {

Verdict Search::RunFractional() {
  if (plug_.shares != ShareRule::kGpuBestFit) return RunFractionalByNode();
  const int milli = job_.gpu_milli;
  // Best fit over the shared GPUs: least room left after the job, then the fullest node (fewest
  // free GPUs), then node, then GPU.
  int best_node = -1, best_gpu = -1, best_left = 1001, best_free = 0, with_room = 0, most_room = 0;
  state_.ForEachSharedGpu([&](const ClusterState::SharedGpu& sh) {
    if (!NodeTakesWork(sh.node) || state_.GpuHealth(sh.node, sh.gpu) == topo::Health::kUnhealthy) {
      return;
    }
    const int room = 1000 - sh.used_milli;
    most_room = std::max(most_room, room);
    if (room < milli) return;
    ++with_room;
    const int left = room - milli;
    const int free = state_.FreeMask(sh.node).count();
    if (best_node < 0 || std::tie(left, free, sh.node, sh.gpu) <
                             std::tie(best_left, best_free, best_node, best_gpu)) {
      best_left = left;
      best_free = free;
      best_node = sh.node;
      best_gpu = sh.gpu;
    }
  });
  const std::string what = std::to_string(milli) + " milli of one GPU: ";
  if (best_node >= 0) {
    Placement p;
    GpuMask m;
    m.set(best_gpu);
    p.parts.push_back(NodeGpus{best_node, m});
    const int order[1] = {best_gpu};
    const std::vector<int> nics = AssignNics(c_.topology(best_node), order);
    p.ranks.push_back(RankSlot{0, best_node, best_gpu, nics.empty() ? -1 : nics[0]});
    p.domain = c_.nodes[best_node].name;
    p.gpu_milli = milli;
    (void)Score(p);
    const int used_after = 1000 - best_left;
    p.explanation = what + "shared GPU " + std::to_string(best_gpu) + " on node " +
                    c_.nodes[best_node].name + ": " + std::to_string(used_after) +
                    "/1000 milli used after (best fit among " + std::to_string(with_room) +
                    " shared GPU" + (with_room == 1 ? "" : "s") + " with room)";
    Verdict v;
    v.kind = VerdictKind::kFit;
    v.placement = std::move(p);
    return v;
  }
  Verdict v = RunWhole();
  const std::string shared_note =
      state_.SharedGpuCount() == 0
          ? std::string("no GPU is shared yet")
          : "no shared GPU has room (" + std::to_string(state_.SharedGpuCount()) +
                " shared, most room " + std::to_string(most_room) + " milli)";
  if (v.fit()) {
    Placement& p = *v.placement;
    p.gpu_milli = milli;
    const NodeGpus& part = p.parts[0];
    p.explanation = what + "free GPU " + std::to_string(part.gpus.lowest()) + " on node " +
                    c_.nodes[part.node].name + " becomes shared: " + std::to_string(milli) +
                    "/1000 milli used after (" + shared_note + "); " + p.explanation;
    return v;
  }
  v.reasons.insert(v.reasons.begin(), "needs " + what.substr(0, what.size() - 2) + "; " +
                                          shared_note + " and no free GPU fits");
  return v;
}

Verdict Search::RunFractionalByNode() {
  const int milli = job_.gpu_milli;
  const ShareRule rule = plug_.shares;
  struct Shared {
    int node, gpu, room;
  };
  std::vector<Shared> shared;
  state_.ForEachSharedGpu([&](const ClusterState::SharedGpu& sh) {
    if (!NodeTakesWork(sh.node) || state_.GpuHealth(sh.node, sh.gpu) == topo::Health::kUnhealthy) {
      return;
    }
    shared.push_back(Shared{sh.node, sh.gpu, 1000 - sh.used_milli});
  });
  std::sort(shared.begin(), shared.end(), [](const Shared& a, const Shared& b) {
    return std::tie(a.node, a.gpu) < std::tie(b.node, b.gpu);
  });
  // The node: over the nodes that can take the job (a free GPU, or a shared GPU with room).
  int pick = -1;
  int64_t pick_milli = 0;
  int takers = 0;
  size_t at = 0;
  for (int n = 0; n < static_cast<int>(c_.nodes.size()); ++n) {
    int64_t room = 0;
    bool fits = false;
    for (; at < shared.size() && shared[at].node == n; ++at) {
      room += shared[at].room;
      fits = fits || shared[at].room >= milli;
    }
    if (!NodeTakesWork(n)) continue;
    const int free = state_.FreeMask(n).count();
    if (!fits && free == 0) continue;
    ++takers;
    const int64_t node_milli = 1000 * static_cast<int64_t>(free) + room;
    if (pick < 0 || (rule == ShareRule::kNodeBestFit && node_milli < pick_milli) ||
        (rule == ShareRule::kLeastAllocated && node_milli > pick_milli)) {
      pick = n;
      pick_milli = node_milli;
    }
    if (rule == ShareRule::kInOrder) break;
  }
  const std::string what = std::to_string(milli) + " milli of one GPU: ";
  if (pick < 0) {
    // No node can take it; the 1-GPU path says why (and whether it never can).
    int most_room = 0;
    for (const Shared& sh : shared) most_room = std::max(most_room, sh.room);
    Verdict v = RunWhole();
    if (v.fit()) {  // not expected: RunWhole filters nodes the same way
      v.placement->gpu_milli = milli;
      return v;
    }
    v.reasons.insert(
        v.reasons.begin(),
        "needs " + what.substr(0, what.size() - 2) + "; " +
            (shared.empty() ? std::string("no GPU is shared yet")
                            : "no shared GPU has room (" + std::to_string(shared.size()) +
                                  " shared, most room " + std::to_string(most_room) + " milli)") +
            " and no free GPU fits");
    return v;
  }
  // The GPU on the chosen node: a shared GPU (`chosen`, an index into `shared`) or a free one.
  const GpuMask& free_mask = state_.FreeMask(pick);
  const int lowest_free = free_mask.count() > 0 ? free_mask.lowest() : -1;
  int chosen = -1;
  for (size_t i = 0; i < shared.size(); ++i) {
    const Shared& sh = shared[i];
    if (sh.node != pick || sh.room < milli) continue;
    // In GPU order, so ties (and in-order) keep the lowest-numbered GPU.
    if (chosen < 0 || (rule == ShareRule::kNodeBestFit && sh.room < shared[chosen].room) ||
        (rule == ShareRule::kLeastAllocated && sh.room > shared[chosen].room)) {
      chosen = static_cast<int>(i);
    }
  }
  bool open_free = chosen < 0;
  if (rule == ShareRule::kLeastAllocated && lowest_free >= 0) open_free = true;
  if (rule == ShareRule::kInOrder && chosen >= 0 && lowest_free >= 0 &&
      lowest_free < shared[chosen].gpu) {
    open_free = true;
  }
  const std::string why = PluginName(rule) + " node " + c_.nodes[pick].name + " (" +
                          std::to_string(pick_milli) + " milli free, " + std::to_string(takers) +
                          " node" + (takers == 1 ? "" : "s") + " could take it)";
  if (!open_free) {
    const Shared& sh = shared[chosen];
    Placement p;
    GpuMask m;
    m.set(sh.gpu);
    p.parts.push_back(NodeGpus{sh.node, m});
    const int order[1] = {sh.gpu};
    const std::vector<int> nics = AssignNics(c_.topology(sh.node), order);
    p.ranks.push_back(RankSlot{0, sh.node, sh.gpu, nics.empty() ? -1 : nics[0]});
    p.domain = c_.nodes[sh.node].name;
    p.gpu_milli = milli;
    (void)Score(p);
    p.explanation = what + "shared GPU " + std::to_string(sh.gpu) + " on node " +
                    c_.nodes[sh.node].name + ": " + std::to_string(1000 - sh.room + milli) +
                    "/1000 milli used after (" + why + ")";
    Verdict v;
    v.kind = VerdictKind::kFit;
    v.placement = std::move(p);
    return v;
  }
  Plan plan;
  plan.chunks.emplace_back(pick, 1);
  std::optional<Placement> p = Materialize(plan);
  if (!p) return RunWhole();  // not expected: the node has a free GPU
  p->domain = c_.nodes[pick].name;
  p->gpu_milli = milli;
  p->explanation = what + "free GPU " + std::to_string(p->parts[0].gpus.lowest()) + " on node " +
                   c_.nodes[pick].name + " becomes shared: " + std::to_string(milli) +
                   "/1000 milli used after (" + why + ")";
  Verdict v;
  v.kind = VerdictKind::kFit;
  v.placement = std::move(*p);
  return v;
}

}  // namespace toposched::sched::gang_internal
