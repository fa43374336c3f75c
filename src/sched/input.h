// One typed input to the scheduler. Everything that changes a sched::Scheduler from outside —
// a submitted job, a cancel, a completion, a priority change, a drain, a health report, a
// scheduling pass — is one alternative of `Input`, applied by Scheduler::Apply. The daemon
// stores and replays inputs (api/input_codec.h is their stored form), the golden scripts and
// the tests build them, the simulator drives the scheduler with them: one interpreter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/ids.h"
#include "core/status.h"
#include "job/job_spec.h"
#include "topo/node_topology.h"

namespace toposched::sched {

// A job id as the scheduler gives them (core/ids.h), typed so that it cannot be mixed up with a
// node, a GPU position or an allocation.
using ::toposched::JobId;

struct SubmitJob {
  job::JobSpec spec;  // normalized by Apply (InvalidArgument when malformed)
};
// A Kubernetes pod group (a gang of pods) queued as a job: the same queue, priority, fair share,
// limits, backfill and preemption as a job submitted any other way. `group` names it
// ("<namespace>/<name>"); the spec is the whole gang's.
struct SubmitPodGroup {
  job::JobSpec spec;
  std::string group;
};
struct CancelJob {
  JobId job;
};
// The job's processes finished. `failure` empty: they succeeded (COMPLETING, then COMPLETED);
// else they failed and the job ends FAILED with `failure` as the reason (an exit report, its
// cause classified by the daemon: "exit code 1: cause gpu_fault: ...").
// `drain_node` >= 0: a fatal GPU fault in the report drains that node (with `drain_reason`)
// in the same input, so the drain and the job's end are stored and replayed together.
// `platform`: the failure's cause is the platform's (a GPU fault, a failed node or network, an
// eviction), not the job's: the job follows its on_failure as on a health event (requeue,
// shrink around `failed_node`'s GPUs, or fail); `failed_node` >= 0 is the node the report came
// from (-1: unknown, all of the job's GPUs count as lost).
struct CompleteJob {
  JobId job;
  std::string failure;
  int drain_node = -1;
  std::string drain_reason = {};
  bool platform = false;
  int failed_node = -1;
};
struct SetJobPriority {
  JobId job;
  int priority = 0;
};
// A drained node takes no new work; its jobs run on. `drained` false resumes it.
struct DrainNode {
  int node = 0;  // node id in the cluster
  bool drained = true;
  std::string reason;  // empty: "drained by operator"
};

// What a health report is about: the whole node, one GPU, one NIC, or one GPU's NVLinks.
enum class HealthTarget { kNode, kGpu, kNic, kNvlink };
const char* HealthTargetName(HealthTarget t);  // "node", "gpu", "nic", "nvlink"
// InvalidArgument naming the four accepted words.
StatusOr<HealthTarget> ParseHealthTarget(const std::string& text);

struct HealthReport {
  HealthTarget target = HealthTarget::kNode;
  int node = 0;   // node id in the cluster
  int index = 0;  // GPU or NIC position in the node's topology (ignored for kNode)
  topo::Health health = topo::Health::kHealthy;
  std::string reason;  // empty: "<target> health report: <health>"
};

// A node's own topology as found on the node (`toposched agent`: hwloc + sysfs there). It
// replaces the topology of the node's hardware profile in the scheduler's model; what the report
// leaves unknown (GPU model and memory, NIC rates and link layer) stays the profile's. The GPU
// count must be the model's: GPUs cannot change under the allocations on the node (a node with
// other GPUs needs the cluster file changed). The running jobs on the node are re-scored (NICs
// assigned again) and follow their on_degraded where they got slower.
struct NodeTopologyReport {
  int node = 0;  // node id in the cluster
  topo::NodeTopology topology;
  std::string source;  // who found it ("toposched agent on gpu005 (hwloc + sysfs)"); may be empty
};

// Where a node sits in the network, as the Kubernetes API's labels give it (the tier labels of
// topology-aware scheduling, GPU Feature Discovery's NVLink clique) when the cluster file put it
// elsewhere. The node is moved in the scheduler's model: its GPUs count under its new domains,
// and the running jobs on it are re-scored and follow their on_degraded where they got slower.
// A report equal to the cluster file's place undoes earlier ones.
struct NodeNetworkReport {
  int node = 0;  // node id in the cluster
  // The network domains holding the node, by name, one per level of the model, top first; empty:
  // the node's place in the tree is unchanged. A name the model lacks is a new domain at that
  // level under the one before it (its uplink is the level's); a name the model has must be at
  // that level, under the one before it (a domain moves to another parent with the cluster file).
  std::vector<std::string> domains;
  // The multi-node NVLink domain holding the node: nullopt unchanged, "" none beyond the node; a
  // name the model lacks is a new domain with `nvlink_gbps` (GB/s per GPU, > 0) into its fabric.
  std::optional<std::string> nvlink_domain;
  double nvlink_gbps = 0;
  std::string source;  // who said so ("Kubernetes: labels of node gpu017"); may be empty
  bool operator==(const NodeNetworkReport&) const = default;
};

// A running job is found degraded by a report of its own (the daemon's diagnosis of its log:
// an NCCL transport fallback, say): it follows its on_degraded, as for degraded links.
// `reason` says what was found; `after_ms` is the predicted communication time as it now runs
// (0: unknown, taken as unchanged).
struct JobDegraded {
  JobId job;
  std::string reason;
  double after_ms = 0;
  int drain_node = -1;  // as CompleteJob's
  std::string drain_reason = {};
};

// Time limits and due kills (Scheduler::Tick).
struct Tick {};
// One scheduling pass (Scheduler::Schedule).
struct SchedulePass {};
// Tick, then a scheduling pass: what the daemon runs after inputs and on its timer.
struct Pass {};

using Input = std::variant<SubmitJob, SubmitPodGroup, CancelJob, CompleteJob, SetJobPriority,
                           DrainNode, HealthReport, Tick, SchedulePass, Pass, JobDegraded,
                           NodeTopologyReport, NodeNetworkReport>;

// A visitor made of lambdas, one per alternative: std::visit(Overload{...}, input).
template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

// The input's kind as stored and logged: "submit", "submit_pod_group", "cancel", "complete",
// "priority", "drain", "health", "tick", "schedule", "pass", "job_degraded", "node_topology",
// "node_network".
const char* InputKind(const Input& in);

// What applying an input gave: the id of a submitted job; the jobs a pass started, in order.
struct Applied {
  JobId job;
  std::vector<JobId> started;
};

}  // namespace toposched::sched
