#include "placer/gang.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "placer/gang_search.h"

namespace toposched::sched {

using gang_internal::Fmt;
using gang_internal::Search;

GangPlacer::GangPlacer(const topo::Cluster& cluster, Options options)
    : cluster_(&cluster), options_(std::move(options)) {}

StatusOr<std::unique_ptr<GangPlacer>> GangPlacer::Create(const topo::Cluster& cluster,
                                                         Options options) {
  RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<GangPlacer> p(new GangPlacer(cluster, options));
  ASSIGN_OR_RETURN(p->plugins_, ResolvePlugins(options.plugins));
  // A pod that cannot be split (see PlaceOn) is placed as "least-allocated" would place it.
  p->one_pod_plugins_ = p->plugins_;
  p->one_pod_plugins_.nodes = &NodePluginFor(NodeRule::kLeastAllocated);
  p->cost_ = std::make_unique<cost::CostModel>(cluster, options.cost_model);
  // A busy cluster asks each selector the same (free mask, request) questions over and over.
  p->selection_cache_ = std::make_unique<SelectionCache>();
  for (const topo::HardwareProfile& prof : cluster.profiles) {
    ASSIGN_OR_RETURN(std::unique_ptr<NodeSelector> sel,
                     NodeSelector::Create(prof.topology, CostModelObjective(prof.topology),
                                          options.node_select, p->selection_cache_.get()));
    p->selectors_.push_back(std::move(sel));
  }
  auto ix = std::make_shared<detail::GangIndex>();
  ix->node_profile.resize(cluster.nodes.size());
  ix->all_nodes.resize(cluster.nodes.size());
  ix->profile_node.assign(cluster.profiles.size(), -1);
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    ix->node_profile[n] = cluster.nodes[n].profile;
    int& first = ix->profile_node[cluster.nodes[n].profile];
    if (first < 0) first = static_cast<int>(n);
    ix->all_nodes[n] = static_cast<int>(n);
    ix->max_node_gpus = std::max(
        ix->max_node_gpus, static_cast<int>(cluster.topology(static_cast<int>(n)).gpus.size()));
  }
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    const int d = cluster.nodes[n].domain;
    if (ix->runs.empty() || ix->runs.back().domain != d) {
      ix->runs.push_back(detail::GangIndex::Run{static_cast<int>(n), static_cast<int>(n), d});
    }
    ix->runs.back().end = static_cast<int>(n) + 1;
  }
  for (size_t d = 0; d < cluster.domains.size(); ++d) {
    ix->domain_nodes.push_back(cluster.NodesUnder(static_cast<int>(d)));
  }
  for (const topo::NvlinkDomain& d : cluster.nvlink_domains) {
    std::vector<int> ns = d.nodes;
    std::sort(ns.begin(), ns.end());
    ix->nvd_nodes.push_back(std::move(ns));
  }
  p->index_ = std::move(ix);
  p->baseline_ = std::make_shared<detail::BaselineCache>();
  // The reference is the whole cluster, empty, its nodes healthy: a node the cluster file declares
  // unhealthy (one whose hardware is not there yet) may come back, so a job that needs it waits
  // rather than being judged never to fit.
  ASSIGN_OR_RETURN(ClusterState empty, ClusterState::Create(cluster));
  // (GPUs keep the health their topology gives: the node selectors know only healthy ones.)
  for (int n = 0; n < static_cast<int>(cluster.nodes.size()); ++n) {
    RETURN_IF_ERROR(empty.SetNodeHealth(n, topo::Health::kHealthy).status());
  }
  p->empty_ = std::make_unique<ClusterState>(std::move(empty));
  return p;
}

Status GangPlacer::Rescore(const job::JobSpec& job, Placement& p) const {
  return ScorePlacement(*cost_, job.layout, p);
}

