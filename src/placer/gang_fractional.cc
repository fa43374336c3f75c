// The gang placer's fractional GPU shares (jobs of gpu_milli < 1000): the `shares` plugin
// (plugins/share_plugins.h) chooses, the search builds the placement and says why.
#include "placer/gang_search.h"

namespace toposched::sched::gang_internal {

ShareView Search::MakeShareView() const {
  ShareView view;
  const int n_nodes = static_cast<int>(c_.nodes.size());
  view.free.assign(n_nodes, -1);
  view.lowest_free.assign(n_nodes, -1);
  for (int n = 0; n < n_nodes; ++n) {
    if (!NodeTakesWork(n)) continue;
    const GpuMask& free = state_.FreeMask(n);
    view.free[n] = free.count();
    if (view.free[n] > 0) view.lowest_free[n] = free.lowest();
  }
  state_.ForEachSharedGpu([&](const ClusterState::SharedGpu& sh) {
    if (view.free[sh.node] < 0 || state_.GpuHealth(sh.node, sh.gpu) == topo::Health::kUnhealthy) {
      return;
    }
    view.shared.push_back(ShareView::Shared{sh.node, sh.gpu, 1000 - sh.used_milli});
  });
  std::sort(view.shared.begin(), view.shared.end(),
            [](const ShareView::Shared& a, const ShareView::Shared& b) {
              return std::tie(a.node, a.gpu) < std::tie(b.node, b.gpu);
            });
  view.shared_total = state_.SharedGpuCount();
  return view;
}

Verdict Search::OnSharedGpu(const ShareView::Shared& sh, const std::string& why) const {
  const int milli = job_.gpu_milli;
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
  p.explanation = std::to_string(milli) + " milli of one GPU: shared GPU " +
                  std::to_string(sh.gpu) + " on node " + c_.nodes[sh.node].name + ": " +
                  std::to_string(1000 - sh.room + milli) + "/1000 milli used after (" + why + ")";
  Verdict v;
  v.kind = VerdictKind::kFit;
  v.placement = std::move(p);
  return v;
}

namespace {

// "250 milli of one GPU: free GPU 3 on node gpu007 becomes shared: 250/1000 milli used after
// (why)": the explanation of a fractional job that opens free GPU `gpu` of `node`.
std::string BecomesShared(int milli, int gpu, const std::string& node, const std::string& why) {
  return std::to_string(milli) + " milli of one GPU: free GPU " + std::to_string(gpu) +
         " on node " + node + " becomes shared: " + std::to_string(milli) +
         "/1000 milli used after (" + why + ")";
}

}  // namespace

Verdict Search::RunFractional() {
  const int milli = job_.gpu_milli;
  const ShareView view = MakeShareView();
  const ShareChoice choice = plug_.shares->Choose(view, milli, c_);
  if (choice.kind == ShareChoice::Kind::kShared) {
    return OnSharedGpu(view.shared[choice.index], choice.why);
  }
  if (choice.kind == ShareChoice::Kind::kOpenFree) {
    Plan plan;
    plan.chunks.emplace_back(choice.node, 1);
    std::optional<Placement> p = Materialize(plan);
    if (p) {
      p->domain = c_.nodes[choice.node].name;
      p->gpu_milli = milli;
      p->explanation =
          BecomesShared(milli, p->parts[0].gpus.lowest(), c_.nodes[choice.node].name, choice.why);
      Verdict v;
      v.kind = VerdictKind::kFit;
      v.placement = std::move(*p);
      return v;
    }
    // Not expected: the node has a free GPU. Placed as a 1-GPU job below.
  }
  // As a 1-GPU job: the `nodes` and `gpus` plugins choose its free GPU, or say why none fits.
  Verdict v = RunWhole();
  if (v.fit()) {
    Placement& p = *v.placement;
    p.gpu_milli = milli;
    const NodeGpus& part = p.parts[0];
    p.explanation = BecomesShared(milli, part.gpus.lowest(), c_.nodes[part.node].name, choice.why) +
                    "; " + p.explanation;
    return v;
  }
  v.reasons.insert(v.reasons.begin(), "needs " + std::to_string(milli) + " milli of one GPU; " +
                                          choice.why + " and no free GPU fits");
  return v;
}

}  // namespace toposched::sched::gang_internal
