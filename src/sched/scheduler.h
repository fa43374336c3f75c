// The event-driven scheduler core: a queue of jobs, one ClusterState, and the policies that
// decide who runs (priority + fair share ordering, per-user/per-queue GPU limits, EASY backfill
// with one head-of-line reservation, priority preemption). The daemon and the simulator drive
// it with an injected clock (int64 microseconds); it never reads a clock and never sleeps.
//
// Queue order (recomputed before each pick inside a pass, so a job started earlier in the pass
// counts as usage for the next pick), lexicographic:
//   1. priority, higher first;
//   2. fair-share penalty, lower first:
//        penalty = user_usage / user_weight_share + queue_usage / queue_weight_share
//      where usage = GPUs held by the user's (queue's) RUNNING jobs / cluster GPUs, and
//      weight_share = weight / Σ weights of the users (queues) with a PENDING or RUNNING job
//      (weights default to 1). Equal usage ⇒ equal penalty; a user under its share sorts first.
//   3. submit time, earlier first; 4. job id.
// (This is effective priority = priority − w·penalty with w → 0+: fair share only orders jobs of
// equal priority.) With fair_share_half_life_s = 0, usage is instantaneous (GPUs held now); with
// a half-life H, usage is decayed history, as Slurm's PriorityDecayHalfLife: GPU-seconds where
// a GPU-second t seconds ago counts 2^(−t/H), divided by the sum over all users (queues), so
// usage is each one's fraction of the recent total. A pass picks each next job by a linear
// scan: O(pending²) per pass, fine for thousands of pending jobs, not for millions.
//
// One pass (Schedule): walk the order. A job over its user/queue GPU limit, or unresolvable on
// this cluster, stays PENDING with a reason and blocks nobody. The first job that fits nowhere
// now (and cannot preempt, see below) becomes the reservation: its earliest start is found by
// releasing the running jobs in order of their end (start + time limit; a job without a limit
// never ends) on a copy of the state until it fits; its GPUs are the placement found there
// (no end at all: the placement on a state with every running job released, start = never).
// Each later job may start now only if it fits now AND either its time limit ends at or before
// the reservation's start, or it is placed without touching the reserved GPUs (conservative
// EASY rule: the reserved GPUs are blocked when placing it). Later jobs never get reservations.
//
// Wait-or-spread (SchedulerOptions::wait_or_spread, with a RunTimeEstimator): a job that fits now
// on a placement slower than its best may instead wait — holding the reservation — for a
// placement that frees up at a running job's expected end, when that finishes it sooner.
//
// Preemption: a job with priority >= preempt_priority_threshold that does not fit, met before
// any reservation, may preempt RUNNING jobs of strictly lower priority. Victims are whole jobs;
// cost(victim) = GPUs · (1 + max(priority, 0)). Candidates (the max_preempt_candidates cheapest)
// are tried as sets in non-decreasing total cost (best-first enumeration of subsets, at most
// max_preempt_combinations placement attempts); the first fitting cost wins, ties broken by more
// fully free nodes after the release (whole nodes/domains freed), then fewer victims. Victims go
// RUNNING -> PREEMPTED -> REQUEUED -> PENDING with reasons naming the preemptor, keeping their
// submit time.
//
// Elastic jobs (JobSpec::elastic) change size in whole DP replicas (a size is valid when its
// GPUs are whole DP replicas, see JobSpec::Validate): ranks keep Megatron order over the new DP
// width, surviving DP replicas keep their relative order.
//   Grow: at the end of a pass in which no job is left waiting for resources, each RUNNING
//   elastic job below max_replicas (priority order) grows to the largest valid size whose extra
//   replicas fit inside the lowest network domain that holds its current nodes; when none fits
//   there, the largest that fits anywhere.
//   Shrink for a higher-priority job: before preempting whole jobs, lower-priority RUNNING
//   elastic jobs above min_replicas give up DP replicas, the most remote first (farthest from
//   rank 0's node in the network tree, then the highest DP index), lowest priority first, one
//   valid size step at a time until the job fits.
//   Shrink on failure (on_failure: shrink): the DP replicas that touch the broken GPUs go, then
//   more of the most remote ones until the size is valid; below min_replicas the job is
//   requeued instead.
// Each resize is a JobRecord note with the old and new size and predicted time.
//
// Failures and degradation (health reports from the daemon, draws in the simulator):
//   node unhealthy      -> jobs on it: NODE_FAIL, then per on_failure: requeue (REQUEUED ->
//                          PENDING, keeps its submit time), shrink, or fail (stays NODE_FAIL)
//   GPU unhealthy       -> jobs holding it: FAILED, then per on_failure as above
//   node/GPU degraded   -> still usable; jobs on it per on_degraded: continue (a note) or wait
//                          (PREEMPTED -> REQUEUED -> PENDING, placed again where best)
//   NIC, NVLink health  -> the topology changes: the scheduler places on a copy of the cluster
//                          whose affected nodes get their own hardware profile (a NIC marked
//                          unhealthy is not used; a GPU's NVLinks degraded: half its links per
//                          peer; unhealthy: none, the pair falls back to PCIe — NODE inside a
//                          NUMA node, else SYS), so the cost model and node selection see it.
//                          Running jobs on the node are re-scored; slower ones follow
//                          on_degraded as above; recovery is logged with the new time.
//   Unhealthy nodes/GPUs take no new work (ClusterState); a broken part is never given out.
//
// Allocations: allocation id == job id. A job holds an allocation exactly while its state holds
// resources (RUNNING, or COMPLETING during a kill grace period > 0; with the default grace 0
// COMPLETING is never observable between calls).
//
// Holds: GPUs taken by something other than a job (the Kubernetes extender's pod reservations
// and bound pods), allocation id == −hold id. Every placement, backfill reservation and
// preemption sees them as busy; they are never preempted, shrunk, requeued or timed out (a
// health change reports no job for them), and only ReleaseHold frees them.
//
// Not thread-safe: one owner drives it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"
#include "job/job_state.h"
#include "placer/gang.h"
#include "sched/input.h"
#include "state/cluster_state.h"
#include "state/link_model.h"

