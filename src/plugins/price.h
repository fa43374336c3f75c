// The price of a placement, computed in one place: its DP, TP and PP groups priced with the cost
// model (CostModel::TimeMs), the slowest of each kind kept, and the part of it that crosses the
// network. The placer, its plugins and every caller that scores a placement ask this unit; the
// score plugins (plugins/score_plugins.h) weigh what it returns. Knows nothing of the search.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/status.h"
#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "placement/placement.h"
#include "state/link_model.h"

namespace toposched::sched {

// The times of groups already priced (CostModel::TimeMs), by collective, bytes and GPUs in rank
// order: such a time depends on the cost model alone, and local search prices the same groups
// over and over (on the LLM mix at 90% load three in four had been priced before in the same
// Place call). Cleared when it holds kMaxGroups groups or kMaxKeyBytes of keys (a 1,024-rank
// group's key is 8 KiB). Thread-safe through `mu`.
struct GroupTimes {
  static constexpr size_t kMaxGroups = 1 << 16;
  static constexpr size_t kMaxKeyBytes = size_t{16} << 20;
  std::mutex mu;
  std::unordered_map<std::string, double> times;
  size_t key_bytes = 0;
};

// The score every placement gets, from the cost model on `p.ranks`. Every group of a kind
// communicates at once and the step waits for the slowest, so each term is the slowest of the
// groups priced: dp_ms (AllReduce of dp_bytes over the DP group through TP index 0 of every
// stage, the DP group whose shape is worst (placement/group_shape.h) and, on a cluster with rails,
// the DP group with the most neighbours (consecutive DP indexes) on different nodes whose
// nearest NICs share no rail), tp_ms (AllReduce of tp_bytes over rank 0's TP group and the TP
// group whose shape is worst), pp_ms (Send/Recv of pp_bytes from each stage's first rank to the
// next stage's, and between the neighbouring ranks farthest apart) and their sum predicted_ms.
// InvalidArgument when the rank count differs from the layout; the cost model's errors
// otherwise.
Status ScorePlacement(const cost::CostModel& cost, const job::Layout& layout, Placement& p);
// The same, with its groups' times looked up in, and added to, `cache` (the same numbers as
// without it: a group's time depends on the cost model alone).
Status ScorePlacement(const cost::CostModel& cost, const job::Layout& layout, Placement& p,
                      GroupTimes& cache);

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

}  // namespace toposched::sched
