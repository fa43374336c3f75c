// One big training job's goodput under failures: the job placed once by the gang placer on a
// cluster that a background holds in part, failures drawn per GPU at a published rate with a
// published breakdown by cause, and each interruption answered by a replacement policy (a spare
// node in the job's NVLink domain, any free node, or waiting for the repair). The job loses the
// work since its last checkpoint and pays its restart; after a replacement it runs at the step
// time the step model prices on its new placement. Knows nothing of the CLI or report formats;
// docs/evaluation.md ("Frontier") gives the figures and the sources of every default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"
#include "topo/cluster.h"

namespace toposched::sim {

// What a failure takes from the job. kNode: hardware (GPU, HBM, NIC, switch port, host): the
// node is down until repaired and the job's ranks there need another node. kInPlace: software
// or unknown (a bug, a watchdog timeout): the job restarts on the same nodes.
enum class FailureScope { kNode, kInPlace };

struct FailureCause {
  std::string name;
  int count = 0;  // interruptions of this cause in the source; shares are count / total
  FailureScope scope = FailureScope::kNode;
};

// "The Llama 3 Herd of Models" (Meta, 2024), Table 5: root causes of the 419 unexpected
// interruptions of 54 days of Llama 3 405B pre-training on 16,384 H100 GPUs (counts as
// published). Software bug, NCCL watchdog timeouts and dependency are kInPlace, the rest kNode.
std::vector<FailureCause> Llama3FailureCauses();

// Where a replacement node is looked for, in a policy's order.
enum class ReplaceFrom {
  kDomainSpare,  // a spare node kept in the failed node's NVLink domain
  kDomainFree,   // a free node of the failed node's NVLink domain
  kLeafFree,     // a free node under the failed node's lowest network domain (its leaf)
  kAnyFree,      // any free node of the cluster, drawn at random
};

// A replacement policy as data. Nodes are reserved as spares in every NVLink domain before the
// job is placed (so the job leaves them); spares in domains the job does not use go back to the
// background. When no step of `order` finds a node, the job waits for the failed node's repair.
// A repaired node the job left becomes its domain's spare when the policy keeps spares, else a
// free node.
struct ReplacementPolicy {
  std::string name;
  int spare_nodes_per_domain = 0;
  std::vector<ReplaceFrom> order;
};

// "topology-spares" (2 spare trays per NVL72 rack, then a free node of the rack, of the leaf,
// anywhere), "any-free" (any free node), "no-spares" (wait for the repair). InvalidArgument
// naming them for another name.
StatusOr<ReplacementPolicy> ReplacementPolicyNamed(const std::string& name);
std::vector<std::string> ReplacementPolicyNames();

struct GoodputOptions {
  double days = 30;  // simulated wall time
  uint64_t seed = 1;
  // Unexpected interruptions per GPU per day: Llama 3, 419 on 16,384 GPUs in 54 days.
  double interruptions_per_gpu_day = 419.0 / (16384.0 * 54.0);
  std::vector<FailureCause> causes = Llama3FailureCauses();
  // The job checkpoints every checkpoint_interval_s of running time; writing one stops progress
  // for checkpoint_save_s; a restart (reschedule, NCCL init, checkpoint load) takes
  // restart_cost_s. Defaults: the worked example of the Young/Daly interval on changlan.org
  // ("Optimal Checkpointing Frequency": 10 s to checkpoint, 600 s mean time to recover), the
  // interval from Young's formula sqrt(2 · save · MTBF) with the job's MTBF at the Llama 3 rate
  // (11,134 s on 16,384 GPUs): 472 s. Inputs of the what-if, not measurements of this project.
  int64_t checkpoint_interval_s = 472;
  int64_t checkpoint_save_s = 10;
  int64_t restart_cost_s = 600;
  // Mean repair time of a failed node (exponential). The Llama 3 report gives none: 3 h is the
  // simulator's default (SimOptions::repair_mean_s), an assumption.
  double repair_mean_s = 3 * 3600.0;
  // Share of the cluster's GPUs held with the job and the background together (the background
  // is single-node jobs of 1 to all GPUs of a node on random nodes, as bench/frontier_bench.cc
  // fills it); 0.70 as the frontier benchmark.
  double busy_fraction = 0.70;
  Status Validate() const;
};

struct GoodputResult {
  std::string policy;
  double wall_s = 0;
  // Progress in seconds of the job's step on its first placement: running time less the lost
  // work and checkpoint writes, each second weighed by first step / current step.
  double useful_s = 0;
  double goodput = 0;  // useful_s / wall_s
  // Effective training time ratio as Llama 3 and ETTR papers count it: running time less lost
  // work and checkpoint writes, over wall time (a slower step still counts as training time).
  double ettr = 0;
  double lost_work_s = 0;    // work since the last checkpoint, done again
  double restart_s = 0;      // restarts (restart_cost_s each, cut short by a failure or the end)
  double repair_wait_s = 0;  // waiting for a repair (no node to replace with)
  double checkpoint_s = 0;   // checkpoint writes
  int cluster_failures = 0;  // failures drawn over the whole cluster
  int interruptions = 0;     // of the job
  int in_place = 0;          // restarts on the same nodes (software)
  int from_domain_spare = 0, from_domain_free = 0, from_leaf_free = 0, from_any_free = 0;
  int waited_for_repair = 0;
  // The cost model's price of the job's placement (predicted ms of its slowest DP, TP and PP
  // groups, plugins/price.h) and its step time (sim/step_model.h), first and at the end, and
  // the worst step after any replacement.
  double predicted_ms_before = 0, predicted_ms_after = 0;
  double step_ms_before = 0, step_ms_after = 0, step_ms_worst = 0;
  int tp_groups_across_domains = 0;  // at the end (0: every TP group inside an NVLink domain)
  int spare_gpus = 0;                // GPUs reserved as spares in the job's domains
  int job_nodes = 0, job_domains = 0;
};

// Runs one policy. The failures drawn (times, nodes, causes, repair times) depend on the seed
// alone, so every policy meets the same ones. FailedPrecondition when the job does not fit on
// the cluster with the policy's spares reserved; InvalidArgument for bad options or a spec the
// step model cannot price. Cost: one gang placement, then one pricing of the job per
// replacement.
StatusOr<GoodputResult> SimulateGoodput(const topo::Cluster& cluster, const job::JobSpec& job,
                                        const ReplacementPolicy& policy,
                                        const GoodputOptions& options);

}  // namespace toposched::sim
