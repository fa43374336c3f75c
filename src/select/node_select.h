// The best GPU set on one node: given the node's topology, its free GPUs and a request (k GPUs,
// optionally in TP groups), the set that minimises the job's predicted communication time, in
// rank order, with NIC/NUMA/CPU per rank. Exact for nodes of up to 16 GPUs; a bounded beam
// search above (a 72-GPU NVLink domain). Knows nothing of queues, jobs or other nodes.
//
// Method, n ≤ 16 GPUs ("exact"): per selector (= hardware profile), the best ring of each of
// the 2^n subsets (SubsetRings, for rank order) and lazily filled per-subset tables: the
// objective's time per byte count, the best partition into TP groups per (group size, bytes)
// (minimise the slowest group; each entry O(C(|s|-1, t-1))), the tie-break follow-up. A query
// enumerates the k-subsets of the free GPUs (Gosper's hack; C(16,8) = 12,870 at most) and reads
// each set's time from the tables: O(1) per set once warm, no pruning needed. The first queries
// of a profile fill the tables (at most 2^n objective calls per byte count).
//
// Method, n > 16 ("pool" / "beam"): GPUs that are not free play no part. When at most
// `exact_pool_max` GPUs are free, the exact method runs on the free GPUs alone (tables for the
// pool, rebuilt when the pool changes). Otherwise, when some NVLink islands each hold k free
// GPUs, the search is restricted to those islands (one run per island: a set that straddles
// islands pays PCIe or network for a job that fits on NVLink); inside, a beam search grows sets
// one GPU at a time, keeping the `beam_width` best partial sets by the objective (ties: more
// bandwidth inside the set, then lower positions), and expanding each by one representative
// (the lowest unused member) of every class of interchangeable GPUs (same NUMA node, same
// bandwidth to every other candidate). Bound: k steps × beam_width states × c classes, so at
// most k·beam_width·c objective calls (c ≤ free GPUs), then beam_width final evaluations (exact
// ring up to 10 GPUs, greedy + 2-opt above; TP groups = consecutive stretches of that ring, best
// of the tp rotations). The result is the optimum when all candidates are interchangeable (one
// class: an NVSwitch fabric on one NUMA node) and otherwise a heuristic with no guaranteed gap;
// NodeChoice::method says which method ran.
//
// Ties (times within a relative 1e-9) go to the set whose leftover free GPUs are best for a
// same-size follow-up: (1) the lowest predicted AllReduce time (dp_bytes) of the best min(k,
// |leftover|) leftover GPUs; (2) the highest sum of pair bandwidths inside the leftover; (3) the
// lexicographically smallest GPU positions. The beam mode computes (1) greedily.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "select/objective.h"
#include "select/rank_order.h"
#include "select/ring.h"
#include "select/selection_cache.h"
#include "state/gpu_mask.h"
#include "topo/node_topology.h"

