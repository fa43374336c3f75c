// toposched beside Slurm: reads the live occupancy and the held jobs marked for toposched, decides
// their placement with the scheduler core (sched::GangPlacer) and hands it to Slurm
// (`scontrol update JobId=X ReqNodeList=...`, `scontrol release X`). Also predicts the
// communication time of the GPUs a running job actually got. Talks to Slurm only through a
// CommandRunner; knows nothing of flags, the environment or the CLI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "slurm/runner.h"
#include "slurm/scontrol.h"
#include "state/cluster_state.h"
#include "topo/cluster.h"

namespace toposched::slurm {

// Slurm numbers a node's GPUs 0..n-1 in gres.conf order, which `toposched export slurm` writes
// in GPU index order: Slurm index i is the GPU with the i-th smallest Gpu::index. Returns its
// position in NodeTopology::gpus, -1 when out of range.
int GpuPosOfSlurmIndex(const topo::NodeTopology& t, int slurm_index);
int SlurmIndexOfGpuPos(const topo::NodeTopology& t, int gpu_pos);

// The GPUs Slurm 22.05 gives a job of `count` GPUs on a node whose gres.conf has Cores= and
// Links=, as observed on the loopback cluster: within the first socket (GPUs grouped by CPU
// list) whose free GPUs hold the request, else among all free GPUs, the free GPU with the lowest
// Slurm index first, then repeatedly the free GPU with the most NVLinks to those already chosen
// (ties: lowest index). An approximation: for multi-node jobs Slurm sometimes uses the same
// socket on every node. Positions in NodeTopology::gpus; empty when fewer than `count` GPUs are
// free. O(count · GPUs²).
sched::GpuMask SlurmGpuPick(const topo::NodeTopology& t, const sched::GpuMask& free, int count);

// The occupancy Slurm reports (`scontrol -d -o show node`): GPUs in GresUsed held (one
// allocation per node, id -(node id + 1)); DOWN/FAIL/NOT_RESPONDING nodes unhealthy; DRAIN
// drained. Nodes Slurm reports but the cluster lacks are ignored and listed in `unknown`;
// FailedPrecondition when a node's GPU count differs from the cluster model's.
StatusOr<sched::ClusterState> StateFromNodes(const topo::Cluster& cluster,
                                             const std::vector<SlurmNode>& nodes,
                                             std::vector<std::string>* unknown = nullptr);

// How a job is marked for toposched: held jobs only. The layout comes from the batch script's
// "#TOPOSCHED tp=8,pp=2" line, else from a comment "toposched tp=8,pp=2"; a job in the
// toposched partition or with the bare comment "toposched" gets tp=1 (pure data parallel).
struct MarkOptions {
  std::string partition = "toposched";  // "" = no partition marks
  std::string comment = "toposched";    // comment word that marks; "" = none
  bool read_scripts = true;             // look for #TOPOSCHED in batch scripts
  Status Validate() const;
};

// A job as toposched sees it: Slurm gives every node the same GPU count and chooses the GPU
// indices itself, so the spec is num_nodes replicas of gpus_per_node GPUs with the layout's
// tp/pp (dp derived). model= defaults to 7B parameters (so every dimension has traffic).
// InvalidArgument naming the job for a job without GPUs per node or a layout that does not
// divide its GPUs.
StatusOr<job::JobSpec> SpecForJob(const SlurmJob& job, const LayoutRequest& layout);

struct PlaceOptions {
  MarkOptions mark;
  bool dry_run = false;  // decide and report, change nothing in Slurm
  sched::GangPlacerOptions placer;
  Status Validate() const;
};

struct PlaceDecision {
  std::string job_id;
  std::string job_name;
  enum class Action { kPlaced, kWaiting, kRejected } action = Action::kWaiting;
  std::string marked_by;                     // "directive", "comment", "partition"
  std::string layout;                        // "tp=8 pp=2 dp=1"
  std::vector<std::string> nodes;            // chosen nodes in rank order (placed)
  std::vector<std::vector<int>> slurm_gpus;  // per node, the Slurm GPU indices it will get
  double predicted_ms = 0;
  std::string detail;  // explanation or the reason it waits / was rejected
};
const char* ActionName(PlaceDecision::Action a);  // "placed", "waiting", "rejected"

struct PlaceReport {
  std::vector<PlaceDecision> decisions;  // marked held jobs in job id order
  int unmarked_held = 0;                 // held jobs left to Slurm
  std::vector<std::string> unknown_nodes;
};

// One pass: `scontrol -d -o show node`, `scontrol -d -o show job`, for held jobs
// `scontrol write batch_script <id> -`; jobs are decided in job id order, each seeing the GPUs
// of the ones before it. Slurm chooses the GPUs inside a node itself, so the placer sees on each
// node only the gpus_per_node GPUs Slurm would give (SlurmGpuPick): it chooses the nodes by the
// GPUs the job will really get, and never packs two replicas on one node. Released but not
// yet started marked jobs count as occupying their ReqNodeList. A placed job gets
// `scontrol update JobId=X ReqNodeList=<nodes>` then `scontrol release X`; a job that does not
// fit stays held (kWaiting, with the verdict's reasons); a job whose spec is invalid stays
// held (kRejected). Errors: Unavailable when a command fails, InvalidArgument for output that
// does not parse.
StatusOr<PlaceReport> PlaceOnce(const topo::Cluster& cluster, CommandRunner& runner,
                                const PlaceOptions& options);

// The layout of a job and how it was marked, or nullopt when the job is not marked. `script`
// is the batch script ("" when not read).
struct MarkedLayout {
  std::string by;
  LayoutRequest layout;
};
StatusOr<std::optional<MarkedLayout>> MarkOf(const SlurmJob& job, const std::string& script,
                                             const MarkOptions& options);

// Predicted communication time of a layout on given GPUs (rank order): the gang placer's score
// (sched::ScorePlacement: the slowest priced DP group + TP group + stage-to-stage transfer).
// InvalidArgument when the ranks do not match the world size.
struct CommTime {
  double total_ms = 0, dp_ms = 0, tp_ms = 0, pp_ms = 0;
};
StatusOr<CommTime> PredictCommTime(const cost::CostModel& model, const job::Layout& layout,
                                   const std::vector<cost::GpuRef>& ranks);

// Rank order of a running job's GPUs: nodes in `node_order`, on each node its GPUs (positions)
// either ascending (Slurm's order) or in the best ring (`ring`, what `toposched exec` sets).
StatusOr<std::vector<cost::GpuRef>> RanksOf(
    const topo::Cluster& cluster, const std::vector<std::string>& node_order,
    const std::map<std::string, std::vector<int>>& slurm_gpus, bool ring);

}  // namespace toposched::slurm
