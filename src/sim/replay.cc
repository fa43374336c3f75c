#include "sim/replay.h"

#include <algorithm>
#include <cmath>

#include "core/time_units.h"
#include "placer/policy.h"
#include "sim/random.h"

namespace toposched::sim::detail {

namespace {

constexpr int64_t kNoTime = -1;

int64_t ParseJobId(const std::string& s) {
  // "job-<id>" as the scheduler names its records.
  if (s.rfind("job-", 0) != 0) return -1;
  int64_t v = 0;
  for (size_t i = 4; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

Replay::Replay(const topo::Cluster& cluster, const Trace& trace,
               const std::vector<job::JobSpec>& specs, const std::vector<Workload>& work,
               const sched::GangPlacer& placer, const SimOptions& options)
    : cluster_(cluster),
      trace_(trace),
      specs_(specs),
      work_(work),
      placer_(placer),
      options_(options),
      rng_(options.seed) {}

Status Replay::Init(const std::string& policy) {
  sched::SchedulerOptions so;
  if (sched::PolicyWaitsForLocality(policy)) {
    locality_wait_us_ = static_cast<int64_t>(std::llround(options_.locality_wait_s * kUsPerS));
    so.locality_wait_us = locality_wait_us_;
  }
  const bool wait_or_spread = sched::PolicyWaitsOrSpreads(policy) && options_.wait_or_spread &&
                              options_.runtime_model == RuntimeModel::kStep;
  so.wait_or_spread = wait_or_spread;
  so.backfill_by_estimates =
      (sched::PolicyWaitsOrSpreads(policy) || options_.backfill_by_estimates_all) &&
      options_.backfill_by_estimates && options_.runtime_model == RuntimeModel::kStep;
  // Only jobs that checkpoint move: without them the passes stay as before.
  consolidate_ = sched::PolicyWaitsOrSpreads(policy) && options_.consolidate &&
                 options_.runtime_model == RuntimeModel::kStep &&
                 options_.checkpoint_interval_s > 0;
  so.consolidate = consolidate_;
  ASSIGN_OR_RETURN(sched_, sched::Scheduler::Create(placer_, so));
  // With the step-time model the scheduler always has it: the contention score asks it what
  // each job hides behind its backward pass (the planning uses run only when switched on).
  if (options_.runtime_model == RuntimeModel::kStep) sched_->SetRunTimeEstimator(&estimator_);
  // The ideal placement is the same for every policy: toposched's placement on the empty
  // cluster (a baseline's own choice on the empty cluster would hide its worse GPU choices).
  ASSIGN_OR_RETURN(sched::GangPlacerOptions ref_options, sched::PolicyOptions("toposched"));
  ASSIGN_OR_RETURN(reference_, sched::GangPlacer::Create(cluster_, ref_options));
  ASSIGN_OR_RETURN(sched::ClusterState empty, sched::ClusterState::Create(cluster_));
  empty_ = std::make_unique<sched::ClusterState>(std::move(empty));
  // Link sharing replaces the design ratio's worst case: step parts are priced on the cluster
  // with every tier at full bisection, and LinkModel slows the network parts by the load.
  flat_cluster_ = std::make_unique<topo::Cluster>(cluster_);
  for (topo::NetworkLevel& l : flat_cluster_->levels) l.oversubscription = 1.0;
  flat_cluster_->Finalize();
  flat_cost_ = std::make_unique<cost::CostModel>(*flat_cluster_);
  links_ = std::make_unique<sched::LinkModel>(cluster_);

  const size_t n = trace_.jobs.size();
  r_.total_gpus = cluster_.TotalGpus();
  r_.jobs.resize(n);
  jobs_.resize(n);
  hit_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    JobOutcome& o = r_.jobs[i];
    o.name = trace_.jobs[i].name;
    o.gpu_milli = specs_[i].gpu_milli;
    o.gpus = specs_[i].total_gpus;
    o.submit_us = trace_.jobs[i].submit_us;
    o.ideal_us = trace_.jobs[i].duration_us;
  }
  last_t_ = n > 0 ? trace_.jobs.front().submit_us : 0;
  last_end_ = last_t_;
  failure_rate_per_us_ = options_.failures ? options_.failures_per_gpu_day *
                                                 static_cast<double>(r_.total_gpus) / 86400e6
                                           : 0;
  gpu_prefix_.push_back(0);
  for (const topo::ClusterNode& node : cluster_.nodes) {
    gpu_prefix_.push_back(gpu_prefix_.back() +
                          static_cast<int>(cluster_.profiles[node.profile].topology.gpus.size()));
  }
  DrawFailure(last_t_);
  return OkStatus();
}

void Replay::DrawFailure(int64_t after) {
  if (failure_rate_per_us_ <= 0 || r_.total_gpus <= 0) return;
  if (next_ >= trace_.jobs.size() && done_.empty()) return;  // nothing left to hit
  const double gap = -std::log(Uniform01(rng_)) / failure_rate_per_us_;
  const int64_t when = after + std::max<int64_t>(1, static_cast<int64_t>(std::min(gap, 1e18)));
  const int k = static_cast<int>(Uniform01(rng_) * r_.total_gpus) % r_.total_gpus;
  const int node = static_cast<int>(std::upper_bound(gpu_prefix_.begin(), gpu_prefix_.end(), k) -
                                    gpu_prefix_.begin() - 1);
  const bool whole = Uniform01(rng_) <= options_.node_failure_fraction;
  health_.emplace(when, whole ? 1 : 0, node, k - gpu_prefix_[node]);
}

// Time-integrates utilisation, fragmentation, progress and contention up to t.
void Replay::Advance(int64_t t) {
  const double dt = static_cast<double>(t - last_t_);
  busy_area_ += busy_ * dt;
  alloc_area_ += static_cast<double>(alloc_milli_) * dt;
  frag_area_ += frag_now_ * dt;
  if (dt > 0) {
    for (size_t i : running_) {
      JobRun& j = jobs_[i];
      j.remaining_us -= dt * j.rate;
      if (j.free_step_ms > 0 && !j.usage.links.empty()) {
        j.contention_area +=
            dt * StepMs(j.parts, j.contention, catalog_.dp_backward_overlap) / j.free_step_ms;
      } else {
        j.contention_area += dt;
      }
    }
  }
  last_t_ = t;
}

Status Replay::Completions(int64_t t) {
  while (!done_.empty() && std::get<0>(done_.top()) == t) {
    auto [when, id, number, version] = done_.top();
    done_.pop();
    const size_t i = static_cast<size_t>(id - 1);
    JobRun& j = jobs_[i];
    if (!j.running || j.run != number || j.version != version) continue;
    RETURN_IF_ERROR(sched_->Apply(sched::CompleteJob{JobId{id}, {}}, t).status());
    changed_ = true;
    JobOutcome& o = r_.jobs[i];
    o.end_us = t;
    const double run_us = static_cast<double>(std::max<int64_t>(1, t - j.started_us));
    o.comm_slowdown = run_us / static_cast<double>(std::max<int64_t>(1, o.ideal_us));
    o.contention_slowdown = j.contention_area / run_us;
    o.nodes = j.nodes;
    StopJob(i);
    last_end_ = std::max(last_end_, t);
    ++r_.events;
  }
  return OkStatus();
}

Status Replay::Arrivals(int64_t t) {
  const size_t n = trace_.jobs.size();
  while (next_ < n && trace_.jobs[next_].submit_us == t) {
    ASSIGN_OR_RETURN(sched::Applied a, sched_->Apply(sched::SubmitJob{specs_[next_]}, t));
    const int64_t id = a.job.value;
    changed_ = true;
    if (locality_wait_us_ > 0) relax_.push(t + locality_wait_us_);
    if (id != static_cast<int64_t>(next_) + 1) {
      return InternalError("scheduler ids are not sequential (" + std::to_string(id) + ")");
    }
    ++waiting_replicas_[specs_[next_].gpus_per_replica];
    ++next_;
    ++r_.events;
  }
  return OkStatus();
}

Status Replay::HealthEvents(int64_t t) {
  while (!health_.empty() && std::get<0>(health_.top()) == t) {
    auto [when, kind, node, gpu] = health_.top();
    health_.pop();
    if (kind >= 2) --repairs_pending_;
    const std::string why = kind == 0   ? "GPU failure (simulated)"
                            : kind == 1 ? "node failure (simulated)"
                                        : "repaired (simulated)";
    const bool down = kind <= 1;
    changed_ = true;
    if (kind == 0 || kind == 2) {
      if (down && sched_->cluster_state().GpuHealth(node, gpu) == topo::Health::kUnhealthy) {
        DrawFailure(t);
        continue;  // already down: nothing new breaks
      }
      RETURN_IF_ERROR(
          sched_
              ->Apply(sched::HealthReport{sched::HealthTarget::kGpu, node, gpu,
                                          down ? topo::Health::kUnhealthy : topo::Health::kHealthy,
                                          why},
                      t)
              .status());
    } else {
      if (down && sched_->cluster_state().NodeHealth(node) == topo::Health::kUnhealthy) {
        DrawFailure(t);
        continue;
      }
      RETURN_IF_ERROR(
          sched_
              ->Apply(sched::HealthReport{sched::HealthTarget::kNode, node, 0,
                                          down ? topo::Health::kUnhealthy : topo::Health::kHealthy,
                                          why},
                      t)
              .status());
    }
    if (down) {
      ++r_.failures;
      ++repairs_pending_;
      const double repair = -std::log(Uniform01(rng_)) * options_.repair_mean_s * kUsPerS;
      health_.emplace(t + std::max<int64_t>(1, static_cast<int64_t>(std::min(repair, 1e15))),
                      kind + 2, node, gpu);
      DrawFailure(t);
    }
  }
  return OkStatus();
}

// Jobs stopped by the scheduler (preempted, failed, node failed) and jobs back in the queue,
// from the events since the last look.
Status Replay::ScanEvents() {
  const auto& log = sched_->Events();
  const size_t n = trace_.jobs.size();
  if (logged_ < log.size()) changed_ = true;
  for (; logged_ < log.size(); ++logged_) {
    const job::JobEvent& e = log[logged_];
    const int64_t id = ParseJobId(e.job_id);
    if (id < 1 || id > static_cast<int64_t>(n)) continue;
    const size_t i = static_cast<size_t>(id - 1);
    if (e.from == job::JobState::kRunning && jobs_[i].running &&
        (e.to == job::JobState::kPreempted || e.to == job::JobState::kFailed ||
         e.to == job::JobState::kNodeFail)) {
      StopJob(i);
      if (e.to == job::JobState::kPreempted) {
        ++r_.jobs[i].preemptions;
        ++r_.preemptions;
      } else {
        ++r_.jobs[i].failures;
        ++r_.jobs_interrupted;
        hit_[i] = 1;
      }
    }
    if (e.to == job::JobState::kPending && e.from == job::JobState::kRequeued) {
      ++waiting_replicas_[specs_[i].gpus_per_replica];
    }
  }
  return OkStatus();
}

void Replay::StopJob(size_t i) {
  JobRun& j = jobs_[i];
  j.running = false;
  jobs_[running_.back()].slot = j.slot;
  running_[j.slot] = running_.back();
  running_.pop_back();
  LeaveLinks(i);
}

namespace {

std::string WorkKey(const job::JobSpec& spec, const Workload& w) {
  return sched::PlacementShapeKey(spec) + "|" + w.model + "|" + std::to_string(w.flops_per_gpu) +
         "|" + std::to_string(w.layers);
}

}  // namespace

StatusOr<std::optional<Replay::Reference>> Replay::ReferenceOf(size_t i) const {
  const std::string key = WorkKey(specs_[i], work_[i]);
  auto it = reference_cache_.find(key);
  if (it != reference_cache_.end()) return it->second;
  std::optional<Reference> ref;
  const sched::Verdict v = reference_->Place(*empty_, specs_[i]);
  if (v.fit()) {
    ref.emplace();
    ASSIGN_OR_RETURN(ref->parts,
                     StepPartsOn(*flat_cost_, specs_[i], work_[i], v.placement->ranks, catalog_));
    // Alone on the cluster: its own traffic still meets the tapering of the links it crosses.
    ref->alone = links_->AloneFactor(links_->UsageOf(v.placement->parts));
  }
  reference_cache_.emplace(key, ref);
  return ref;
}

StatusOr<double> Replay::IdealStepMs(size_t i, const StepParts& own) const {
  const std::string key = WorkKey(specs_[i], work_[i]);
  auto it = ideal_cache_.find(key);
  if (it != ideal_cache_.end()) return it->second;
  double ideal = StepMs(own, 1.0, catalog_.dp_backward_overlap);  // the reference never fits
  ASSIGN_OR_RETURN(std::optional<Reference> ref, ReferenceOf(i));
  if (ref) ideal = StepMs(ref->parts, ref->alone, catalog_.dp_backward_overlap);
  ideal_cache_.emplace(key, ideal);
  return ideal;
}

std::optional<double> Replay::Estimator::RunSeconds(JobId job, const sched::Placement& p) const {
  const int64_t id = job.value;
  if (id < 1 || static_cast<size_t>(id) > r_.specs_.size()) return std::nullopt;
  const size_t i = static_cast<size_t>(id - 1);
  StatusOr<StepParts> parts =
      StepPartsOn(*r_.flat_cost_, r_.specs_[i], r_.work_[i], p.ranks, r_.catalog_);
  if (!parts.ok()) return std::nullopt;
  double contention = 1;
  const JobRun& j = r_.jobs_[i];
  const sched::Placement* now = j.running ? r_.sched_->PlacementOf(job) : nullptr;
  if (now != nullptr && now->parts == p.parts) {
    contention = j.contention;  // where it runs: its load is in the links already
  } else if (p.parts.size() > 1 && (parts->dp_net || parts->tp_net || parts->pp_net)) {
    // Elsewhere: its demand on top of the links' load (for a running job that load still holds
    // its own traffic where it runs, which can only make a move look less worthwhile).
    contention = r_.links_->FactorWith(r_.links_->UsageOf(p.parts));
  }
  StatusOr<double> ideal = r_.IdealStepMs(i, *parts);
  if (!ideal.ok() || !(*ideal > 0)) return std::nullopt;
  const double step = StepMs(*parts, contention, r_.catalog_.dp_backward_overlap);
  // A job that starts runs its whole trace duration of work (no checkpoint is modelled).
  return SecondsOfUs(r_.trace_.jobs[i].duration_us) * step / *ideal;
}

std::optional<int64_t> Replay::Estimator::ExpectedEndUs(JobId job, int64_t now_us) const {
  const int64_t id = job.value;
  if (id < 1 || static_cast<size_t>(id) > r_.jobs_.size()) return std::nullopt;
  const JobRun& j = r_.jobs_[static_cast<size_t>(id - 1)];
  if (!j.running || !(j.rate > 0)) return std::nullopt;
  return now_us + static_cast<int64_t>(std::ceil(std::max(0.0, j.remaining_us) / j.rate));
}

std::optional<double> Replay::Estimator::DpHideFactor(JobId job) const {
  const int64_t id = job.value;
  if (id < 1 || static_cast<size_t>(id) > r_.jobs_.size()) return std::nullopt;
  const size_t i = static_cast<size_t>(id - 1);
  const JobRun& j = r_.jobs_[i];
  StepParts step = j.parts;
  if (!j.running) {
    StatusOr<std::optional<Reference>> ref = r_.ReferenceOf(i);
    if (!ref.ok() || !*ref || !(*ref)->parts.dp_net) return std::nullopt;
    step = (*ref)->parts;
  }
  if (!(step.dp_ms > 0)) return std::nullopt;
  return r_.catalog_.dp_backward_overlap * step.backward_ms() / step.dp_ms;
}

void Replay::UpdateRate(JobRun& j) const {
  j.step_ms = StepMs(j.parts, j.contention, catalog_.dp_backward_overlap);
  j.rate = j.step_ms > 0 && j.ideal_ms > 0 ? j.ideal_ms / j.step_ms : 1.0;
}

Status Replay::StartJob(size_t i, int64_t t) {
  const int64_t id = static_cast<int64_t>(i) + 1;
  const sched::Placement* p = sched_->PlacementOf(JobId{id});
  if (p == nullptr) return InternalError("started job " + std::to_string(id) + " holds no GPUs");
  JobRun& j = jobs_[i];
  j.running = true;
  j.slot = running_.size();
  running_.push_back(i);
  ++j.run;
  ++j.version;
  j.started_us = t;
  j.contention_area = 0;
  j.contention = 1;
  j.nodes = static_cast<int>(p->parts.size());
  // A preempted or failed job restarts from the beginning: a declared checkpoint serves only
  // consolidation moves (MoveJob), not requeues.
  j.remaining_us = static_cast<double>(trace_.jobs[i].duration_us);
  j.usage = sched::LinkModel::Usage{};
  if (options_.runtime_model == RuntimeModel::kCommFraction) {
    const double best = reference_->BestPossibleMs(specs_[i]).value_or(p->best_possible_ms);
    j.rate = 1.0 / CommSlowdown(options_.comm_fraction, p->predicted_ms, best);
  } else {
    RETURN_IF_ERROR(PriceOn(i, *p));
    ASSIGN_OR_RETURN(j.ideal_ms, IdealStepMs(i, j.parts));
    UpdateRate(j);
  }
  if (r_.jobs[i].first_start_us == kNoTime) r_.jobs[i].first_start_us = t;
  done_.emplace(t + std::max<int64_t>(1, static_cast<int64_t>(std::ceil(j.remaining_us / j.rate))),
                id, j.run, j.version);
  return OkStatus();
}

// The job's traffic leaves the links it loaded (PriceOn's counterpart).
void Replay::LeaveLinks(size_t i) {
  JobRun& j = jobs_[i];
  if (j.usage.links.empty()) return;
  links_->Remove(j.usage);
  links_changed_ = true;
  networked_.erase(std::find(networked_.begin(), networked_.end(), i));
}

// The job's step parts on `p`, its step without contention, and the links it loads (added to
// the link model) when it communicates across nodes.
Status Replay::PriceOn(size_t i, const sched::Placement& p) {
  JobRun& j = jobs_[i];
  j.usage = sched::LinkModel::Usage{};
  j.nodes = static_cast<int>(p.parts.size());
  ASSIGN_OR_RETURN(j.parts, StepPartsOn(*flat_cost_, specs_[i], work_[i], p.ranks, catalog_));
  j.free_step_ms = StepMs(j.parts, 1.0, catalog_.dp_backward_overlap);
  if (j.nodes > 1 && (j.parts.dp_net || j.parts.tp_net || j.parts.pp_net)) {
    j.usage = links_->UsageOf(p.parts);
    if (!j.usage.links.empty()) {
      links_->Add(j.usage);
      links_changed_ = true;
      networked_.push_back(i);
    }
  }
  return OkStatus();
}

// A consolidation move at t: the job leaves its links, is priced on its new placement, and owes
// the work since its last checkpoint (at the rate it ran) plus its restart (no progress for
// restart_s, at the new rate).
Status Replay::MoveJob(const sched::Scheduler::Move& m, int64_t t) {
  const size_t i = static_cast<size_t>(m.job.value - 1);
  JobRun& j = jobs_[i];
  const sched::Placement* p = sched_->PlacementOf(m.job);
  if (!j.running || p == nullptr) {
    return InternalError("moved job " + std::to_string(m.job.value) + " is not running");
  }
  const double lost_work_us = m.lost_s * kUsPerS * j.rate;
  LeaveLinks(i);
  j.contention = 1;
  RETURN_IF_ERROR(PriceOn(i, *p));
  if (!j.usage.links.empty()) j.contention = links_->Factor(j.usage);
  UpdateRate(j);
  j.remaining_us += lost_work_us + m.restart_s * kUsPerS * j.rate;
  ++j.version;
  done_.emplace(t + std::max<int64_t>(
                        1, static_cast<int64_t>(std::ceil(std::max(0.0, j.remaining_us) / j.rate))),
                m.job.value, j.run, j.version);
  ++r_.jobs[i].moves;
  ++r_.moves;
  return OkStatus();
}

// After the running set changed: every job on a shared link gets its new rate and, when it
// moved, a new completion (the old one goes stale by its version).
void Replay::Rerate(int64_t t) {
  if (!links_changed_) return;
  links_changed_ = false;
  for (size_t i : networked_) {
    JobRun& j = jobs_[i];
    const double c = links_->Factor(j.usage);
    if (c == j.contention) continue;
    j.contention = c;
    UpdateRate(j);
    ++j.version;
    done_.emplace(t + std::max<int64_t>(1, static_cast<int64_t>(
                                               std::ceil(std::max(0.0, j.remaining_us) / j.rate))),
                  static_cast<int64_t>(i) + 1, j.run, j.version);
  }
}

Status Replay::Pass(int64_t t) {
  // A pass over an unchanged queue and cluster starts nothing new (a re-dated completion that
  // turned out stale changes neither), so it is skipped.
  // With consolidation on, a pass may move running jobs even when nobody waits.
  if ((waiting_replicas_.empty() && !consolidate_) || !changed_) return OkStatus();
  ASSIGN_OR_RETURN(sched::Applied pass, sched_->Apply(sched::SchedulePass{}, t));
  const std::vector<JobId>& started = pass.started;
  ++r_.passes;
  RETURN_IF_ERROR(ScanEvents());  // preemptions inside the pass
  for (JobId id : started) {
    const size_t i = static_cast<size_t>(id.value - 1);
    auto it = waiting_replicas_.find(specs_[i].gpus_per_replica);
    if (it != waiting_replicas_.end() && --it->second == 0) waiting_replicas_.erase(it);
    RETURN_IF_ERROR(StartJob(i, t));
  }
  for (const auto& moves = sched_->Moves(); moves_seen_ < moves.size(); ++moves_seen_) {
    RETURN_IF_ERROR(MoveJob(moves[moves_seen_], t));
  }
  // A job waiting for a planned placement is planned again at its plan's start: a pass then.
  if (std::optional<int64_t> wake = sched_->NextPlannedStartUs();
      wake && *wake > t && *wake != wait_wake_us_) {
    wait_wake_us_ = *wake;
    relax_.push(*wake);
  }
  changed_ = false;
  return OkStatus();
}

void Replay::Sample(int64_t t) {
  const sched::ClusterState& st = sched_->cluster_state();
  frag_now_ = ExpectedUnusableGpus(st, waiting_replicas_);
  busy_ = static_cast<int>(st.HeldGpus());
  alloc_milli_ = st.AllocatedMilli();
  if (next_ >= trace_.jobs.size() && !final_taken_) {
    final_taken_ = true;
    r_.final_gpu_allocation_milli =
        static_cast<double>(alloc_milli_) / (1000.0 * std::max(1, r_.total_gpus));
  }
  if (busy_steps_.empty() || busy_steps_.back().second != busy_) busy_steps_.emplace_back(t, busy_);
}

StatusOr<SimResult> Replay::Run(const std::string& policy) {
  RETURN_IF_ERROR(Init(policy));
  r_.policy = policy;
  r_.seed = options_.seed;
  const size_t n = trace_.jobs.size();
  // Runs while work is left; once every job has arrived and nothing runs, only outstanding
  // repairs (which may let a waiting job fit) keep it going, and no new failure is drawn.
  // A job held for locality is relaxed at submission + wait: a pass runs then too.
  while (next_ < n || !done_.empty() || (repairs_pending_ > 0 && !waiting_replicas_.empty()) ||
         (!relax_.empty() && !waiting_replicas_.empty())) {
    int64_t t = next_ < n ? trace_.jobs[next_].submit_us : INT64_MAX;
    if (!done_.empty()) t = std::min(t, std::get<0>(done_.top()));
    if (!health_.empty()) t = std::min(t, std::get<0>(health_.top()));
    if (!relax_.empty()) t = std::min(t, relax_.top());
    while (!relax_.empty() && relax_.top() <= t) {
      relax_.pop();
      changed_ = true;
    }
    Advance(t);
    RETURN_IF_ERROR(Completions(t));
    RETURN_IF_ERROR(Arrivals(t));
    RETURN_IF_ERROR(HealthEvents(t));
    RETURN_IF_ERROR(ScanEvents());
    RETURN_IF_ERROR(sched_->Apply(sched::Tick{}, t).status());
    RETURN_IF_ERROR(ScanEvents());
    RETURN_IF_ERROR(Pass(t));
    Rerate(t);
    Sample(t);
  }
  Finish(r_);
  RETURN_IF_ERROR(sched_->CheckInvariants());
  const sched::Capacity cap = sched_->cluster_state().ClusterCapacity();
  const bool none_held = sched_->cluster_state().AllocationCount() == 0;
  r_.all_free_at_end =
      r_.unfinished == 0 ? none_held && cap.free_gpus == cap.healthy_gpus : none_held;
  return std::move(r_);
}

double Replay::WindowUtilization(int64_t start, int total_gpus) const {
  const int64_t end = trace_.jobs.empty() ? start : trace_.jobs.back().submit_us;
  if (end <= start || total_gpus <= 0) return 0;
  double area = 0;
  for (size_t s = 0; s < busy_steps_.size(); ++s) {
    const int64_t from = std::max(start, busy_steps_[s].first);
    const int64_t to = std::min(end, s + 1 < busy_steps_.size() ? busy_steps_[s + 1].first : end);
    if (to > from)
      area += static_cast<double>(busy_steps_[s].second) * static_cast<double>(to - from);
  }
  return area / (static_cast<double>(total_gpus) * static_cast<double>(end - start));
}

void Replay::Finish(SimResult& r) {
  const size_t n = trace_.jobs.size();
  const int64_t start = n > 0 ? trace_.jobs.front().submit_us : 0;
  r.makespan_us = std::max<int64_t>(0, last_end_ - start);
  const double denom = static_cast<double>(std::max(1, r.total_gpus)) *
                       static_cast<double>(std::max<int64_t>(1, r.makespan_us));
  // Only the area up to the last completion counts (jobs that never ran add none after it).
  r.gpu_utilization = r.makespan_us > 0 ? std::min(1.0, busy_area_ / denom) : 0;
  r.mean_fragmentation = r.makespan_us > 0 ? frag_area_ / denom : 0;
  r.gpu_allocation_milli = r.makespan_us > 0 ? std::min(1.0, alloc_area_ / (1000.0 * denom)) : 0;
  // Utilisation series: the busy step function averaged over equal bins of the makespan.
  const int bins = options_.utilization_bins;
  r.bin_us = std::max<int64_t>(1, (r.makespan_us + bins - 1) / bins);
  r.utilization_series.assign(static_cast<size_t>(bins), 0.0);
  for (size_t s = 0; s < busy_steps_.size(); ++s) {
    const int64_t from = busy_steps_[s].first - start;
    const int64_t to =
        s + 1 < busy_steps_.size() ? busy_steps_[s + 1].first - start : r.makespan_us;
    if (busy_steps_[s].second == 0 || to <= from) continue;
    for (int64_t b = from / r.bin_us; b < bins && b * r.bin_us < to; ++b) {
      const int64_t lo = std::max(from, b * r.bin_us);
      const int64_t hi = std::min(to, (b + 1) * r.bin_us);
      if (hi > lo) {
        r.utilization_series[static_cast<size_t>(b)] +=
            static_cast<double>(busy_steps_[s].second) * static_cast<double>(hi - lo);
      }
    }
  }
  r.window_utilization = WindowUtilization(start, r.total_gpus);
  for (double& v : r.utilization_series) {
    v /= static_cast<double>(std::max(1, r.total_gpus)) * static_cast<double>(r.bin_us);
  }
  for (size_t i = 0; i < n; ++i) {
    r.unfinished += r.jobs[i].end_us == kNoTime ? 1 : 0;
    r.failures_survived += hit_[i] && r.jobs[i].end_us != kNoTime ? 1 : 0;
  }
}

}  // namespace toposched::sim::detail