namespace toposched::sched {

struct SchedulerOptions {
  std::map<std::string, double> user_weights;   // fair-share weight per user; default 1
  std::map<std::string, double> queue_weights;  // fair-share weight per queue; default 1
  std::map<std::string, int> user_gpu_limits;   // max GPUs RUNNING per user; absent = none
  std::map<std::string, int> queue_gpu_limits;  // max GPUs RUNNING per queue; absent = none
  bool backfill = true;
  // Jobs with priority >= this may preempt lower-priority running jobs.
  int preempt_priority_threshold = 1000;
  int max_preempt_candidates = 16;
  int max_preempt_combinations = 64;
  // SIGTERM -> SIGKILL grace for timeouts and cancellations of running jobs.
  int64_t kill_grace_us = 0;
  // 0: fair share on GPUs held now; > 0: on decayed GPU-seconds with this half-life.
  int64_t fair_share_half_life_s = 0;
  // Elastic jobs grow at the end of a pass that leaves nobody waiting for resources.
  bool elastic_grow = true;
  // Lower-priority elastic jobs shrink before whole jobs are preempted.
  bool elastic_shrink = true;
  // The clock's times are microseconds since the Unix epoch (the daemon): explanations print
  // them as UTC date-times. false: offsets from a start (simulator, scripts), printed as seconds.
  bool epoch_clock = false;
  // Waiting for locality (the Philly scheduler's rule, Jeon et al., ATC'19 §2.2): ≥ 0 holds a
  // job without a job-level constraint (and not elastic) to the tightest place that could hold
  // it on the empty cluster — one node, else one domain of the lowest network level with room
  // (ConsolidatedLevel) — until it has waited this long since submission; then it may go
  // anywhere. A held job that does not fit waits (and reserves) with that constraint; the pass
  // at its relax time is the caller's to run (the daemon's periodic pass; the simulator adds an
  // event). −1: off (the default).
  int64_t locality_wait_us = -1;
  // Waiting or spreading, decided by expected finish time (needs a RunTimeEstimator, see
  // Scheduler::SetRunTimeEstimator; without one nobody waits). A job that fits now, but on a
  // placement slower than its best on the empty cluster, is planned: the running jobs are
  // released on a copy of the cluster in the order of their expected ends, and the placer places
  // the job after the 1st, 2nd, 4th, 8th, ... distinct end time until its placement there is
  // the best possible, then by bisection at the earliest end time where it is. Each placement
  // faster than now's gives a finish time (that end time + the job's run time there); the job
  // waits when the earliest of them is before starting now would finish. The waiting job takes
  // the pass's reservation (when none is taken yet) on that placement. Bounded: once the job
  // has planned to wait, it waits only for plans that finish it by the time starting at that
  // first decision would have (so waiting never makes it finish later than that, by the
  // estimates); past it, it starts wherever it fits. Off by default.
  bool wait_or_spread = false;
  // The most placements one plan tries (a bound on search time, not a model constant).
  int wait_plan_attempts = 32;
  // Consolidation at checkpoints (needs a RunTimeEstimator, as wait_or_spread; sched/
  // consolidate.cc). At the end of a pass that leaves no job waiting for resources, each running
  // job that checkpoints (JobSpec::checkpoint_interval_s) and is predicted slower than its best
  // possible placement is reconsidered once per checkpoint interval of its run: placed again
  // with its own GPUs free, it moves when the time it would still need there — its remaining
  // work and the work since its last checkpoint (redone), at the new placement's speed — plus
  // its restart cost is less than the time it still needs where it is. A move keeps the job
  // RUNNING, with a note of the numbers. Bounded: at most max_moves_per_job moves per job and
  // max_moves_per_hour in the cluster in any hour (policy bounds, not model constants).
  bool consolidate = false;
  int max_moves_per_job = 2;
  int max_moves_per_hour = 6;
  // Backfill by run-time estimates (needs a RunTimeEstimator, as wait_or_spread). Without a
  // time limit a running job never ends for the reservation (EndUs), so a blocked head job
  // reserves the GPUs it would take with every running job gone, and no later job may use those
  // that are free. With this option the estimates stand in where no time limit is given: a
  // running job without a limit ends, for the reservation, at its expected end (ExpectedEndUs;
  // without an answer, never), and a later job without a limit may start on the reserved GPUs
  // when its estimated run there (RunSeconds on the placement it gets now) ends by the
  // reservation's start, when that start itself rests on an estimate (a reservation from time
  // limits alone is not traded against an estimate). A declared time limit always wins over an
  // estimate, for a running job's end and for a waiting job's own. EASY backfill with predicted
  // run times (as Slurm's backfill uses time limits); an estimate that turns out short delays
  // the reservation, which every pass makes again. Off by default.
  bool backfill_by_estimates = false;
  Status Validate() const;
};

// What the scheduler may know of run times, for SchedulerOptions::wait_or_spread. The simulator
// answers from its step-time model and each job's remaining work; the daemon from the estimates
// jobs declare in their specs (sched::SpecRunTimes), scheduler scripts from declared run times.
class RunTimeEstimator {
 public:
  virtual ~RunTimeEstimator() = default;
  // Seconds job `id` would run on `p` if started now (its remaining work at p's step time,
  // with the network as loaded now); nullopt when unknown (the job then does not wait).
  virtual std::optional<double> RunSeconds(JobId id, const Placement& p) const = 0;
  // When running job `id` is expected to end; nullopt when unknown (never, for planning).
  virtual std::optional<int64_t> ExpectedEndUs(JobId id, int64_t now_us) const = 0;
  // The link factor up to which job `id`'s DP gradient all-reduce stays hidden behind its
  // backward pass: the backward-pass time it can hide behind / the all-reduce's time on the
  // unloaded network (sim/step_model.h), for the "contention" score (GangPlacer::Place,
  // AddToLinks); nullopt when unknown: all its communication is exposed. Consulted whenever
  // the policy weighs contention, with or without wait_or_spread.
  virtual std::optional<double> DpHideFactor(JobId id) const {
    (void)id;
    return std::nullopt;
  }
};

class Scheduler {
 public:
  using Options = SchedulerOptions;

