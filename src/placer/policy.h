// Named placement policies: toposched's own and the baselines people run today, each a plugin
// set (PlacementPlugins) of the one gang placer, so that two policies differ only in how they
// choose domains, nodes and GPUs and in what they score. The simulator and the CLI pick them by
// name; nothing here knows of traces or HTTP.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"
#include "placer/options.h"

namespace toposched::sched {

// "toposched", "first-fit", "best-fit", "pair-score", "kueue-tas", "slurm-tree", "spread",
// "random", "locality-relax", in this order.
const std::vector<std::string>& PolicyNames();

// The placer options of a named policy:
//   toposched   lowest-level domain, best-fit nodes, cost-model GPUs, scores comm-time 1 +
//               fragmentation 0.05 ms/GPU + contention 1 (where the scheduler passes the
//               running jobs' link loads) over up to 4 candidate domains (the defaults);
//               its scheduler also waits or spreads by expected finish time where run times
//               can be estimated (PolicyWaitsOrSpreads)
//   first-fit   topology-oblivious spread like kube-scheduler's LeastAllocated: cluster-wide,
//               emptiest nodes first, lowest-numbered free GPUs, no scores
//   best-fit    bin packing: cluster-wide, best-fit nodes, lowest-numbered free GPUs, no scores
//   pair-score  best-fit nodes cluster-wide, GPUs by NVIDIA's device-plugin pair score
//   kueue-tas   Kueue topology-aware scheduling: lowest level that holds the job, best fit per
//               level, no cost model; lowest-numbered free GPUs
//   slurm-tree  Slurm topology/tree: the lowest switch that holds the job (best fit), its nodes
//               in node order, lowest-numbered free GPUs
//   spread      kube-scheduler with the NVIDIA device plugin and one pod per GPU, no topology:
//               each GPU on the node with the most free GPUs (LeastAllocated), any nodes
//   random      each GPU a uniformly drawn free GPU of the cluster (GangPlacerOptions::seed)
//   locality-relax  the Philly scheduler (Jeon et al., ATC'19 §2.2): a job waits for a
//               consolidated placement (one node, else one lowest-level domain) and is relaxed
//               to any nodes after a timeout — the waiting is the scheduler's part
//               (PolicyWaitsForLocality); the placer is best-fit nodes cluster-wide with
//               lowest-numbered free GPUs
// Every policy but toposched has rails "none": the schedulers they model do not know rails (for
// kueue-tas and slurm-tree, whose domain rule is lowest-level, "align" would make the rails'
// scope level compete with the lowest domain that holds the job).
// Fractional jobs (PlacementPlugins::shares): toposched "gpu-best-fit" (the tightest shared GPU
// cluster-wide; a new GPU only when none has room); first-fit "least-allocated" (spread);
// best-fit, pair-score, kueue-tas, locality-relax "node-best-fit" (the fullest node, then the
// tightest GPU on it); slurm-tree "in-order" (first node, first GPU with room).
// InvalidArgument naming the known policies for any other name.
StatusOr<GangPlacerOptions> PolicyOptions(std::string_view name);

// The tightest place that could hold `gpus` GPUs on the empty cluster: "node" when one node has
// that many, else the name of the lowest network level with a domain that has, else "" (only
// the whole cluster). What a job waiting for locality is held to (SchedulerOptions::
// locality_wait_us).
std::string ConsolidatedLevel(const topo::Cluster& cluster, int gpus);

// True for the policies whose scheduler waits or spreads by expected finish time
// (SchedulerOptions::wait_or_spread) where run times can be estimated: "toposched".
bool PolicyWaitsOrSpreads(std::string_view name);

// True for the policies whose scheduler waits for locality (SchedulerOptions::locality_wait_us):
// "locality-relax".
bool PolicyWaitsForLocality(std::string_view name);
// Its timeout when none is given. The Philly paper publishes none: this project's choice.
inline constexpr int64_t kDefaultLocalityWaitS = 600;

}  // namespace toposched::sched
