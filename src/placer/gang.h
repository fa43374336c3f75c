// Gang placement of one job on the cluster: the lowest network domain that can hold the whole
// job (best fit), TP groups on one node or NVLink domain, PP stages on neighbouring nodes, ranks
// in Megatron order, scored by the cost model's predicted communication time. All-or-nothing:
// the result is a whole placement or a verdict with reasons. Knows nothing of queues, policies,
// stores or the CLI; it only reads a ClusterState and never changes it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "placement/placement.h"
#include "placer/job_views.h"
#include "placer/options.h"
#include "plugins/price.h"
#include "plugins/registry.h"
#include "select/node_select.h"
#include "state/cluster_state.h"

namespace toposched::sched {

class LinkModel;  // state/link_model.h

namespace detail {
struct GangIndex;      // per-cluster lookups built once by GangPlacer::Create (gang.cc)
struct BaselineCache;  // memoized baseline GPU choices (gang.cc)
}  // namespace detail

// Places one job at a time. Holds a pointer to the cluster (which must outlive it), a cost
// model, one NodeSelector per hardware profile, an empty ClusterState for best_possible_ms and a
// cache of best_possible_ms per job shape. Place is thread-safe (the cache has a mutex).
//
// Method: (1) required constraints filter nodes (health, drain, gpu_model, rdma_required) and
// domains (job level); (2) candidate domains are walked bottom-up (node, then the network levels
// from the lowest up, then the whole cluster), keeping the lowest level with a domain whose free
// capacity holds the job, best fit first; (3) inside a domain, TP groups go to one node each
// (several per node allowed) or, when TP exceeds the node, to one NVLink domain; nodes are
// filled in node order so PP stages and DP replicas land on neighbouring nodes of one leaf;
// (4) up to max_candidate_domains candidates are scored by the cost model (3 evaluations each)
// plus the fragmentation term. Cost: O(nodes + domains) per call plus the evaluations.
//
// Fractional jobs (JobSpec::gpu_milli < 1000, one GPU): a shared GPU with room or a free GPU
// (which becomes shared), on a node and GPU that pass the job's filters (health, drain,
// gpu_model, rdma), chosen by the `shares` plugin (above). Whole-GPU jobs never see shared GPUs
// (they are not free). Cost: "gpu-best-fit" O(shared GPUs) plus the 1-GPU path when none fits;
// the others O(nodes + shared GPUs · log).
class GangPlacer {
 public:
  using Options = GangPlacerOptions;

  // InvalidArgument for bad options or a cluster ClusterState rejects; errors of NodeSelector.
  static StatusOr<std::unique_ptr<GangPlacer>> Create(const topo::Cluster& cluster,
                                                      Options options = {});

  // The job must be normalized (JobSpec::Normalize); a spec that fails Validate or names an
  // unknown level is unresolvable with the error as reason. Never a partial placement.
  // `links`: the network links' load by the running jobs (the "contention" score; ignored
  // when null or when the policy does not weigh contention). `dp_hide_factor`: the link factor
  // up to which the job's DP all-reduce stays hidden behind its backward pass, when known (> 0):
  // the score then counts only the part of its DP time a loaded link exposes (AddToLinks);
  // 0 = all exposed.
  Verdict Place(const ClusterState& state, const job::JobSpec& job,
                const LinkModel* links = nullptr, double dp_hide_factor = 0) const;

  // Recomputes dp_ms/tp_ms/pp_ms/predicted_ms of `p` (ranks set, Megatron order) for the job's
  // layout on this placer's cluster, e.g. after the topology degraded or the job was resized.
  // InvalidArgument when the rank count differs from the layout or a rank is out of range.
  Status Rescore(const job::JobSpec& job, Placement& p) const;
  // predicted_ms of the job on the empty cluster (cached per job shape); nullopt when it never
  // fits this cluster.
  std::optional<double> BestPossibleMs(const job::JobSpec& job) const;

  const topo::Cluster& cluster() const { return *cluster_; }
  const cost::CostModel& cost_model() const { return *cost_; }
  const Options& options() const { return options_; }
  // The plugins of options(), resolved (no name is compared while placing).
  const TypedPlugins& plugins() const { return plugins_; }

 private:
  GangPlacer(const topo::Cluster& cluster, Options options);
  Verdict PlaceOn(const ClusterState& state, const job::JobSpec& job, const LinkModel* links,
                  double dp_hide_factor) const;
  // The cached verdict on the empty cluster: fit with *ms, or not with *reasons.
  bool BestOnEmpty(const job::JobSpec& job, double* ms, std::vector<std::string>* reasons) const;

  const topo::Cluster* cluster_;
  Options options_;
  std::unique_ptr<cost::CostModel> cost_;
  std::unique_ptr<SelectionCache> selection_cache_;       // shared by the selectors
  std::vector<std::unique_ptr<NodeSelector>> selectors_;  // by profile
  std::unique_ptr<ClusterState> empty_;
  std::shared_ptr<const detail::GangIndex> index_;
  std::shared_ptr<detail::BaselineCache> baseline_;
  mutable std::mutex mu_;
  mutable std::map<std::string, Verdict> best_;  // job shape → verdict on the empty cluster
  TypedPlugins plugins_;                         // options_.plugins resolved (Create)
  TypedPlugins one_pod_plugins_;  // plugins_.scatters(): the plugins for a job that is one pod
};

}  // namespace toposched::sched