Verdict GangPlacer::PlaceOn(const ClusterState& state, const job::JobSpec& job,
                            const LinkModel* links, double dp_hide_factor) const {
  const bool one_pod = job.Fractional() ||
                       job.constraints.job.mode == job::ConstraintMode::kRequired ||
                       job.constraints.tp.mode == job::ConstraintMode::kRequired;
  if (plugins_.scatters() && !one_pod) {
    Verdict v;
    std::optional<Placement> p = PlaceScattered(
        *cost_, state, job,
        plugins_.nodes->rule() == NodeRule::kSpread ? ScatterRule::kSpread : ScatterRule::kRandom,
        options_.seed);
    if (p) {
      v.kind = VerdictKind::kFit;
      v.placement = std::move(p);
    } else {
      v.reasons.push_back("fewer than " + std::to_string(job.total_gpus) +
                          " free GPUs pass the job's filters");
    }
    return v;
  }
  Search s(*cluster_, state, job, options_, plugins_.scatters() ? one_pod_plugins_ : plugins_,
           *cost_, selectors_, *index_, *baseline_, links, dp_hide_factor);
  return s.Run();
}

Verdict GangPlacer::Place(const ClusterState& state, const job::JobSpec& job,
                          const LinkModel* links, double dp_hide_factor) const {
  Verdict bad;
  bad.kind = VerdictKind::kUnresolvable;
  if (Status st = job.Validate(); !st.ok()) {
    bad.reasons.push_back(st.message());
    return bad;
  }
  std::vector<std::string> level_names;
  for (const topo::NetworkLevel& l : cluster_->levels) level_names.push_back(l.name);
  if (Status st = job.ValidateAgainstLevels(level_names); !st.ok()) {
    bad.reasons.push_back(st.message());
    return bad;
  }
  if (&state.cluster() != cluster_) {
    bad.reasons.push_back("the state belongs to another cluster");
    return bad;
  }
  // The same job on the empty cluster: the reference time, and the test for "never fits".
  double best_ms = 0;
  std::vector<std::string> best_reasons;
  const bool best_fit = BestOnEmpty(job, &best_ms, &best_reasons);
  if (!best_fit) {
    bad.reasons.push_back("never fits this cluster, even empty");
    for (const std::string& r : best_reasons) bad.reasons.push_back(r);
    return bad;
  }
  Verdict v = PlaceOn(state, job, links, dp_hide_factor);
  if (v.fit()) {
    // The empty cluster's figure is the placer's best there, not a proven bound. A placement
    // found now is one the empty cluster holds too (and with no other job on its links), so
    // when it is faster the reference is that (a stretch below 1 would be a job finishing faster
    // than its best).
    v.placement->best_possible_ms = std::min(best_ms, v.placement->predicted_ms);
    v.placement->explanation +=
        "; best possible " + Fmt("%.3f", v.placement->best_possible_ms) + " ms";
  }
  return v;
}

std::optional<double> GangPlacer::BestPossibleMs(const job::JobSpec& job) const {
  double ms = 0;
  std::vector<std::string> reasons;
  if (!BestOnEmpty(job, &ms, &reasons)) return std::nullopt;
  return ms;
}

bool GangPlacer::BestOnEmpty(const job::JobSpec& job, double* best_ms,
                             std::vector<std::string>* best_reasons) const {
  // Only the figure (or the reasons) are copied out of the cache, not the whole placement.
  const std::string key = PlacementShapeKey(job);
  bool known = false, best_fit = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = best_.find(key);
    if (it != best_.end()) {
      known = true;
      best_fit = it->second.fit();
      if (best_fit) {
        *best_ms = it->second.placement->predicted_ms;
      } else {
        *best_reasons = it->second.reasons;
      }
    }
  }
  if (!known) {
    Verdict b = PlaceOn(*empty_, job, nullptr, 0);
    best_fit = b.fit();
    if (best_fit) {
      *best_ms = b.placement->predicted_ms;
    } else {
      *best_reasons = b.reasons;
    }
    std::lock_guard<std::mutex> lock(mu_);
    best_.emplace(key, std::move(b));
  }
  return best_fit;
}

}  // namespace toposched::sched
