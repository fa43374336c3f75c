// When the gang placer's local search runs (the refine plugin: plugins/refine_plugins.h; its
// starting plans are plugins/refine_starts.h), the plans it leaves alone, and where it may move
// GPUs.

#include "placer/gang_search.h"

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
    if (!in[n] && cap_[n] > 0) r.push_back(static_cast<int>(n));
  }
  return r;
}

}  // namespace toposched::sched::gang_internal
