// Job specs: what a distributed-training job asks for (size, TP/PP/DP/EP layout, the bytes each
// parallel dimension exchanges, placement constraints by level name, limits, elastic range and
// failure policy), and the readers/writer for YAML and JSON. This module knows the topology only
// as vocabulary (level names); it never sees a Cluster, a placement or a cost model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace toposched::job {

// Where a value came from ("jobs.yaml", line 14, "jobs[0].constraints.tp.required"), for error
// messages after parsing. Not part of a spec's value: any two SourceRefs compare equal.
struct SourceRef {
  std::string file;
  int line = 0;       // 1-based; 0 when unknown (JSON, or built in code)
  std::string field;  // path from the document root
  // "file:line: field" (the parts that are known), "" when nothing is.
  std::string Prefix() const;
  friend bool operator==(const SourceRef&, const SourceRef&) { return true; }
};

// Built-in level names that every cluster has, below its network levels.
inline constexpr const char* kLevelNvlinkDomain = "nvlink-domain";
inline constexpr const char* kLevelNode = "node";

enum class ConstraintMode { kNone, kRequired, kPreferred };
const char* ConstraintModeName(ConstraintMode m);  // "none", "required", "preferred"

// "Keep this group inside one domain of `level`": required filters placements, preferred only
// scores them (falling back level by level).
struct LevelConstraint {
  ConstraintMode mode = ConstraintMode::kNone;
  std::string level;  // empty iff mode == kNone
  SourceRef where;
  bool operator==(const LevelConstraint&) const = default;
};

struct Constraints {
  LevelConstraint job;    // the whole gang
  LevelConstraint tp;     // each TP group
  std::string gpu_model;  // exact HardwareProfile::gpu_model; empty = any
  bool rdma_required = false;
  bool operator==(const Constraints&) const = default;
};

// The parallel layout and its traffic. World size = tp * pp * dp. Expert parallelism is carved
// out of DP as in Megatron-LM (ep must divide dp) and does not multiply the world size.
// Rank order is Megatron-LM's default: TP fastest, then DP, then PP:
//   rank = tp + TP * (dp + DP * pp)
// so a TP group is TP consecutive ranks and a PP stage is TP*DP consecutive ranks.
struct Layout {
  int tp = 1;
  int pp = 1;
  int dp = 0;  // 0 = not given yet (derived by Normalize); >= 1 afterwards
  int ep = 1;
  // Bytes of one collective/transfer of each dimension (see docs/jobs.md for the defaults):
  //   dp_bytes: one gradient all-reduce per step = params * 2 / (tp * pp)
  //   tp_bytes: one per-layer activation all-reduce = micro_batch * seq_len * hidden_size * 2
  //   pp_bytes: one activation send between stages = micro_batch * seq_len * hidden_size * 2
  //   ep_bytes: one token all-to-all per MoE layer = micro_batch * seq_len * hidden_size * 2
  // A dimension of size 1 exchanges nothing (0). -1 = not given (Normalize derives it).
  int64_t tp_bytes = -1;
  int64_t pp_bytes = -1;
  int64_t dp_bytes = -1;
  int64_t ep_bytes = -1;

  int WorldSize() const { return tp * pp * (dp > 0 ? dp : 0); }

  // Precondition for the rank helpers: a normalized layout. Out-of-range arguments give -1 / an
  // empty list, never a crash. O(group size).
  int RankOf(int tp_index, int dp_index, int pp_index) const;
  struct Coord {
    int tp = -1, dp = -1, pp = -1;
    bool operator==(const Coord&) const = default;
  };
  Coord CoordOf(int rank) const;
  std::vector<int> TpGroup(int rank) const;  // the TP consecutive ranks holding `rank`
  std::vector<int> DpGroup(int rank) const;  // same tp and pp index, every dp index
  std::vector<int> PpGroup(int rank) const;  // same tp and dp index, every stage
  std::vector<int> EpGroup(int rank) const;  // same tp/pp, dp indexes in one block of ep

  bool operator==(const Layout&) const = default;
};

enum class FailurePolicy { kRequeue, kShrink, kFail };
enum class DegradedPolicy { kContinue, kWait };
const char* FailurePolicyName(FailurePolicy p);    // "requeue", "shrink", "fail"
const char* DegradedPolicyName(DegradedPolicy p);  // "continue", "wait"

struct ElasticRange {
  int min_replicas = 0;
  int max_replicas = 0;
  bool operator==(const ElasticRange&) const = default;
};

// What a job expects of its run, for wait-or-spread (sched::SpecRunTimes): how long it runs on
// its best placement, and the share of a step it spends communicating there. On a slower
// placement its run stretches as its communication does (sched::CommStretch).
struct RunEstimate {
  // The longest run_time accepted: 1e9 s (about 31 years), as scheduler scripts' run=S. An input
  // bound, not a model constant.
  static constexpr int64_t kMaxRunS = 1'000'000'000;
  int64_t run_s = 0;      // > 0, at most kMaxRunS
  double comm_share = 0;  // in [0, 1]
  bool operator==(const RunEstimate&) const = default;
};

// One job. A replica is the unit the scheduler places whole on one node or NVLink domain's worth
// of GPUs (a pod, a Slurm task group): `replicas` of `gpus_per_replica` GPUs each. When neither is
// given, a replica is one DP replica: replicas = dp, gpus_per_replica = tp * pp.
// Invariants after Normalize/Validate: replicas * gpus_per_replica == tp * pp * dp; every byte
// count >= 0; constraints well formed; elastic range (if any) contains replicas.
// Plain value type, copyable, no internal synchronisation.
struct JobSpec {
  std::string name;
  std::string user;
  std::string queue = "default";
  int priority = 0;  // higher runs first

