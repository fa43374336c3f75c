// Rank-local setup inside a Slurm job step (`toposched exec`): from the step's SLURM_* variables,
// the GPUs Slurm gave the job on this node and the node's topology, the GPU order (best ring),
// each local rank's GPUs, its nearest NIC(s) for NCCL_IB_HCA and its NUMA node and CPUs to bind
// to. Slurm cannot be told which GPU indices to use inside a node; this is how a job still runs
// its ranks in the best order. Pure: reads a map of variables, changes nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::slurm {

struct ExecPlan {
  int global_rank = 0;  // SLURM_PROCID
  int local_rank = 0;   // SLURM_LOCALID
  int local_size = 1;   // tasks of this step on this node
  std::string node;     // SLURMD_NODENAME
  // The node's GPUs given to the job, as Slurm numbers them (SLURM_STEP_GPUS / SLURM_JOB_GPUS,
  // else CUDA_VISIBLE_DEVICES), ascending; and the same GPUs in ring order.
  std::vector<int> gpus;
  std::vector<int> ring;
  std::vector<int> rank_gpus;  // this rank's GPUs (Slurm numbering), ring order
  // Variables to set, in this order: CUDA_VISIBLE_DEVICES (the names CUDA sees, ring order: the
  // whole ring when each rank has one GPU — local rank i uses device i — else the rank's own
  // GPUs), NCCL_IB_HCA ("=mlx5_0[,mlx5_3]": the NICs nearest the rank's GPUs, left out when the
  // topology has no named NIC), TOPOSCHED_RING, TOPOSCHED_RANK_GPUS (Slurm numbering).
  std::vector<std::pair<std::string, std::string>> env;
  std::optional<int> numa;  // NUMA node of the rank's GPUs (when they agree)
  std::vector<int> cpus;    // CPUs of that NUMA node / of the GPUs' affinity; empty = unknown
  std::vector<std::string> notes;  // what could not be done and why
};

// Variables read: SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, SLURMD_NODENAME,
// SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE ("4(x2),3") / SLURM_NTASKS_PER_NODE,
// SLURM_STEP_GPUS / SLURM_JOB_GPUS (Slurm's GPU indices), CUDA_VISIBLE_DEVICES (the names
// CUDA sees: the same list when Slurm does not constrain devices, 0..k-1 when it does; paired
// by position). InvalidArgument naming the variable for unparsable values, no visible GPU, a
// GPU the topology does not have, or a local rank outside the node's task count. When the
// GPUs do not divide among the local ranks, every rank gets the whole ring (with a note).
StatusOr<ExecPlan> PlanExec(const std::map<std::string, std::string>& env,
                            const topo::NodeTopology& topology);

// "toposched exec: rank 3 (local 3/8) on gpu01: ring 0,3,2,1 ..., CUDA_VISIBLE_DEVICES=..."
std::string FormatExecPlan(const ExecPlan& plan);

}  // namespace toposched::slurm
