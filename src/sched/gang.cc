#include "sched/gang.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <numeric>
#include <utility>

#include "sched/gang_search.h"
#include "sched/group_shape.h"

namespace toposched::sched {

using gang_internal::Fmt;
using gang_internal::Search;

std::string PlacementShapeKey(const job::JobSpec& j) {
  const job::Layout& l = j.layout;
  const job::Constraints& c = j.constraints;
  return std::to_string(l.tp) + "/" + std::to_string(l.pp) + "/" + std::to_string(l.dp) + "/" +
         std::to_string(l.tp_bytes) + "/" + std::to_string(l.pp_bytes) + "/" +
         std::to_string(l.dp_bytes) + "/" + job::ConstraintModeName(c.job.mode) + ":" +
         c.job.level + "/" + job::ConstraintModeName(c.tp.mode) + ":" + c.tp.level + "/" +
         c.gpu_model + "/" + (c.rdma_required ? "rdma" : "") +
         (j.Fractional() ? "/milli" + std::to_string(j.gpu_milli) : "");
}

const std::string& NodeGpuModel(const topo::NodeTopology& t) {
  static const std::string kEmpty;
  if (!t.gpu_model.empty()) return t.gpu_model;
  return t.gpus.empty() ? kEmpty : t.gpus[0].model;
}

bool HasRdma(const topo::NodeTopology& t) {
  for (const topo::Nic& n : t.nics) {
    if (n.health == topo::Health::kUnhealthy) continue;
    if (n.link_layer == topo::LinkLayer::kInfiniBand || n.link_layer == topo::LinkLayer::kRoCE) {
      return true;
    }
  }
  return false;
}

namespace {

// Prices groups of ranks of one placement with the cost model, through `cache` when given.
class GroupPricer {
 public:
  GroupPricer(const cost::CostModel& cost, const Placement& p, detail::BaselineCache* cache)
      : cost_(cost), p_(p), cache_(cache) {}

  // `ms` becomes the larger of itself and the group's time (0 for fewer than 2 ranks or no
  // bytes).
  Status AtLeast(cost::Collective coll, const std::vector<int>& ranks, int64_t bytes,
                 double* ms) const {
    if (ranks.size() < 2 || bytes <= 0) return OkStatus();
    std::vector<cost::GpuRef> refs;
    refs.reserve(ranks.size());
    for (int r : ranks) refs.push_back(cost::GpuRef{p_.ranks[r].node, p_.ranks[r].gpu});
    ASSIGN_OR_RETURN(double t, TimeOf(coll, refs, bytes));
    *ms = std::max(*ms, t);
    return OkStatus();
  }

 private:
  // The group's TimeMs: from the cache when it holds the group, else priced (and kept there).
  StatusOr<double> TimeOf(cost::Collective coll, const std::vector<cost::GpuRef>& refs,
                          int64_t bytes) const {
    if (cache_ == nullptr) return cost_.TimeMs(coll, refs, static_cast<double>(bytes));
    const int32_t c = static_cast<int32_t>(coll);
    std::string key(reinterpret_cast<const char*>(&c), sizeof c);
    key.append(reinterpret_cast<const char*>(&bytes), sizeof bytes);
    for (const cost::GpuRef& g : refs) {
      const int32_t pair[2] = {g.node, g.gpu};
      key.append(reinterpret_cast<const char*>(pair), sizeof pair);
    }
    {
      std::lock_guard<std::mutex> lock(cache_->mu);
      auto it = cache_->group_times.find(key);
      if (it != cache_->group_times.end()) return it->second;
    }
    ASSIGN_OR_RETURN(double t, cost_.TimeMs(coll, refs, static_cast<double>(bytes)));
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (cache_->group_times.size() >= detail::BaselineCache::kMaxScores ||
        cache_->group_key_bytes + key.size() > detail::BaselineCache::kMaxGroupKeyBytes) {
      cache_->group_times.clear();
      cache_->group_key_bytes = 0;
    }
    const size_t size = key.size();
    if (cache_->group_times.emplace(std::move(key), t).second) cache_->group_key_bytes += size;
    return t;
  }