  int replicas = 0;          // 0 = derive
  int gpus_per_replica = 0;  // 0 = derive
  int total_gpus = 0;        // 0 = derive; replicas * gpus_per_replica once normalized
  // Share of one GPU in 1/1000 (1..1000); below 1000 the job is fractional: a world size of one
  // GPU that may share that GPU with other fractional jobs (never with whole-GPU jobs). 1000 (the
  // default, also when the key is absent) = a whole GPU.
  int gpu_milli = 1000;
  Layout layout;

  // Model shape for default traffic. model_params: parameter count (0 = unknown).
  double model_params = 0;
  int hidden_size = 0;  // 0 = derive from model_params (see docs/jobs.md)
  int seq_len = 4096;
  int micro_batch = 1;

  Constraints constraints;
  int64_t time_limit_s = 0;  // 0 = no limit
  // The job checkpoints every checkpoint_interval_s seconds of its run and needs restart_cost_s
  // seconds to restart from a checkpoint (load it, warm up). Both > 0, or both 0 (does not
  // checkpoint). A job that checkpoints may be moved to a faster placement while it runs
  // (SchedulerOptions::consolidate).
  int64_t checkpoint_interval_s = 0;
  int64_t restart_cost_s = 0;
  std::optional<ElasticRange> elastic;
  // Absent: the scheduler has no run time for it (it never waits for a better placement, and
  // nobody plans around its end but by its time limit).
  std::optional<RunEstimate> estimate;
  FailurePolicy on_failure = FailurePolicy::kRequeue;
  DegradedPolicy on_degraded = DegradedPolicy::kContinue;

  SourceRef where;  // the spec's own entry

  // Fills what was left to derive (dp, replicas, gpus_per_replica, hidden_size, byte counts),
  // then validates. Errors: InvalidArgument `job "x": layout.tp: ...`.
  Status Normalize();
  // Checks a complete spec (as Normalize leaves it) without changing it. Same errors.
  Status Validate() const;
  // Every constraint level must be a built-in (nvlink-domain, node) or one of `level_names`
  // (Cluster::levels' names). InvalidArgument naming the field and the known names, with the
  // file:line it was read from when known.
  Status ValidateAgainstLevels(const std::vector<std::string>& level_names) const;

  // A fractional request: gpu_milli < 1000 (then total_gpus == 1 once valid).
  bool Fractional() const { return gpu_milli < 1000; }

  bool operator==(const JobSpec&) const = default;
};

// A problem with one field of a spec: `field` is relative to the spec ("layout.dp").
struct FieldError {
  std::string field;
  std::string message;
};
// Normalize for readers that add their own file:line: context. nullopt when fine.
std::optional<FieldError> NormalizeSpec(JobSpec& spec);
std::optional<FieldError> CheckSpec(const JobSpec& spec);

// "4h", "30m", "1d2h", "90s", "1d2h30m15s", or plain seconds ("3600"). Result in seconds, > 0.
StatusOr<int64_t> ParseDuration(const std::string& text);
// Inverse: 93600 -> "1d2h"; 0 -> "0s".
std::string FormatDuration(int64_t seconds);
// "70B", "7.5b", "350M", "1.8T", "125K", or a plain number -> parameter count (> 0).
StatusOr<double> ParseParamCount(const std::string& text);

// Readers. YAML errors: `source:line: jobs[2].layout.tp: expected a positive integer, got "x"`;
// JSON errors: `source: $.layout.tp: ...` (JSON path; nlohmann gives no line for values).
// Unknown and repeated keys are errors. Never throws; every result is normalized.
// A jobs file: a map with one key, `jobs:`, holding a list of specs. Job names must be unique.
StatusOr<std::vector<JobSpec>> ParseJobsYaml(const std::string& text, const std::string& source);
// One spec (the same fields as one entry of `jobs:`).
StatusOr<JobSpec> ParseJobYaml(const std::string& text, const std::string& source);
StatusOr<JobSpec> ParseJobJson(const std::string& text, const std::string& source);
// `{"jobs": [...]}` in JSON.
StatusOr<std::vector<JobSpec>> ParseJobsJson(const std::string& text, const std::string& source);
// By extension: .json -> ParseJobsJson, anything else -> ParseJobsYaml. NotFound if unreadable.
StatusOr<std::vector<JobSpec>> ReadJobsFile(const std::string& path);
// A job file as `submit` and `place --jobs` take it: one spec, or a `jobs:` list (a map whose
// only key is `jobs`). The same errors as ParseJobYaml/ParseJobsYaml (JSON: their Json forms);
// every spec is parsed and validated before any is returned (all or nothing).
StatusOr<std::vector<JobSpec>> ParseJobSpecsYaml(const std::string& text,
                                                 const std::string& source);
StatusOr<std::vector<JobSpec>> ParseJobSpecsJson(const std::string& text,
                                                 const std::string& source);
// By extension, as ReadJobsFile. NotFound if unreadable; InvalidArgument past 64 MiB.
StatusOr<std::vector<JobSpec>> ReadJobSpecsFile(const std::string& path);

// Writes every field of a (normalized) spec; ParseJobJson of the result gives an equal spec.
std::string JobSpecToJson(const JobSpec& spec, int indent = 2);
// `{"jobs": [...]}`.
std::string JobsToJson(const std::vector<JobSpec>& specs, int indent = 2);

}  // namespace toposched::job
