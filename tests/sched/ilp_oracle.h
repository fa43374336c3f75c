// Exact reference for gang placement quality: the placement of one job that minimises the
// predicted communication time the gang placer reports (Placement::predicted_ms = dp + tp + pp,
// scored by cost::CostModel), found with an integer program solved by GLPK. Test and benchmark
// code only: the scheduler never links it. Knows nothing of queues or policies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/cost_model.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "select/node_select.h"
#include "state/cluster_state.h"

namespace toposched::sched::ilp {

// The family of placements the oracle searches ("the placer's family"):
//   * each node n gets k_n GPUs, 0 ≤ k_n ≤ its free GPUs; Σ k_n = world size;
//   * TP mode as the placer chooses it: when 1 < TP ≤ the largest node, and the cluster has room
//     for the job in whole TP groups per node, every k_n is a multiple of TP (each TP group on
//     one node); TP = 1 places GPUs freely. A job that only fits with TP groups spanning nodes
//     (the placer's fallback) is kUnsupported, as is a cluster with multi-node NVLink domains;
//   * on each node, the GPUs and their rank order are NodeSelector's exact optimum for
//     (free mask, k_n, TP, dp/tp bytes): the same in-node choice the placer makes. A node that
//     holds the whole job takes the placer's order for it (placer/node_order.h: swaps of ranks
//     while the layout's predicted time falls, where pipeline stages or strided DP groups make
//     the order matter);
//   * ranks are filled node by node in node-id order (rank = tp + TP·(dp + DP·pp)), the fill
//     order the placer uses. Other fill orders are not searched.
// Within the family the result is exact: it minimises predicted_ms as re-evaluated by
// cost::CostModel on the materialised placement.
//
// Two exact solvers of the same family, checked against each other and against brute force
// (tests/sched/ilp_quality_test.cc):
//
// Solve: GLPK integer programs in a branch-and-check loop. The programs choose the counts k_n;
// their objective is a lower bound of the true predicted time that is exact for the TP term
// (first node's TP group), the PP term (rank 0 to the first rank of stage 1, a product of two
// indicators) and a DP group on one node. A DP group over several nodes gets one program per
// AllReduce algorithm (ring, tree, hierarchical), each bounded from the islands' ring, chain and
// network bandwidths, latencies, the island count and the leaf oversubscription; the bound of a
// solution is the smallest of the programs' optima. Each optimum is materialised and scored
// with the real cost model; a cut then removes every solution with the same ranks 0..TP·DP
// (they all score the same) and the loop stops when the bound reaches the best score: that
// score is optimal. Every scored solution also checks bound ≤ score; a violation is an error,
// never a result. Exact but slow: seconds per case on 4 nodes, GLPK's branch and bound being
// weak on the big-M rows.
//
// SolveByBranchAndBound: the same bounds in a depth-first search over the counts in node-id
// order, plus a look-ahead (the stage-0 GPUs still to place need islands at least this bad) and
// the exact DP time as soon as stage 0 is placed. Milliseconds for most cases on 16 nodes; a
// search budget turns the rest into kUnproven.
// The cost model the oracle bounds: every algorithm but NVLS-tree across nodes, for which it has
// no bound yet; the placer under test must use the same (ilp_cases.cc).
cost::CostModelOptions OracleCostOptions();

struct OracleOptions {
  double rel_gap = 1e-9;               // stop when bound ≥ best · (1 - rel_gap)
  int max_iterations = 400;            // Solve: scored solutions before giving up (kUnproven)
  int max_node_scores = 200000;        // SolveByBranchAndBound: the same
  int64_t max_search_nodes = 2000000;  // SolveByBranchAndBound: search nodes before kUnproven
  double search_time_limit_s = 60;     // SolveByBranchAndBound: wall time before kUnproven
  double ilp_time_limit_s = 10;
};

enum class OracleStatus {
  kOptimal,      // `placement` is optimal in the family
  kUnproven,     // `placement` is the best found, optimality not proven (iteration or GLPK
                 // time limit); `lower_bound_ms` bounds the optimum (0: unknown)
  kNoFit,        // no placement of the family exists
  kUnsupported,  // see the family above
  kError,        // GLPK failed or a bound check failed (a bug): `reason` says which
};
const char* OracleStatusName(OracleStatus s);

struct OracleResult {
  OracleStatus status = OracleStatus::kError;
  std::string reason;
  std::optional<Placement> placement;  // ranks, parts and times as the placer fills them
  std::vector<int> counts;             // GPUs per node of `placement`
  double lower_bound_ms = 0;
  int iterations = 0;  // placements scored
  int tp_unit = 1;     // GPUs per TP group kept on one node (1: none)
};

class IlpOracle {
 public:
  // One cost model and one NodeSelector per profile, built like GangPlacer::Create builds them.
  static StatusOr<std::unique_ptr<IlpOracle>> Create(const topo::Cluster& cluster,
                                                     NodeSelectOptions node_select = {});

  // The job must be normalized. Never changes `state`.
  OracleResult Solve(const ClusterState& state, const job::JobSpec& job,
                     const OracleOptions& options = {}) const;

  // The same optimum by depth-first branch and bound over the counts in node-id order: the
  // program's bounds for the TP, PP and DP terms on the nodes fixed so far, the exact DP time
  // as soon as stage 0 is placed, one scored placement per distinct head. No GLPK; orders of
  // magnitude faster than Solve on 16 nodes. lower_bound_ms = the optimum.
  OracleResult SolveByBranchAndBound(const ClusterState& state, const job::JobSpec& job,
                                     const OracleOptions& options = {}) const;

  // Enumerates every count vector of the family and scores each (tests on ≤ 4 nodes).
  OracleResult BruteForce(const ClusterState& state, const job::JobSpec& job) const;

  // The family member with these per-node counts (TP groups of `tp_unit` per node), ranks filled
  // in node-id order and scored as the placer scores; nullopt when a node cannot hold its count.
  std::optional<Placement> Materialize(const ClusterState& state, const job::JobSpec& job,
                                       const std::vector<int>& counts, int tp_unit) const;

  // dp_ms, tp_ms, pp_ms and predicted_ms of `p` (ranks set) exactly as the gang placer computes
  // them. False when the cost model rejects the GPU set.
  bool Score(const job::JobSpec& job, Placement& p) const;

  const cost::CostModel& cost_model() const { return *cost_; }

 private:
  explicit IlpOracle(const topo::Cluster& cluster) : cluster_(&cluster) {}
  // TP unit for the job on this state, or an unsupported/no-fit reason.
  std::optional<OracleResult> CheckFamily(const ClusterState& state, const job::JobSpec& job,
                                          int* tp_unit) const;

  const topo::Cluster* cluster_;
  std::unique_ptr<cost::CostModel> cost_;
  std::vector<std::unique_ptr<NodeSelector>> selectors_;  // by profile
  int max_node_gpus_ = 0;
};

}  // namespace toposched::sched::ilp
