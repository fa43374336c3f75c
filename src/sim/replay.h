// The replay in time behind sim::Simulate: arrivals, completions, failures and repairs on a
// virtual clock, one Schedule pass of the shared scheduler core per instant, and each running
// job's progress at ideal step time / current step time, recomputed whenever the running set
// changes (start, end, preemption, failure). Internal to the sim module.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "cost/cost_model.h"
#include "placer/gang.h"
#include "sched/scheduler.h"
#include "sim/sim_types.h"
#include "sim/step_model.h"
#include "state/link_model.h"

namespace toposched::sim::detail {

class Replay {
 public:
  // All references must outlive the Replay. `specs` and `work` are per trace job.
  Replay(const topo::Cluster& cluster, const Trace& trace, const std::vector<job::JobSpec>& specs,
         const std::vector<Workload>& work, const sched::GangPlacer& placer,
         const SimOptions& options);
  StatusOr<SimResult> Run(const std::string& policy);

 private:
  // Per trace job, its current (or last) run.
  struct JobRun {
    bool running = false;
    int run = 0;              // run number (a restart after preemption or failure is a new run)
    int version = 0;          // bumped when the pending completion is replaced
    double remaining_us = 0;  // of the trace duration (ideal time) left
    double rate = 1;          // ideal step / current step
    double ideal_ms = 0;      // step on the reference placement, no contention
    StepParts parts;
    sched::LinkModel::Usage usage;
    int nodes = 0;            // nodes of its placement (> 1: it spans nodes)
    double contention = 1;    // current factor on its network links
    double free_step_ms = 0;  // step without contention on its own placement
    double step_ms = 0;       // step at the current contention (UpdateRate)
    int64_t started_us = 0;
    double contention_area = 0;  // ∫ step(with contention) / step(without) dt over the run
    size_t slot = 0;             // position in running_ while running
  };
  using Completion = std::tuple<int64_t, int64_t, int, int>;  // time, id, run, version
  using HealthEvent = std::tuple<int64_t, int, int, int>;     // time, kind, node, gpu

  Status Init(const std::string& policy);
  void Advance(int64_t t);
  Status Completions(int64_t t);
  Status Arrivals(int64_t t);
  Status HealthEvents(int64_t t);
  Status ScanEvents();
  Status Pass(int64_t t);
  Status StartJob(size_t i, int64_t t);
  void StopJob(size_t i);
  Status PriceOn(size_t i, const sched::Placement& p);
  void LeaveLinks(size_t i);
  Status MoveJob(const sched::Scheduler::Move& m, int64_t t);
  void Rerate(int64_t t);
  // Step time at the job's current contention and the rate ideal / step (step-time model).
  void UpdateRate(JobRun& j) const;
  StatusOr<double> IdealStepMs(size_t i, const StepParts& own) const;
  // The job's step parts on its reference placement (toposched's on the empty cluster) on the
  // untapered network, and that placement's alone factor; nullopt when it never fits. Cached
  // per job shape and workload.
  struct Reference {
    StepParts parts;
    double alone = 1;
  };
  StatusOr<std::optional<Reference>> ReferenceOf(size_t i) const;

  // What the scheduler's wait-or-spread plans with: the step-time model on the network as
  // loaded now, and each running job's remaining work at its current rate.
  class Estimator : public sched::RunTimeEstimator {
   public:
    explicit Estimator(const Replay& r) : r_(r) {}
    std::optional<double> RunSeconds(JobId job, const sched::Placement& p) const override;
    std::optional<int64_t> ExpectedEndUs(JobId job, int64_t now_us) const override;
    // dp_backward_overlap × the backward pass (2/3 of compute) / the DP all-reduce on the
    // untapered network, both of its placement when it runs, else of its reference placement
    // (toposched's on the empty cluster); nullopt when that keeps its DP groups inside nodes
    // (their time says nothing of one across the network) or it has no DP all-reduce.
    std::optional<double> DpHideFactor(JobId job) const override;

   private:
    const Replay& r_;
  };
  void DrawFailure(int64_t after);
  void Sample(int64_t t);
  void Finish(SimResult& r);
  // SimResult::window_utilization from the busy steps.
  double WindowUtilization(int64_t start, int total_gpus) const;

  const topo::Cluster& cluster_;
  const Trace& trace_;
  const std::vector<job::JobSpec>& specs_;
  const std::vector<Workload>& work_;
  const sched::GangPlacer& placer_;
  const SimOptions& options_;
  const StepCatalog& catalog_ = StepCatalog::Default();

  std::unique_ptr<sched::Scheduler> sched_;
  std::unique_ptr<sched::GangPlacer> reference_;
  std::unique_ptr<sched::ClusterState> empty_;
  std::unique_ptr<topo::Cluster> flat_cluster_;  // the cluster with every tier untapered
  std::unique_ptr<cost::CostModel> flat_cost_;
  mutable std::map<std::string, std::optional<Reference>> reference_cache_;
  std::unique_ptr<sched::LinkModel> links_;
  mutable std::map<std::string, double> ideal_cache_;
  Estimator estimator_{*this};
  int64_t wait_wake_us_ = -1;  // the last planned start added to relax_
  bool consolidate_ = false;   // the scheduler moves jobs at checkpoints (SimOptions::consolidate)
  size_t moves_seen_ = 0;      // Scheduler::Moves() applied so far

  SimResult r_;
  std::vector<JobRun> jobs_;
  std::vector<size_t> running_;    // running jobs, any order
  std::vector<size_t> networked_;  // running jobs with network links
  bool links_changed_ = false;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> done_;
  std::map<int, int> waiting_replicas_;  // replica size → waiting jobs
  std::vector<char> hit_;
  size_t next_ = 0;
  size_t logged_ = 0;

  int busy_ = 0;
  int64_t alloc_milli_ = 0;
  double busy_area_ = 0, alloc_area_ = 0, frag_area_ = 0, frag_now_ = 0;
  std::vector<std::pair<int64_t, int>> busy_steps_;
  int64_t last_t_ = 0;
  // Locality waits (policy "locality-relax"): the wait, and the relax times still to come.
  int64_t locality_wait_us_ = 0;
  // Something a pass could act on happened since the last pass (arrival, completion, health
  // change, relax time, scheduler event).
  bool changed_ = true;
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> relax_;
  int64_t last_end_ = 0;
  bool final_taken_ = false;

  std::mt19937_64 rng_;
  std::priority_queue<HealthEvent, std::vector<HealthEvent>, std::greater<HealthEvent>> health_;
  double failure_rate_per_us_ = 0;
  std::vector<int> gpu_prefix_;
  int repairs_pending_ = 0;
};

}  // namespace toposched::sim::detail