  // The placer (and its cluster) must outlive the scheduler. InvalidArgument for bad options.
  static StatusOr<std::unique_ptr<Scheduler>> Create(const GangPlacer& placer,
                                                     Options options = {});

  // Applies one input (sched/input.h) at `now_us`: the one way in for the daemon, its replay,
  // the golden scripts and the simulator. Each alternative does what the method below named
  // for it does, with its errors; a refused input changes nothing.
  StatusOr<Applied> Apply(const Input& in, int64_t now_us);

  // Normalizes the spec (InvalidArgument when it is malformed) and queues it PENDING with a
  // "submitted" note. Ids are sequential from 1; the JobRecord id is "job-<id>".
  StatusOr<JobId> Submit(job::JobSpec spec, int64_t now_us);
  // The pod group a job was submitted as (SubmitPodGroup), "" for any other job.
  const std::string& PodGroupOf(JobId id) const;
  // A PENDING job's place in the queue as a pass would walk it now (priority, fair-share
  // penalty at the current usage, submit time, id): 1-based, and the number of PENDING jobs.
  // nullopt when the job is not PENDING. O(pending jobs).
  std::optional<std::pair<int, int>> QueuePosition(JobId id) const;
  // When the job's current run started (it holds GPUs); nullopt otherwise.
  std::optional<int64_t> StartedUs(JobId id) const;
  // PENDING/REQUEUED -> CANCELLED; RUNNING -> COMPLETING -> CANCELLED (after kill_grace_us,
  // in Tick). NotFound for an unknown id; FailedPrecondition for a job already finished.
  Status Cancel(JobId id, int64_t now_us);
  // The job's processes finished: RUNNING -> COMPLETING -> COMPLETED, allocation released.
  // For a job already terminating (COMPLETING), its processes exited: the pending final state.
  // `failure` non-empty: a running job's processes failed; it ends FAILED with that reason (a
  // job already terminating ends as its termination says). `drain_node` >= 0: that node is
  // drained first, with `drain_reason` (a fatal GPU fault in the job's report). `platform`
  // (with a failure, on a running job): the cause is the platform's, and the job follows its
  // on_failure instead (requeue; shrink around the GPUs on `failed_node`, all of its GPUs when
  // -1; fail), as on a health event.
  // FailedPrecondition unless the job is RUNNING or COMPLETING; nothing changes then.
  Status Complete(JobId id, int64_t now_us, const std::string& failure = "", int drain_node = -1,
                  const std::string& drain_reason = "", bool platform = false,
                  int failed_node = -1);
  // A running job reported degraded (sched::JobDegraded): its on_degraded decides, as for a
  // degraded link; `after_ms` (> 0, finite) its predicted time now, else unchanged.
  // `drain_node` as Complete's. FailedPrecondition unless it runs; nothing changes then.
  Status ReportDegraded(JobId id, const std::string& reason, double after_ms, int64_t now_us,
                        int drain_node = -1, const std::string& drain_reason = "");
  // Why a drained node was drained ("" when not drained or no reason was given).
  std::string NodeDrainReason(int node) const {
    auto it = drain_reasons_.find(node);
    return it == drain_reasons_.end() ? std::string() : it->second;
  }
  // RUNNING jobs at or past start + time limit go to TIMEOUT (JobRecord::Timeout with
  // kill_grace_us); due SIGKILLs fire. Releases the allocations of jobs that stopped.
  Status Tick(int64_t now_us);
  // One scheduling pass (see the file comment). Returns the ids started, in start order.
  StatusOr<std::vector<JobId>> Schedule(int64_t now_us);
  // The estimator wait-or-spread plans with (nullptr: none); it must outlive the scheduler or
  // be replaced first.
  void SetRunTimeEstimator(const RunTimeEstimator* estimator) { estimator_ = estimator; }
  // The earliest start of a plan a PENDING job waits on; the caller runs a pass then (the
  // simulator adds an event). nullopt when nobody waits.
  std::optional<int64_t> NextPlannedStartUs() const;

