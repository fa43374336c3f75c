// The placer's shared vocabulary: a placement (ranks on nodes, GPUs and NICs, its predicted
// times), the verdict that carries it, and the plan of GPU counts per node the search builds.
// Every part of the placer and its plugins speaks these types; they know nothing of how a
// placement is found or priced, of queues, stores or the CLI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "state/cluster_state.h"

namespace toposched::sched {

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

}  // namespace toposched::sched
