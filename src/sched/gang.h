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
#include "sched/cluster_state.h"
#include "sched/node_select.h"
#include "sched/placement_plugins.h"

namespace toposched::sched {

class LinkModel;  // sched/link_model.h

namespace detail {
struct GangIndex;      // per-cluster lookups built once by GangPlacer::Create (gang.cc)
struct BaselineCache;  // memoized baseline GPU choices (gang.cc)
}  // namespace detail

// Everything about a job that its placement depends on (layout, traffic, constraints), as a
// key: two specs with the same key get the same verdict on the same state.
std::string PlacementShapeKey(const job::JobSpec& job);

enum class VerdictKind {
  kFit,            // `placement` holds the whole gang
  kUnschedulable,  // does not fit now; may fit when other jobs finish (or after preemption)
  kUnresolvable,   // never fits this cluster, even empty and healthy (size, GPU model, NICs,
                   // constraints)
};
const char* VerdictKindName(VerdictKind k);  // "fit", "unschedulable", "unresolvable"

// One rank of the gang. `gpu` is a position in the node's NodeTopology::gpus; `nic` a position
// in its NodeTopology::nics (-1 when the node has none).
struct RankSlot {
  int rank = 0;
  int node = 0;
  int gpu = 0;
  int nic = -1;
  bool operator==(const RankSlot&) const = default;
};

struct Placement {
  std::vector<NodeGpus> parts;  // node-id order; ready for ClusterState::Allocate
  std::vector<RankSlot> ranks;  // by rank (Megatron order: rank = tp + TP·(dp + DP·pp))
  std::string domain;           // name of the domain the gang was placed in
  double predicted_ms = 0;      // dp_ms + tp_ms + pp_ms
  // The slowest priced group of each kind (ScorePlacement says which are priced):
  double dp_ms = 0;             // AllReduce of dp_bytes over a DP group
  double tp_ms = 0;             // AllReduce of tp_bytes over a TP group
  double pp_ms = 0;             // Send/Recv of pp_bytes between neighbouring stages
  double best_possible_ms = 0;  // the job on the empty cluster, or this placement if faster
  // A fractional job (JobSpec::gpu_milli < 1000): its thousandths of the one GPU in `parts`,
  // to be taken with ClusterState::AllocateShared. 0 = whole GPUs (ClusterState::Allocate).
  int gpu_milli = 0;
  std::string explanation;
  // ", on quieter links than spine0 (+X ms per step there ...)" when the "contention" score
  // decided between candidate domains (also in `explanation`); the scheduler adds it to the
  // start reason. Empty otherwise.
  std::string contention_note;
  int64_t decision_us = 0;  // filled by the caller, who owns the clock
};

struct Verdict {
  VerdictKind kind = VerdictKind::kUnschedulable;
  std::vector<std::string> reasons;  // why not, in numbers; empty on fit
  std::optional<Placement> placement;
  bool fit() const { return kind == VerdictKind::kFit; }
  // Reasons joined with "; " (or the placement's explanation on fit).
  std::string Explain() const;
};

// The filters' views of a node: its GPU model (node-wide, else its first GPU's; "" when
// unknown) and whether a healthy NIC speaks InfiniBand or RoCE.
const std::string& NodeGpuModel(const topo::NodeTopology& t);
bool HasRdma(const topo::NodeTopology& t);

// The score every placement gets, from the cost model on `p.ranks`. Every group of a kind
// communicates at once and the step waits for the slowest, so each term is the slowest of the
// groups priced: dp_ms (AllReduce of dp_bytes over the DP group through TP index 0 of every
// stage, the DP group whose shape is worst (sched/group_shape.h) and, on a cluster with rails,
// the DP group with the most neighbours (consecutive DP indexes) on different nodes whose
// nearest NICs share no rail), tp_ms (AllReduce of tp_bytes over rank 0's TP group and the TP
// group whose shape is worst), pp_ms (Send/Recv of pp_bytes from each stage's first rank to the
// next stage's, and between the neighbouring ranks farthest apart) and their sum predicted_ms.
// InvalidArgument when the rank count differs from the layout; the cost model's errors
// otherwise.
Status ScorePlacement(const cost::CostModel& cost, const job::Layout& layout, Placement& p);

// The part of a placement's predicted time that crosses the network: dp_ms + pp_ms on several
// nodes (TP groups are kept inside a node or an NVLink domain wherever one has room), 0 on one
// node. What the "contention" score stretches.
double NetworkMs(const Placement& p);

// Adds a running job's placement to the link loads (LinkModel::Add with its network time on
// the unloaded network, NetworkMs / AloneFactor). `dp_hide_factor` > 0: the link factor up to
// which its DP all-reduce (dp_ms) stays hidden behind its backward pass
// (RunTimeEstimator::DpHideFactor), so that the "contention" score prices only what a slower
// link exposes of it (LinkModel::Traffic).
void AddToLinks(LinkModel& links, const Placement& p, double dp_hide_factor = 0);

// The node-selector request for `gpus` GPUs of a job with this layout, TP groups of `tp` (1 =
// none) inside the node; negative byte counts count as 0.
NodeRequest NodeRequestFor(const job::Layout& layout, int gpus, int tp);

struct GangPlacerOptions {
  PlacementPlugins plugins;
  // Candidate domains scored with the cost model per level (best fit first).
  int max_candidate_domains = 4;
  // Tied single-node candidates (same leftover) whose predicted time is compared.
  int max_node_evaluations = 8;
  // Placements scored by the "local-search" refine plugin per candidate plan (times half the
  // plan's node count, rounded up), and the distinct
  // nodes outside the plan (by profile, free GPUs and leaf) it may move GPUs to.
  int max_refine_evaluations = 32;
  int max_refine_nodes = 32;
  NodeSelectOptions node_select;
  // The cost model's algorithm choices (default: all).
  cost::CostModelOptions cost_model;
  // Seeds the "random" node rule's draws (with the job's name and the free GPU count).
  uint64_t seed = 1;
  // Ranks come in one block per node, nodes in id order: for a launcher that numbers ranks node
  // by node (srun's block distribution; the Slurm integration sets it). Off: a placement may put
  // two stages that are not neighbours on one node (stages placed on nodes that share rails).
  bool ranks_in_node_blocks = false;
  // InvalidArgument unless the plugins are known with finite weights ≥ 0, the limits are in
  // [1, 1024] (max_refine_evaluations in [0, 100000]) and node_select is valid.
  Status Validate() const;
};

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