namespace toposched::sched {

// A placement outcome, not an error.
enum class Fit {
  kFit,            // `gpus` holds the choice
  kUnschedulable,  // not enough free GPUs now; may fit when others finish
  kUnresolvable,   // the node has fewer healthy GPUs than asked: never fits here
};
const char* FitName(Fit f);  // "fit", "unschedulable", "unresolvable"

struct NodeChoice {
  Fit fit = Fit::kFit;
  std::string reason;               // why not, when fit != kFit
  std::string method;               // "exact", "pool", "beam"
  GpuMask gpus;                     // the chosen set
  std::vector<int> order;           // GPU positions in rank order (the ring, TP groups in turn)
  double predicted_ms = 0;          // dp_ms + tp_ms
  double dp_ms = 0;                 // AllReduce of dp_bytes over the whole set
  double tp_ms = 0;                 // slowest TP group's AllReduce of tp_bytes (0 without TP)
  double ring_bottleneck_gbps = 0;  // whole-set ring's slowest edge (+inf for one GPU)
  double followup_ms = 0;           // tie-break (1) for the leftover (+inf when nothing is left)
  RankLayout layout;                // per rank NIC/NUMA/cpus, environment, warnings
};

struct NodeSelectOptions {
  int beam_width = 32;      // states kept per step of the beam search (n > 16)
  int exact_pool_max = 16;  // n > 16: exact when at most this many GPUs are free (≤ 16)
  Status Validate() const;  // InvalidArgument unless 1 ≤ beam_width ≤ 4096, 0 ≤ pool ≤ 16
};

// One selector per hardware profile (topology + objective). Construction builds the subset
// rings (n ≤ 16: ~70 µs for 8 GPUs with the first query; ~0.3 s and ~2 MB for 16, plus 0.5 MB
// per lazily filled table). Select is const and thread-safe: table slots are atomics, the table
// directory has a mutex, the cache its own lock.
class NodeSelector {
 public:
  // `cache` may be null (no caching); it must outlive the selector. InvalidArgument when the
  // topology has no GPU or more than GpuMask::kMaxGpus, or the options are bad.
  static StatusOr<std::unique_ptr<NodeSelector>> Create(const topo::NodeTopology& topology,
                                                        Objective objective,
                                                        NodeSelectOptions options = {},
                                                        SelectionCache* cache = nullptr);
  NodeSelector(const NodeSelector&) = delete;
  NodeSelector& operator=(const NodeSelector&) = delete;

  // The best set among `free` (positions; unhealthy GPUs and positions ≥ n are ignored).
  // InvalidArgument for a bad request. Cached when the selector has a cache.
  StatusOr<std::shared_ptr<const NodeChoice>> Select(const GpuMask& free,
                                                     const NodeRequest& request) const;
  // The same, never touching the cache.
  StatusOr<NodeChoice> SelectUncached(const GpuMask& free, const NodeRequest& request) const;

  // Predicted time (ms) of running `request` on exactly `set` (set.count() == request.gpus):
  // best ring for the whole set, best partition into TP groups. The same figure Select
  // minimises (exact tables for n ≤ 16; BestRing and ring-order TP groups above).
  double SetTimeMs(const GpuMask& set, const NodeRequest& request) const;

  const topo::NodeTopology& topology() const { return topo_; }
  const PairMatrix& pairs() const { return pairs_; }
  const Objective& objective() const { return objective_; }
  int num_gpus() const { return n_; }
  GpuMask healthy() const { return healthy_; }
  // Hash of everything a result depends on: GPUs, NICs, paths, NUMA/cpus, health, objective id.
  uint64_t fingerprint() const { return fingerprint_; }
  bool exact() const { return tables_ != nullptr; }

 private:
  class ExactTables;  // SubsetRings plus lazily built per-request tables (node_select.cc)
  NodeSelector(const topo::NodeTopology& topology, Objective objective, NodeSelectOptions options,
               SelectionCache* cache);

  NodeChoice SelectExact(ExactTables& tables, uint32_t free_local, const NodeRequest& req,
                         const char* method) const;
  NodeChoice SelectBeam(const GpuMask& free, const NodeRequest& req) const;
  std::shared_ptr<ExactTables> PoolTables(const GpuMask& pool) const;
  // Beam-mode time of a set, with its rank order and parts.
  double HeuristicSetTime(const std::vector<int>& set, const NodeRequest& req,
                          std::vector<int>* order, double* dp_ms, double* tp_ms,
                          double* bottleneck) const;
  double HeuristicFollowupMs(const GpuMask& leftover, int k, double bytes) const;

  topo::NodeTopology topo_;
  Objective objective_;
  NodeSelectOptions options_;
  SelectionCache* cache_;
  int n_ = 0;
  GpuMask healthy_;
  uint64_t fingerprint_ = 0;
  PairMatrix pairs_;
  std::shared_ptr<ExactTables> tables_;  // n ≤ 16 only

  mutable std::mutex pool_mu_;  // n > 16: tables of the last small free pool
  mutable GpuMask pool_mask_;
  mutable std::shared_ptr<ExactTables> pool_tables_;
};

}  // namespace toposched::sched