  // A consolidation move (SchedulerOptions::consolidate), in the order made.
  struct Move {
    JobId job;
    int64_t at_us = 0;
    double before_ms = 0, after_ms = 0;  // predicted_ms where it ran and where it went
    double left_s = 0;                   // the time it still needed where it ran (estimate)
    double lost_s = 0;                   // run time since its last checkpoint, redone
    double restart_s = 0;                // JobSpec::restart_cost_s
    double gain_s = 0;                   // finishes this much earlier, net of both (estimate)
    int64_t expected_end_us = 0;         // its expected end after the move (estimate)
  };
  const std::vector<Move>& Moves() const { return moves_; }
  // The job's last move; nullptr when it never moved (since it last started).
  const Move* LastMove(JobId id) const;

  // A job's priority changes (PENDING or holding GPUs); a note in its log. NotFound; a
  // FailedPrecondition for a finished job.
  Status SetPriority(JobId id, int priority, int64_t now_us);

  // Health reports (see the file comment). `node`, `gpu` and `nic` are positions (node id, GPU
  // position in NodeTopology::gpus, NIC position in NodeTopology::nics); InvalidArgument when
  // out of range. `reason` goes into every job event it causes.
  Status SetNodeHealth(int node, topo::Health health, int64_t now_us, const std::string& reason);
  Status SetGpuHealth(int node, int gpu, topo::Health health, int64_t now_us,
                      const std::string& reason);
  Status SetNicHealth(int node, int nic, topo::Health health, int64_t now_us,
                      const std::string& reason);
  // Health of the NVLinks of one GPU (all its links): degraded halves them, unhealthy removes.
  Status SetNvlinkHealth(int node, int gpu, topo::Health health, int64_t now_us,
                         const std::string& reason);
  // The node's own topology (sched::NodeTopologyReport): replaces its profile's in the model.
  // InvalidArgument for a node out of range, a topology that fails Validate, or a GPU count that
  // is not the node's (nothing changes). NIC health reports for NIC positions the new topology
  // lacks are dropped. `reason` names who found it.
  Status SetNodeTopology(int node, const topo::NodeTopology& topology, int64_t now_us,
                         const std::string& reason);
  // The topology a report gave the node (merged with its profile's), nullptr when none did.
  const topo::NodeTopology* ReportedTopology(int node) const {
    auto it = reported_topology_.find(node);
    return it == reported_topology_.end() ? nullptr : &it->second.topology;
  }
  // The node's topology before link health is applied: reported, else its profile's.
  const topo::NodeTopology& OwnTopology(int node) const;
  // Who reported it ("" when nothing was).
  std::string ReportedTopologySource(int node) const {
    auto it = reported_topology_.find(node);
    return it == reported_topology_.end() ? std::string() : it->second.source;
  }
  // Moves the node in the model's network (sched::NodeNetworkReport). InvalidArgument for a node
  // out of range, a domain list that is not one name per level, a known domain at another level
  // or under another parent, a new NVLink domain without its bandwidth (nothing changes).
  Status SetNodeNetwork(const NodeNetworkReport& report, int64_t now_us);
  // The place a report gave the node (merged over reports), nullptr when it keeps the cluster
  // file's.
  const NodeNetworkReport* ReportedNetwork(int node) const {
    auto it = network_.find(node);
    return it == network_.end() ? nullptr : &it->second;
  }
  // A drained node takes no new work; its jobs run on.
  Status SetNodeDrained(int node, bool drained, int64_t now_us, const std::string& reason);