 private:
  const cost::CostModel& cost_;
  const Placement& p_;
  detail::BaselineCache* cache_;
};

// The DP term: every stage's DP group through TP index 0, the DP group whose shape is worst,
// and on a rail-optimised network the group with the most DP neighbours on different rails.
Status DpMs(const cost::CostModel& cost, const job::Layout& l, const GroupPricer& g, Placement& p) {
  p.dp_ms = 0;
  if (l.dp < 2 || l.dp_bytes <= 0) return OkStatus();
  const auto all_reduce = cost::Collective::kAllReduce;
  for (int s = 0; s < l.pp; ++s) {
    RETURN_IF_ERROR(g.AtLeast(all_reduce, l.DpGroup(l.RankOf(0, 0, s)), l.dp_bytes, &p.dp_ms));
  }
  if (const int w = WorstDpGroupRank(cost.cluster(), l, p.ranks); w > 0 && w % l.tp != 0) {
    RETURN_IF_ERROR(g.AtLeast(all_reduce, l.DpGroup(w), l.dp_bytes, &p.dp_ms));
  }
  if (!cost.cluster().RailsPriced() || l.tp * l.pp < 2) return OkStatus();
  const RailPairs rp = CountRailPairs(cost, l, p.ranks);
  if (rp.crossed == 0) return OkStatus();
  const int first = rp.crossed_by_class[0];
  const auto it = std::max_element(rp.crossed_by_class.begin(), rp.crossed_by_class.end());
  if (*it <= first) return OkStatus();
  const int c = static_cast<int>(it - rp.crossed_by_class.begin());
  return g.AtLeast(all_reduce, l.DpGroup(l.RankOf(c % l.tp, 0, c / l.tp)), l.dp_bytes, &p.dp_ms);
}

// The PP term: every stage's first rank sending to the next stage's, and the pair of
// neighbouring stages whose ranks are farthest apart in the network.
Status PpMs(const cost::CostModel& cost, const job::Layout& l, const GroupPricer& g, Placement& p) {
  p.pp_ms = 0;
  if (l.pp < 2 || l.pp_bytes <= 0) return OkStatus();
  const int stage = l.tp * l.dp;
  const auto send = cost::Collective::kSendRecv;
  for (int s = 0; s + 1 < l.pp; ++s) {
    RETURN_IF_ERROR(g.AtLeast(send, {s * stage, (s + 1) * stage}, l.pp_bytes, &p.pp_ms));
  }
  if (const int w = WorstPpPairRank(cost.cluster(), l, p.ranks); w > 0 && w % stage != 0) {
    RETURN_IF_ERROR(g.AtLeast(send, {w, w + stage}, l.pp_bytes, &p.pp_ms));
  }
  return OkStatus();
}

Status ScoreWith(const cost::CostModel& cost, const job::Layout& l, Placement& p,
                 detail::BaselineCache* cache) {
  if (static_cast<int>(p.ranks.size()) != l.WorldSize()) {
    return InvalidArgumentError("placement has " + std::to_string(p.ranks.size()) +
                                " ranks, layout " + std::to_string(l.WorldSize()));
  }
  // Every group of a kind communicates at once and the step waits for the slowest. Priced:
  // each kind's groups through rank 0's TP index in every stage, and the group of each kind
  // whose shape is worst (sched/group_shape.h).
  const GroupPricer g(cost, p, cache);
  RETURN_IF_ERROR(DpMs(cost, l, g, p));
  p.tp_ms = 0;
  if (l.tp > 1 && l.tp_bytes > 0) {
    RETURN_IF_ERROR(g.AtLeast(cost::Collective::kAllReduce, l.TpGroup(0), l.tp_bytes, &p.tp_ms));
    if (const int w = WorstTpGroupRank(cost.cluster(), l, p.ranks); w > 0) {
      RETURN_IF_ERROR(g.AtLeast(cost::Collective::kAllReduce, l.TpGroup(w), l.tp_bytes, &p.tp_ms));
    }
  }
  RETURN_IF_ERROR(PpMs(cost, l, g, p));
  p.predicted_ms = p.dp_ms + p.tp_ms + p.pp_ms;
  return OkStatus();
}

}  // namespace

Status ScorePlacement(const cost::CostModel& cost, const job::Layout& l, Placement& p) {
  return ScoreWith(cost, l, p, nullptr);
}

Status gang_internal::ScorePlacementCached(const cost::CostModel& cost, const job::Layout& l,
                                           Placement& p, detail::BaselineCache& cache) {
  return ScoreWith(cost, l, p, &cache);
}

NodeRequest NodeRequestFor(const job::Layout& l, int gpus, int tp) {
  NodeRequest req;
  req.gpus = gpus;
  req.tp = tp;
  req.dp_bytes = static_cast<double>(std::max<int64_t>(l.dp_bytes, 0));
  req.tp_bytes = static_cast<double>(std::max<int64_t>(l.tp_bytes, 0));
  return req;
}

const char* VerdictKindName(VerdictKind k) {
  switch (k) {
    case VerdictKind::kFit:
      return "fit";
    case VerdictKind::kUnschedulable:
      return "unschedulable";
    case VerdictKind::kUnresolvable:
      return "unresolvable";
  }
  return "?";
}

std::string Verdict::Explain() const {
  if (placement && kind == VerdictKind::kFit) return placement->explanation;
  std::string s;
  for (const std::string& r : reasons) s += (s.empty() ? "" : "; ") + r;
  return s;
}

Status GangPlacerOptions::Validate() const {
  RETURN_IF_ERROR(plugins.Validate());
  if (max_candidate_domains < 1 || max_candidate_domains > 1024) {
    return InvalidArgumentError("gang: max_candidate_domains must be in [1, 1024]");
  }
  if (max_node_evaluations < 1 || max_node_evaluations > 1024) {
    return InvalidArgumentError("gang: max_node_evaluations must be in [1, 1024]");
  }
  if (max_refine_evaluations < 0 || max_refine_evaluations > 100000) {
    return InvalidArgumentError("gang: max_refine_evaluations must be in [0, 100000]");
  }
  if (max_refine_nodes < 1 || max_refine_nodes > 1024) {
    return InvalidArgumentError("gang: max_refine_nodes must be in [1, 1024]");
  }
  return node_select.Validate();
}

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

double NetworkMs(const Placement& p) { return p.parts.size() > 1 ? p.dp_ms + p.pp_ms : 0.0; }

void AddToLinks(LinkModel& links, const Placement& p, double dp_hide_factor) {
  const LinkModel::Usage u = links.UsageOf(p.parts);
  if (u.links.empty()) return;
  const double alone = links.AloneFactor(u);
  if (dp_hide_factor > 0) {
    links.Add(u, LinkModel::Traffic{p.dp_ms / alone, p.pp_ms / alone, dp_hide_factor});
  } else {
    links.Add(u, NetworkMs(p) / alone);
  }
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
