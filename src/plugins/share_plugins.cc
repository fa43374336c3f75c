// The share plugins: GPU best fit cluster-wide, and the three node rules.
#include "plugins/share_plugins.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

namespace toposched::sched {

namespace {

int MostRoom(const ShareView& view) {
  int most = 0;
  for (const ShareView::Shared& sh : view.shared) most = std::max(most, sh.room);
  return most;
}

// "no GPU is shared yet" or "no shared GPU has room (N shared, most room R milli)".
std::string NoRoom(int shared, int most_room) {
  if (shared == 0) return "no GPU is shared yet";
  return "no shared GPU has room (" + std::to_string(shared) + " shared, most room " +
         std::to_string(most_room) + " milli)";
}

// "gpu-best-fit": the shared GPU with the least room left after the job, cluster-wide (ties:
// the node with fewest free GPUs, then node, then GPU); none with room: as a 1-GPU job.
class GpuBestFitShares : public Named<SharePlugin, ShareRule> {
 public:
  GpuBestFitShares() : Named(ShareRule::kGpuBestFit, "gpu-best-fit") {}
  ShareChoice Choose(const ShareView& view, int milli, const topo::Cluster&) const override {
    ShareChoice out;
    int best_left = 1001, best_free = 0, with_room = 0;
    for (size_t i = 0; i < view.shared.size(); ++i) {
      const ShareView::Shared& sh = view.shared[i];
      if (sh.room < milli) continue;
      ++with_room;
      const int left = sh.room - milli;
      const int free = view.free[sh.node];
      if (out.index < 0 || std::tie(left, free, sh.node, sh.gpu) <
                               std::tie(best_left, best_free, view.shared[out.index].node,
                                        view.shared[out.index].gpu)) {
        best_left = left;
        best_free = free;
        out.index = static_cast<int>(i);
      }
    }
    if (out.index < 0) {
      out.why = NoRoom(view.shared_total, MostRoom(view));
      return out;
    }
    out.kind = ShareChoice::Kind::kShared;
    out.node = view.shared[out.index].node;
    out.why = "best fit among " + std::to_string(with_room) + " shared GPU" +
              (with_room == 1 ? "" : "s") + " with room";
    return out;
  }
};

// "node-best-fit", "least-allocated", "in-order": first the node (its free milli: 1000 per free
// GPU plus the room of its shared GPUs), then on it a shared GPU or a free one.
class NodeShares : public Named<SharePlugin, ShareRule> {
 public:
  using Named::Named;

  ShareChoice Choose(const ShareView& view, int milli,
                     const topo::Cluster& cluster) const override {
    ShareChoice out;
    int64_t pick_milli = 0;
    int takers = 0;
    const int pick = PickNode(view, milli, &pick_milli, &takers);
    if (pick < 0) {
      out.why = NoRoom(static_cast<int>(view.shared.size()), MostRoom(view));
      return out;
    }
    out.node = pick;
    out.why = name() + " node " + cluster.nodes[pick].name + " (" + std::to_string(pick_milli) +
              " milli free, " + std::to_string(takers) + " node" + (takers == 1 ? "" : "s") +
              " could take it)";
    // On the node: a shared GPU with room (in GPU order, so ties keep the lowest-numbered GPU)
    // or a free one.
    int chosen = -1;
    for (size_t i = 0; i < view.shared.size(); ++i) {
      const ShareView::Shared& sh = view.shared[i];
      if (sh.node != pick || sh.room < milli) continue;
      if (chosen < 0 || (rule() == ShareRule::kNodeBestFit && sh.room < view.shared[chosen].room) ||
          (rule() == ShareRule::kLeastAllocated && sh.room > view.shared[chosen].room)) {
        chosen = static_cast<int>(i);
      }
    }
    const int lowest_free = view.lowest_free[pick];
    bool open_free = chosen < 0;
    if (rule() == ShareRule::kLeastAllocated && lowest_free >= 0) open_free = true;
    if (rule() == ShareRule::kInOrder && chosen >= 0 && lowest_free >= 0 &&
        lowest_free < view.shared[chosen].gpu) {
      open_free = true;
    }
    if (open_free) {
      out.kind = ShareChoice::Kind::kOpenFree;
    } else {
      out.kind = ShareChoice::Kind::kShared;
      out.index = chosen;
    }
    return out;
  }

 private:
  // The node over those that can take the job (a free GPU, or a shared GPU with room); -1: none.
  int PickNode(const ShareView& view, int milli, int64_t* pick_milli, int* takers) const {
    int pick = -1;
    size_t at = 0;
    for (int n = 0; n < static_cast<int>(view.free.size()); ++n) {
      int64_t room = 0;
      bool fits = false;
      for (; at < view.shared.size() && view.shared[at].node == n; ++at) {
        room += view.shared[at].room;
        fits = fits || view.shared[at].room >= milli;
      }
      const int free = view.free[n];
      if (free < 0 || (!fits && free == 0)) continue;
      ++*takers;
      const int64_t node_milli = 1000 * static_cast<int64_t>(free) + room;
      if (pick < 0 || (rule() == ShareRule::kNodeBestFit && node_milli < *pick_milli) ||
          (rule() == ShareRule::kLeastAllocated && node_milli > *pick_milli)) {
        pick = n;
        *pick_milli = node_milli;
      }
      if (rule() == ShareRule::kInOrder) break;
    }
    return pick;
  }
};

}  // namespace

const std::vector<const SharePlugin*>& SharePlugins() {
  static const GpuBestFitShares gpu_best_fit;
  static const NodeShares node_best_fit(ShareRule::kNodeBestFit, "node-best-fit");
  static const NodeShares least_allocated(ShareRule::kLeastAllocated, "least-allocated");
  static const NodeShares in_order(ShareRule::kInOrder, "in-order");
  static const std::vector<const SharePlugin*> all = {&gpu_best_fit, &node_best_fit,
                                                      &least_allocated, &in_order};
  return all;
}

}  // namespace toposched::sched