  // Takes `parts` for hold `hold_id` (in [1, 2^60)), all or nothing. InvalidArgument for an id
  // out of range or GPUs that are not free (ClusterState::Allocate's message); AlreadyExists
  // for a live hold id.
  Status Hold(int64_t hold_id, const std::vector<NodeGpus>& parts);
  // NotFound when the hold is not live.
  Status ReleaseHold(int64_t hold_id);
  // The allocation key of hold `hold_id` in cluster_state().
  static AllocId HoldAllocationId(int64_t hold_id) { return AllocId::Hold(hold_id); }
  // Live holds: id → GPUs (node order).
  const std::map<int64_t, std::vector<NodeGpus>>& Holds() const { return holds_; }

  // The job's current spec (an elastic job's replicas/dp change with resizes); nullptr unknown.
  const job::JobSpec* Spec(JobId id) const;
  std::vector<JobId> JobIds() const;  // ascending
  // The placer in use: the one given to Create, or its copy over the degraded topology.
  const GangPlacer& placer() const { return *placer_; }

  // Every event of every job, in the order they happened.
  const std::vector<job::JobEvent>& Events() const { return log_; }
  // PENDING: why (limit, reservation, the placer's reasons); RUNNING: domain, predicted vs best
  // possible ms; otherwise the state. NotFound for an unknown id.
  StatusOr<std::string> Explain(JobId id) const;

  std::optional<job::JobState> State(JobId id) const;
  const Placement* PlacementOf(JobId id) const;  // nullptr unless holding GPUs
  const ClusterState& cluster_state() const { return state_; }
  // A GPU's NVLink health and a NIC's health as reported (kHealthy when never reported).
  topo::Health NvlinkHealth(int node, int gpu) const {
    auto it = nvlink_health_.find({node, gpu});
    return it == nvlink_health_.end() ? topo::Health::kHealthy : it->second;
  }
  topo::Health NicHealth(int node, int nic) const {
    auto it = nic_health_.find({node, nic});
    return it == nic_health_.end() ? topo::Health::kHealthy : it->second;
  }

  // ClusterState::CheckInvariants, plus: a job holds an allocation iff HoldsResources(state),
  // with exactly its placement's GPUs, every hold has its allocation, nothing else is
  // allocated, and no GPU is in two jobs' placements or holds. Internal if not.
  Status CheckInvariants() const;

 private:
  friend class SchedulingPass;  // Schedule's steps (scheduler_pass.h)
  friend class Lookahead;       // reservations, backfill, wait-or-spread (lookahead.h)
  friend class Preemption;      // preemption (preemption.h)
  struct Job {
    int64_t id = 0;
    job::JobSpec spec;
    job::JobRecord record;
    std::optional<Placement> placement;  // set while holding GPUs
    int64_t start_us = 0;
    // Shared: a pass gives every job of one shape the same words.
    std::shared_ptr<const std::string> pending_reason;
    size_t logged = 0;              // record events copied to log_
    int shape_id = 0;               // interned PlacementShapeKey(spec), kept current across resizes
    int user_id = 0, queue_id = 0;  // interned names
    bool listed = false;            // in pending_list_
    bool active = false;            // counted in user_count_/queue_count_
    // The spec held to its consolidated level while it waits for locality, and its shape id.
    std::optional<job::JobSpec> local;
    int local_shape_id = 0;
    // Wait-or-spread: the start of the plan it waits on, and the finish time starting at its
    // first plan's decision would have given — it waits only for plans that finish by then
    // (−1: not waiting since it was queued).
    int64_t wait_start_us = -1;
    int64_t wait_finish_by_us = -1;
    std::string pod_group;  // SubmitPodGroup's group, "" otherwise
    // Consolidation: checkpoints count from here (its start, or the end of its last move's
    // restart); the last checkpoint index it was reconsidered at (−1: none); moves in its life
    // (requeues included); its last move in moves_ since it last started (−1: none).
    int64_t checkpoint_origin_us = 0;
    int64_t considered_checkpoint = -1;
    int moves = 0;
    int64_t last_move = -1;
  };
  struct Usage {
    std::map<std::string, int> user_gpus, queue_gpus;
  };

  Scheduler(const GangPlacer& placer, Options options, ClusterState state);

  Job* Find(int64_t id);
  Job* Find(JobId id) { return Find(id.value); }
  // Submit, remembering the pod group (empty: none) in the job and its "submitted" note.
  StatusOr<int64_t> SubmitAs(job::JobSpec spec, int64_t now_us, const std::string& pod_group);
  int ShapeId(const job::JobSpec& spec);  // interns PlacementShapeKey
  int NameId(const std::string& name);    // interns user and queue names
  static std::shared_ptr<const std::string> Words(std::string s) {
    return std::make_shared<const std::string>(std::move(s));
  }
  // Fair-share usage decays to now (half-life mode only).
  void Accrue(int64_t now_us);
  // Affected jobs after a health change.
  Status HandleFailure(Job& j, job::JobState fail_state, const std::string& why, int64_t now_us,
                       const std::vector<NodeGpus>& broken);
  Status HandleDegraded(Job& j, const std::string& why, double before_ms, double after_ms,
                        int64_t now_us);
  // Stops a running job and puts it back in the queue: RUNNING -> via_state -> REQUEUED ->
  // PENDING.
  Status Requeue(Job& j, job::JobState via_state, const std::string& why, int64_t now_us);
  // Consolidation at the end of a pass (SchedulerOptions::consolidate).
  Status Consolidate(int64_t now_us);
  // Rebuilds the overlay copy from network_, reported_topology_, nic_health_ and nvlink_health_,
  // switches placer_ and rebinds state_, then re-scores running jobs on `node` and applies
  // on_degraded.
  Status TopologyChanged(int node, const std::string& why, int64_t now_us);
  // Resizes a running job to `keep` of its DP indices (ascending) plus `extra` (a placement of
  // `extra_dp` more DP replicas, ranks in Megatron order of that sub-layout); reallocates,
  // re-scores, notes. `why` opens the note.
  Status Resize(Job& j, const std::vector<int>& keep, const Placement* extra, int extra_dp,
                int64_t now_us, const std::string& why);
  // DP indices of a running job ordered most remote first (release order).
  std::vector<int> RemoteOrder(const Job& j) const;
  // Whether the job may run with `dp` DP replicas: whole replicas of gpus_per_replica, whole EP
  // blocks, inside the elastic range.
  static bool ValidDp(const job::JobSpec& s, int dp);
  // GPUs of the ranks whose DP index is in `keep`, per node (node order).
  static std::vector<NodeGpus> PartsOfKept(const Job& j, const std::vector<int>& keep);
  // The lowest network domain holding all of `parts` (-1: none, e.g. several roots).
  int HomeDomain(const std::vector<NodeGpus>& parts) const;
  // Name of the lowest domain (node, network domain, cluster) holding all of `parts`.
  std::string DomainOf(const std::vector<NodeGpus>& parts) const;
  // Tries growing one job (see the file comment). True when it grew.
  StatusOr<bool> TryGrow(Job& j, int64_t now_us);
  // Tries to fit `j` by shrinking lower-priority elastic jobs; on success applies and starts j.
  StatusOr<bool> TryShrinkOthers(Job& j, int64_t now_us);
  const Job* Find(int64_t id) const;
  const Job* Find(JobId id) const { return Find(id.value); }
  void Sync(Job& j);  // copies new record events into log_, keeps active_ current
  // Jobs holding GPUs, by id (a snapshot: callers may change states).
  std::vector<std::pair<int64_t, Job*>> Running() const;
  // The network links as the running jobs load them, for the placer's "contention" score;
  // nullopt when the policy does not weigh contention.
  std::optional<LinkModel> RunningLinks() const;
  // The estimator's DpHideFactor for job `id`, 0 without an estimator or an answer.
  double DpHideFactor(int64_t id) const;
  Usage CurrentUsage() const;
  struct Shares {
    double user_weight_sum = 0, queue_weight_sum = 0;
  };
  Shares ActiveWeights() const;
  double Penalty(const Job& j, const Usage& u, const Shares& sh) const;
  // Reason the job is over a limit, empty when within.
  std::string LimitReason(const Job& j, const Usage& u) const;
  Status Start(Job& j, Placement p, int64_t now_us, const std::string& reason);
  Status ReleaseIfStopped(Job& j);
  // The spec a pass places `j` with at now_us: j.local while it still waits for locality, else
  // j.spec.
  const job::JobSpec& PlacementSpec(const Job& j, int64_t now_us) const;
  static int64_t EndUs(const Job& j);  // INT64_MAX without a limit

  const RunTimeEstimator* estimator_ = nullptr;
  const GangPlacer* base_placer_;
  const GangPlacer* placer_;  // base_placer_, or overlay_placer_ while links are degraded
  std::unique_ptr<topo::Cluster> overlay_cluster_;
  std::unique_ptr<GangPlacer> overlay_placer_;
  struct Reported {
    topo::NodeTopology topology;  // merged with the profile's
    std::string source;
    bool differs = true;  // from the profile's topology (else the node keeps its profile)
  };
  std::map<int, Reported> reported_topology_;  // node -> its own topology, as reported
  std::map<int, NodeNetworkReport> network_;   // node -> its place as reported, where it moved
  std::map<std::pair<int, int>, topo::Health> nic_health_;     // (node, nic) not healthy
  std::map<std::pair<int, int>, topo::Health> nvlink_health_;  // (node, gpu) not healthy
  std::map<int, std::string> drain_reasons_;                   // drained node -> why
  std::map<std::string, double> user_usage_, queue_usage_;     // decayed GPU-seconds
  int64_t accrued_us_ = 0;
  std::unordered_map<std::string, int> shape_ids_;
  std::map<std::string, int> names_;  // users and queues (one id space)
  Options options_;
  ClusterState state_;
  std::map<int64_t, Job> jobs_;
  std::map<int, std::string> consolidated_;         // ConsolidatedLevel per GPU count
  std::map<int64_t, std::vector<NodeGpus>> holds_;  // hold id → parts (allocation −id)
  // Indexes kept by Sync, so that passes never walk finished jobs: jobs holding GPUs; jobs
  // that became PENDING (compacted each pass); PENDING-or-holding jobs per user / queue id.
  std::map<int64_t, Job*> running_;
  std::vector<Job*> pending_list_;
  std::vector<int> user_count_, queue_count_;
  std::vector<job::JobEvent> log_;
  std::vector<Move> moves_;
  int64_t next_id_ = 1;
};

}  // namespace toposched::sched
