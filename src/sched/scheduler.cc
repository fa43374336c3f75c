#include "sched/scheduler.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

#include "sched/policy.h"
#include "sched/scheduler_pass.h"

namespace toposched::sched {

namespace internal {

std::string JobName(int64_t id) { return "job-" + std::to_string(id); }

std::string Seconds(int64_t us, bool epoch) {
  if (us == kNever) return "never";
  char buf[48];
  if (epoch) {
    const std::time_t t = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    if (gmtime_r(&t, &tm) != nullptr && std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%06" PRId64 "s", us / 1000000, us % 1000000);
  return buf;
}

Status AllocatePlacement(ClusterState& state, int64_t id, const Placement& p) {
  if (p.gpu_milli > 0) {
    if (p.parts.size() != 1 || p.parts[0].gpus.count() != 1) {
      return InternalError("fractional placement of allocation " + std::to_string(id) +
                           " does not hold exactly one GPU");
    }
    return state.AllocateShared(id, p.parts[0].node, p.parts[0].gpus.lowest(), p.gpu_milli);
  }
  return state.Allocate(id, p.parts);
}

}  // namespace internal

namespace {

using internal::AllocatePlacement;
using internal::JobName;
using internal::kNever;
using internal::Seconds;
using job::JobState;

// A span of time for explanations, rounded: "~45 s", "~12 min", "~3.1 h".
std::string Approx(double seconds) {
  char buf[48];
  if (seconds < 90) {
    std::snprintf(buf, sizeof buf, "~%.0f s", seconds);
  } else if (seconds < 5400) {
    std::snprintf(buf, sizeof buf, "~%.0f min", seconds / 60);
  } else {
    std::snprintf(buf, sizeof buf, "~%.1f h", seconds / 3600);
  }
  return buf;
}

int GpusOf(const std::vector<NodeGpus>& parts) {
  int n = 0;
  for (const NodeGpus& p : parts) n += p.gpus.count();
  return n;
}

}  // namespace

Status SchedulerOptions::Validate() const {
  for (const auto* weights : {&user_weights, &queue_weights}) {
    for (const auto& [name, w] : *weights) {
      if (!(w > 0) || w > 1e12) {
        return InvalidArgumentError("fair-share weight of \"" + name + "\" must be > 0");
      }
    }
  }
  for (const auto* limits : {&user_gpu_limits, &queue_gpu_limits}) {
    for (const auto& [name, l] : *limits) {
      if (l < 0) return InvalidArgumentError("GPU limit of \"" + name + "\" must be >= 0");
    }
  }
  if (max_preempt_candidates < 1 || max_preempt_candidates > 64 || max_preempt_combinations < 1 ||
      max_preempt_combinations > 100000) {
    return InvalidArgumentError("preemption bounds out of range");
  }
  if (kill_grace_us < 0) return InvalidArgumentError("kill_grace_us must be >= 0");
  if (fair_share_half_life_s < 0) {
    return InvalidArgumentError("fair_share_half_life_s must be >= 0");
  }
  if (locality_wait_us < -1) {
    return InvalidArgumentError("locality_wait_us must be >= 0, or -1 (off)");
  }
  if (wait_plan_attempts < 1 || wait_plan_attempts > 1024) {
    return InvalidArgumentError("wait_plan_attempts must be in [1, 1024]");
  }
  if (max_moves_per_job < 0 || max_moves_per_job > 1000 || max_moves_per_hour < 0 ||
      max_moves_per_hour > 100000) {
    return InvalidArgumentError(
        "max_moves_per_job must be in [0, 1000] and max_moves_per_hour in [0, 100000]");
  }
  return OkStatus();
}

Scheduler::Scheduler(const GangPlacer& placer, Options options, ClusterState state)
    : base_placer_(&placer),
      placer_(&placer),
      options_(std::move(options)),
      state_(std::move(state)) {}

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const GangPlacer& placer, Options options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(ClusterState state, ClusterState::Create(placer.cluster()));
  return std::unique_ptr<Scheduler>(new Scheduler(placer, std::move(options), std::move(state)));
}

int Scheduler::NameId(const std::string& name) {
  return names_.emplace(name, static_cast<int>(names_.size())).first->second;
}

int Scheduler::ShapeId(const job::JobSpec& spec) {
  auto [it, added] =
      shape_ids_.emplace(PlacementShapeKey(spec), static_cast<int>(shape_ids_.size()));
  return it->second;
}

Scheduler::Job* Scheduler::Find(int64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}
const Scheduler::Job* Scheduler::Find(int64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void Scheduler::Sync(Job& j) {
  const auto& ev = j.record.events();
  for (; j.logged < ev.size(); ++j.logged) log_.push_back(ev[j.logged]);
  const JobState s = j.record.state();
  if (job::HoldsResources(s)) {
    running_.emplace(j.id, &j);
  } else {
    running_.erase(j.id);
  }
  if (s == JobState::kPending && !j.listed) {
    pending_list_.push_back(&j);
    j.listed = true;
  }
  const bool active = s == JobState::kPending || job::HoldsResources(s);
  if (active != j.active) {
    user_count_.resize(names_.size(), 0);  // names_ only grows
    queue_count_.resize(names_.size(), 0);
    const int d = active ? 1 : -1;
    user_count_[j.user_id] += d;
    queue_count_[j.queue_id] += d;
    j.active = active;
  }
}

std::vector<std::pair<int64_t, Scheduler::Job*>> Scheduler::Running() const {
  return {running_.begin(), running_.end()};
}

std::optional<LinkModel> Scheduler::RunningLinks() const {
  if (!(placer_->plugins().weight(ScoreTerm::kContention) > 0)) return std::nullopt;
  std::optional<LinkModel> links(std::in_place, placer_->cluster());
  for (const auto& [id, j] : running_) {
    if (j->placement) AddToLinks(*links, *j->placement, DpHideFactor(id));
  }
  return links;
}

double Scheduler::DpHideFactor(int64_t id) const {
  if (estimator_ == nullptr) return 0.0;
  return estimator_->DpHideFactor(id).value_or(0.0);
}

// `us` + `limit_s` seconds; kNever where that would overflow.
static int64_t PlusLimit(int64_t us, int64_t limit_s) {
  if (limit_s > (kNever - us) / 1000000) return kNever;
  return us + limit_s * 1000000;
}

int64_t Scheduler::EndUs(const Job& j) {
  if (auto kill = j.record.kill_deadline_us()) return *kill;
  if (j.spec.time_limit_s <= 0) return kNever;
  return PlusLimit(j.start_us, j.spec.time_limit_s);
}

int64_t Scheduler::ReservationEndUs(const Job& j, int64_t now_us) const {
  const int64_t end = EndUs(j);
  // A kill deadline is never kNever, so `end` already answers for it.
  if (end != kNever || !options_.backfill_by_estimates || estimator_ == nullptr ||
      j.spec.time_limit_s > 0) {
    return end;
  }
  const std::optional<int64_t> e = estimator_->ExpectedEndUs(j.id, now_us);
  return e ? std::max(*e, now_us) : kNever;
}

std::optional<int64_t> Scheduler::BackfillEndUs(const Job& j, const Placement& p, int64_t now_us,
                                                bool estimate_ok, bool* estimated) const {
  *estimated = false;
  if (j.spec.time_limit_s > 0) {
    const int64_t end = PlusLimit(now_us, j.spec.time_limit_s);
    if (end == kNever) return std::nullopt;
    return end;
  }
  if (!estimate_ok || !options_.backfill_by_estimates || estimator_ == nullptr) {
    return std::nullopt;
  }
  const std::optional<double> run = estimator_->RunSeconds(j.id, p);
  if (!run || !std::isfinite(*run) || *run < 0) return std::nullopt;
  const double us = std::ceil(*run * 1e6);
  if (!(us < 9e18)) return std::nullopt;  // below 2^63: the cast is defined
  const int64_t d = static_cast<int64_t>(us);
  if (d > kNever - now_us) return std::nullopt;
  *estimated = true;
  return now_us + d;
}

StatusOr<int64_t> Scheduler::Submit(job::JobSpec spec, int64_t now_us) {
  return SubmitAs(std::move(spec), now_us, "");
}

StatusOr<int64_t> Scheduler::SubmitAs(job::JobSpec spec, int64_t now_us,
                                      const std::string& pod_group) {
  RETURN_IF_ERROR(spec.Normalize());
  Accrue(now_us);
  const int64_t id = next_id_++;
  Job j{id,
        std::move(spec),
        job::JobRecord(JobName(id), now_us),
        std::nullopt,
        0,
        nullptr,
        0,
        0,
        0,
        0,
        false,
        false,
        std::nullopt,
        0,
        -1,
        -1,
        pod_group};
  j.shape_id = ShapeId(j.spec);
  if (options_.locality_wait_us >= 0 && j.spec.constraints.job.mode == job::ConstraintMode::kNone &&
      !j.spec.elastic && !j.spec.Fractional()) {
    auto [at, fresh] = consolidated_.try_emplace(j.spec.total_gpus);
    if (fresh) at->second = ConsolidatedLevel(placer_->cluster(), j.spec.total_gpus);
    const std::string& level = at->second;
    if (!level.empty()) {
      j.local = j.spec;
      j.local->constraints.job = {job::ConstraintMode::kRequired, level, {}};
      j.local_shape_id = ShapeId(*j.local);
    }
  }
  j.user_id = NameId(j.spec.user);
  j.queue_id = NameId(j.spec.queue);
  j.pending_reason = Words("submitted; not yet considered by a scheduling pass");
  RETURN_IF_ERROR(
      j.record.Note(now_us, "submitted \"" + j.spec.name + "\" (" +
                                (pod_group.empty() ? "" : "pod group " + pod_group + ", ") +
                                "user " + j.spec.user + ", queue " + j.spec.queue + ", priority " +
                                std::to_string(j.spec.priority) + ", " +
                                std::to_string(j.spec.total_gpus) + " GPUs, limit " +
                                (j.spec.time_limit_s > 0 ? job::FormatDuration(j.spec.time_limit_s)
                                                         : std::string("none")) +
                                ")"));
  auto [it, inserted] = jobs_.emplace(id, std::move(j));
  (void)inserted;
  Sync(it->second);
  return id;
}

Status Scheduler::ReleaseIfStopped(Job& j) {
  if (job::HoldsResources(j.record.state()) || !j.placement) return OkStatus();
  j.placement.reset();
  return state_.Release(j.id);
}

Status Scheduler::Cancel(int64_t id, int64_t now_us) {
  Job* j = Find(id);
  if (j == nullptr) return NotFoundError("no job " + JobName(id));
  Accrue(now_us);
  const JobState s = j->record.state();
  Status st = OkStatus();
  if (s == JobState::kPending || s == JobState::kRequeued) {
    st = j->record.Transition(now_us, JobState::kCancelled, "cancelled by user");
  } else if (s == JobState::kRunning) {
    st = j->record.Terminate(now_us, options_.kill_grace_us, JobState::kCancelled,
                             "cancelled by user");
  } else {
    st = FailedPreconditionError(JobName(id) + ": cannot cancel a job in state " +
                                 job::JobStateName(s));
  }
  Sync(*j);
  RETURN_IF_ERROR(st);
  return ReleaseIfStopped(*j);
}

Status Scheduler::Complete(int64_t id, int64_t now_us, const std::string& failure, int drain_node,
                           const std::string& drain_reason) {
  Job* j = Find(id);
  if (j == nullptr) return NotFoundError("no job " + JobName(id));
  if (j->record.state() != JobState::kRunning && j->record.state() != JobState::kCompleting) {
    return FailedPreconditionError(JobName(id) + ": cannot complete a job in state " +
                                   job::JobStateName(j->record.state()));
  }
  Accrue(now_us);
  if (drain_node >= 0) RETURN_IF_ERROR(SetNodeDrained(drain_node, true, now_us, drain_reason));
  Status st = OkStatus();
  if (j->record.state() == JobState::kRunning && !failure.empty()) {
    st = j->record.Transition(now_us, JobState::kFailed, failure);
  } else if (j->record.state() == JobState::kRunning) {
    st = j->record.Transition(now_us, JobState::kCompleting, "job finished: running epilog");
    if (st.ok()) st = j->record.Transition(now_us, JobState::kCompleted, "epilog done");
  } else if (j->record.state() == JobState::kCompleting) {
    st = j->record.ProcessesExited(now_us);
  } else {
    st = FailedPreconditionError(JobName(id) + ": cannot complete a job in state " +
                                 job::JobStateName(j->record.state()));
  }
  Sync(*j);
  RETURN_IF_ERROR(st);
  return ReleaseIfStopped(*j);
}

Status Scheduler::ReportDegraded(int64_t id, const std::string& reason, double after_ms,
                                 int64_t now_us, int drain_node, const std::string& drain_reason) {
  Job* j = Find(id);
  if (j == nullptr) return NotFoundError("no job " + JobName(id));
  if (j->record.state() != JobState::kRunning || !j->placement) {
    return FailedPreconditionError(JobName(id) + ": only a running job can be reported degraded (" +
                                   job::JobStateName(j->record.state()) + ")");
  }
  if (reason.empty())
    return InvalidArgumentError(JobName(id) + ": a degraded report needs a reason");
  if (!std::isfinite(after_ms) || after_ms < 0) {
    return InvalidArgumentError(JobName(id) + ": after_ms must be finite and >= 0");
  }
  Accrue(now_us);
  if (drain_node >= 0) RETURN_IF_ERROR(SetNodeDrained(drain_node, true, now_us, drain_reason));
  const double before = j->placement->predicted_ms;
  return HandleDegraded(*j, reason, before, after_ms > 0 ? after_ms : before, now_us);
}

Status Scheduler::Tick(int64_t now_us) {
  Accrue(now_us);
  // Only a job past its limit or terminating can change here: those are collected (in id order,
  // as before) without copying the whole running set, which a pass walks on every input.
  std::vector<Job*> due;
  for (const auto& [id, jp] : running_) {
    if (jp->record.state() != JobState::kRunning ||
        (jp->spec.time_limit_s > 0 && now_us >= EndUs(*jp))) {
      due.push_back(jp);
    }
  }
  for (Job* j_ptr : due) {
    Job& j = *j_ptr;
    if (j.record.state() == JobState::kRunning && j.spec.time_limit_s > 0 && now_us >= EndUs(j)) {
      Status st = j.record.Timeout(now_us, options_.kill_grace_us);
      Sync(j);
      RETURN_IF_ERROR(st);
    }
    if (j.record.AdvanceTo(now_us)) Sync(j);
    RETURN_IF_ERROR(ReleaseIfStopped(j));
  }
  return OkStatus();
}

Scheduler::Usage Scheduler::CurrentUsage() const {
  Usage u;
  for (const auto& [id, j_ptr] : running_) {
    const Job& j = *j_ptr;
    if (!j.placement) continue;
    const int g = GpusOf(j.placement->parts);
    u.user_gpus[j.spec.user] += g;
    u.queue_gpus[j.spec.queue] += g;
  }
  return u;
}

namespace {
double WeightOf(const std::map<std::string, double>& w, const std::string& k) {
  auto it = w.find(k);
  return it == w.end() ? 1.0 : it->second;
}
int UsedBy(const std::map<std::string, int>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}
}  // namespace

Scheduler::Shares Scheduler::ActiveWeights() const {
  // Weight shares are over the users/queues with a PENDING or RUNNING job.
  Shares sh;
  auto count = [](const std::vector<int>& v, int i) {
    return i < static_cast<int>(v.size()) ? v[i] : 0;
  };
  for (const auto& [name, nid] : names_) {
    const bool user = count(user_count_, nid) > 0, queue = count(queue_count_, nid) > 0;
    if (user) sh.user_weight_sum += WeightOf(options_.user_weights, name);
    if (queue) sh.queue_weight_sum += WeightOf(options_.queue_weights, name);
  }
  return sh;
}

double Scheduler::Penalty(const Job& j, const Usage& u, const Shares& sh) const {
  if (options_.fair_share_half_life_s > 0) {
    double users = 0, queues = 0;
    for (const auto& [k, v] : user_usage_) users += v;
    for (const auto& [k, v] : queue_usage_) queues += v;
    auto frac = [](const std::map<std::string, double>& m, const std::string& k, double sum) {
      auto it = m.find(k);
      return it == m.end() || sum <= 0 ? 0.0 : it->second / sum;
    };
    const double us =
        WeightOf(options_.user_weights, j.spec.user) / std::max(sh.user_weight_sum, 1e-12);
    const double qs =
        WeightOf(options_.queue_weights, j.spec.queue) / std::max(sh.queue_weight_sum, 1e-12);
    return frac(user_usage_, j.spec.user, users) / us +
           frac(queue_usage_, j.spec.queue, queues) / qs;
  }
  const double total = std::max(1, state_.ClusterCapacity().total_gpus);
  const double user_share =
      WeightOf(options_.user_weights, j.spec.user) / std::max(sh.user_weight_sum, 1e-12);
  const double queue_share =
      WeightOf(options_.queue_weights, j.spec.queue) / std::max(sh.queue_weight_sum, 1e-12);
  return UsedBy(u.user_gpus, j.spec.user) / total / user_share +
         UsedBy(u.queue_gpus, j.spec.queue) / total / queue_share;
}

std::string Scheduler::LimitReason(const Job& j, const Usage& u) const {
  auto check = [&](const std::map<std::string, int>& limits, const std::map<std::string, int>& use,
                   const std::string& what, const std::string& key) -> std::string {
    auto it = limits.find(key);
    if (it == limits.end()) return "";
    auto ut = use.find(key);
    const int held = ut == use.end() ? 0 : ut->second;
    if (held + j.spec.total_gpus <= it->second) return "";
    return what + " GPU limit: " + what + " \"" + key + "\" holds " + std::to_string(held) +
           " GPUs, limit " + std::to_string(it->second) + ", job needs " +
           std::to_string(j.spec.total_gpus);
  };
  std::string r = check(options_.user_gpu_limits, u.user_gpus, "user", j.spec.user);
  if (r.empty()) r = check(options_.queue_gpu_limits, u.queue_gpus, "queue", j.spec.queue);
  return r;
}

Status Scheduler::Start(Job& j, Placement p, int64_t now_us, const std::string& reason) {
  RETURN_IF_ERROR(AllocatePlacement(state_, j.id, p));
  Status st = j.record.Transition(now_us, JobState::kRunning, reason);
  Sync(j);
  if (!st.ok()) {
    (void)state_.Release(j.id);
    return st;
  }
  p.decision_us = now_us;
  j.placement = std::move(p);
  j.start_us = now_us;
  j.pending_reason.reset();
  j.wait_start_us = -1;
  j.wait_finish_by_us = -1;
  j.checkpoint_origin_us = now_us;
  j.considered_checkpoint = -1;
  j.last_move = -1;  // its moves count over its whole life (max_moves_per_job)
  return OkStatus();
}

const job::JobSpec& Scheduler::PlacementSpec(const Job& j, int64_t now_us) const {
  const bool held = j.local && now_us - j.record.submit_time_us() < options_.locality_wait_us;
  return held ? *j.local : j.spec;
}

Scheduler::Reservation Scheduler::MakeReservation(const Job& j, const job::JobSpec& spec,
                                                  int64_t now_us) const {
  std::vector<std::pair<int64_t, const Job*>> running;  // (end for the reservation, job)
  for (const auto& [id, o_ptr] : Running()) {
    const Job& o = *o_ptr;
    if (o.placement) running.emplace_back(ReservationEndUs(o, now_us), &o);
  }
  std::stable_sort(running.begin(), running.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ClusterState trial = state_;
  Reservation r{j.id, kNever, {}};
  bool estimated = false;
  for (const auto& [end, o] : running) {
    (void)trial.Release(o->id);
    if (end == kNever) continue;  // only reached when released as part of "never"
    estimated = estimated || end != EndUs(*o);
    // Too few free GPUs cluster-wide: no placement yet (saves a placer call per release).
    if (!spec.Fractional() && trial.ClusterCapacity().free_gpus < spec.total_gpus) continue;
    Verdict v = placer_->Place(trial, spec);
    if (v.fit()) {
      r.start_us = std::max(end, now_us);
      r.parts = v.placement->parts;
      r.estimated = estimated;
      return r;
    }
  }
  // Never by time limits: reserve the GPUs it would take with every running job gone.
  Verdict v = placer_->Place(trial, spec);
  if (v.fit()) r.parts = v.placement->parts;
  return r;
}

std::optional<Scheduler::WaitPlan> Scheduler::PlanWait(const Job& j, const job::JobSpec& spec,
                                                       const Placement& now_p,
                                                       const ClusterState& base,
                                                       int64_t now_us) const {
  if (!options_.wait_or_spread || estimator_ == nullptr || j.spec.elastic || spec.Fractional()) {
    return std::nullopt;
  }
  const int64_t limit = j.wait_finish_by_us >= 0 ? j.wait_finish_by_us : kNever;
  if (now_us >= limit) return std::nullopt;                                 // waited it out
  if (!(now_p.predicted_ms > now_p.best_possible_ms)) return std::nullopt;  // already best
  const std::optional<double> run_now = estimator_->RunSeconds(j.id, now_p);
  if (!run_now) return std::nullopt;
  WaitPlan best;
  best.finish_now_us = static_cast<double>(now_us) + *run_now * 1e6;
  best.finish_us = best.finish_now_us;            // the bound: no later start can win
  std::vector<std::pair<int64_t, int64_t>> ends;  // (expected end, job id)
  for (const auto& [id, o] : running_) {
    if (!o->placement) continue;
    if (std::optional<int64_t> e = estimator_->ExpectedEndUs(id, now_us)) {
      ends.emplace_back(std::max(*e, now_us), id);
    }
  }
  std::sort(ends.begin(), ends.end());
  // Release groups: by time times[g], the jobs ends[0, upto[g]) have ended.
  std::vector<int64_t> times;
  std::vector<size_t> upto;
  for (size_t k = 0; k < ends.size(); ++k) {
    if (k + 1 == ends.size() || ends[k + 1].first != ends[k].first) {
      times.push_back(ends[k].first);
      upto.push_back(k + 1);
    }
  }
  int attempts = 0;
  // Places the job on `trial` (released through group g); keeps the best finish. True when the
  // placement there is the best possible (no later group can give a faster one).
  auto evaluate = [&](const ClusterState& trial, size_t g) {
    ++attempts;
    Verdict v = placer_->Place(trial, spec);
    if (!v.fit()) return false;
    const bool at_best = !(v.placement->predicted_ms > v.placement->best_possible_ms);
    if (!(v.placement->predicted_ms < now_p.predicted_ms)) return at_best;
    const std::optional<double> run = estimator_->RunSeconds(j.id, *v.placement);
    if (!run) return at_best;
    const double finish = static_cast<double>(times[g]) + *run * 1e6;
    if (!best.alternative || finish < best.finish_us) {
      best.alternative = true;
      best.start_us = times[g];
      best.finish_us = finish;
      best.placement = std::move(*v.placement);
    }
    return at_best;
  };
  auto beyond = [&](size_t g) {  // a start at group g cannot win any more
    const double bound = std::min(
        best.alternative ? std::min(best.finish_us, best.finish_now_us) : best.finish_now_us,
        static_cast<double>(limit));
    return static_cast<double>(times[g]) >= bound;
  };
  // Groups 0, 1, 3, 7, ... until the placement is the best possible; then a binary search
  // between the last two for the earliest group where it is. One trial state moves between
  // groups by releasing running jobs and taking them back (no copies).
  ClusterState trial = base;
  size_t released = 0;  // ends[0, released) are released in `trial`
  auto move_to = [&](size_t g) {
    for (; released < upto[g]; ++released) (void)trial.Release(ends[released].second);
    while (released > upto[g]) {
      --released;
      const Job* o = Find(ends[released].second);
      if (o != nullptr && o->placement) (void)AllocatePlacement(trial, o->id, *o->placement);
    }
  };
  std::optional<size_t> below;  // the last group tried whose placement was not the best
  for (size_t g = 0; g < times.size() && attempts < options_.wait_plan_attempts; g = 2 * g + 1) {
    if (beyond(g)) break;
    move_to(g);
    if (!evaluate(trial, g)) {
      below = g;
      continue;
    }
    if (!below) break;
    size_t lo = *below, hi = g;  // hi reaches the best placement, lo does not
    while (hi - lo > 1 && attempts < options_.wait_plan_attempts) {
      const size_t mid = lo + (hi - lo) / 2;
      if (beyond(mid)) break;
      move_to(mid);
      (evaluate(trial, mid) ? hi : lo) = mid;
    }
    break;
  }
  best.wait = best.alternative && best.finish_us < best.finish_now_us &&
              best.finish_us <= static_cast<double>(limit);
  if (!best.alternative) best.finish_us = best.finish_now_us;
  return best;
}

std::string Scheduler::WaitWords(const Job& j, const WaitPlan& plan, const Placement& now_p,
                                 int64_t now_us) const {
  char ms[96];
  std::snprintf(ms, sizeof ms, "%.3f ms there against %.3f ms now", plan.placement.predicted_ms,
                now_p.predicted_ms);
  return "waiting for " + plan.placement.domain + " (free in " +
         Approx(static_cast<double>(plan.start_us - now_us) / 1e6) + ", at " +
         Seconds(plan.start_us, options_.epoch_clock) + "): finishes " +
         Approx((plan.finish_now_us - plan.finish_us) / 1e6) +
         " earlier than starting now across " + now_p.domain + " (" + ms +
         "; waits only while it can still finish by " +
         Seconds(j.wait_finish_by_us, options_.epoch_clock) + ")";
}

std::string Scheduler::SpreadNote(const WaitPlan& plan, const Placement& now_p) const {
  const std::string finish =
      Seconds(static_cast<int64_t>(plan.finish_now_us), options_.epoch_clock);
  if (!plan.alternative) {
    return "; across " + now_p.domain + " now it finishes at ~" + finish +
           ", before any faster placement is expected free";
  }
  return "; across " + now_p.domain + " now it finishes at ~" + finish + ", " +
         Approx((plan.finish_us - plan.finish_now_us) / 1e6) + " before waiting for " +
         plan.placement.domain + " (free at " + Seconds(plan.start_us, options_.epoch_clock) +
         ") would";
}

std::optional<int64_t> Scheduler::NextPlannedStartUs() const {
  std::optional<int64_t> out;
  for (const Job* j : pending_list_) {
    if (j->record.state() != JobState::kPending || j->wait_start_us < 0) continue;
    if (!out || j->wait_start_us < *out) out = j->wait_start_us;
  }
  return out;
}

StatusOr<bool> Scheduler::TryPreempt(Job& j, int64_t now_us) {
  struct Cand {
    const Job* job;
    int64_t cost;
    int gpus;
  };
  std::vector<Cand> cands;
  for (const auto& [id, o_ptr] : Running()) {
    const Job& o = *o_ptr;
    if (o.record.state() != JobState::kRunning || o.spec.priority >= j.spec.priority) continue;
    const int g = GpusOf(o.placement->parts);
    cands.push_back({&o, int64_t{g} * (1 + std::max(o.spec.priority, 0)), g});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.job->id < b.job->id;
  });
  if (static_cast<int>(cands.size()) > options_.max_preempt_candidates) {
    cands.resize(options_.max_preempt_candidates);
  }
  if (cands.empty()) return false;
  const int free_now = state_.ClusterCapacity().free_gpus;

  // Best-first enumeration of subsets in non-decreasing total cost: from a subset whose largest
  // index is i, the successors are (add i+1) and (replace i by i+1).
  struct Node {
    int64_t cost;
    std::vector<int> idx;
    bool operator>(const Node& o) const {
      return cost != o.cost ? cost > o.cost : idx.size() > o.idx.size();
    }
  };
  std::priority_queue<Node, std::vector<Node>, std::greater<Node>> heap;
  heap.push({cands[0].cost, {0}});
  const int n = static_cast<int>(cands.size());
  int attempts = 0, popped = 0;
  std::optional<Node> best;
  std::optional<Placement> best_placement;
  int best_free_nodes = -1;
  while (!heap.empty() && attempts < options_.max_preempt_combinations && popped < 100000) {
    Node cur = heap.top();
    heap.pop();
    ++popped;
    if (best && cur.cost > best->cost) break;
    const int last = cur.idx.back();
    if (last + 1 < n) {
      Node add = cur;
      add.idx.push_back(last + 1);
      add.cost += cands[last + 1].cost;
      heap.push(add);
      Node rep = cur;
      rep.idx.back() = last + 1;
      rep.cost += cands[last + 1].cost - cands[last].cost;
      heap.push(rep);
    }
    int freed = 0;
    for (int i : cur.idx) freed += cands[i].gpus;
    // Cannot fit: no placement attempt. (A fractional job may fit on a shared GPU's room,
    // which free_gpus does not count.)
    if (!j.spec.Fractional() && free_now + freed < j.spec.total_gpus) continue;
    ++attempts;
    ClusterState trial = state_;
    for (int i : cur.idx) (void)trial.Release(cands[i].job->id);
    Verdict v = placer_->Place(trial, j.spec);
    if (!v.fit()) continue;
    const int free_nodes = trial.ClusterCapacity().fully_free_nodes;
    if (!best || free_nodes > best_free_nodes ||
        (free_nodes == best_free_nodes && cur.idx.size() < best->idx.size())) {
      best = cur;
      best_placement = std::move(v.placement);
      best_free_nodes = free_nodes;
    }
  }
  if (!best) return false;

  std::vector<int64_t> victims;
  for (int i : best->idx) victims.push_back(cands[i].job->id);
  std::sort(victims.begin(), victims.end());
  std::string names;
  for (int64_t v : victims) names += (names.empty() ? "" : ", ") + JobName(v);
  const std::string by =
      "preempted by " + JobName(j.id) + " (priority " + std::to_string(j.spec.priority) + ")";
  for (int64_t vid : victims) {
    Job& v = *Find(vid);
    Status st = v.record.Transition(now_us, JobState::kPreempted, by);
    if (st.ok()) {
      st = v.record.Transition(now_us, JobState::kRequeued, "requeued after being " + by);
    }
    if (st.ok()) {
      st = v.record.Transition(now_us, JobState::kPending,
                               "back in queue after preemption by " + JobName(j.id));
    }
    Sync(v);
    RETURN_IF_ERROR(st);
    RETURN_IF_ERROR(ReleaseIfStopped(v));
    v.pending_reason = Words("requeued after being " + by);
  }
  RETURN_IF_ERROR(Start(
      j, std::move(*best_placement), now_us,
      "scheduled after preempting " + names + " (" + std::to_string(j.spec.total_gpus) + " GPUs)"));
  return true;
}

StatusOr<std::vector<int64_t>> Scheduler::Schedule(int64_t now_us) {
  SchedulingPass pass(*this, now_us);
  return pass.Run();
}

StatusOr<std::string> Scheduler::Explain(int64_t id) const {
  const Job* j = Find(id);
  if (j == nullptr) return NotFoundError("no job " + JobName(id));
  const JobState s = j->record.state();
  if (s == JobState::kPending)
    return JobName(id) + " PENDING: " + (j->pending_reason ? *j->pending_reason : "");
  if (j->placement) {
    const Placement& p = *j->placement;
    char buf[160];
    std::snprintf(buf, sizeof buf, ": predicted %.3f ms per step, best possible %.3f ms",
                  p.predicted_ms, p.best_possible_ms);
    return JobName(id) + " " + job::JobStateName(s) + " on " + p.domain + buf;
  }
  const auto& ev = j->record.events();
  return JobName(id) + " " + job::JobStateName(s) + (ev.empty() ? "" : ": " + ev.back().reason);
}

std::optional<job::JobState> Scheduler::State(int64_t id) const {
  const Job* j = Find(id);
  if (j == nullptr) return std::nullopt;
  return j->record.state();
}

const Placement* Scheduler::PlacementOf(int64_t id) const {
  const Job* j = Find(id);
  return j == nullptr || !j->placement ? nullptr : &*j->placement;
}

const std::string& Scheduler::PodGroupOf(int64_t id) const {
  static const std::string kNone;
  const Job* j = Find(id);
  return j == nullptr ? kNone : j->pod_group;
}

std::optional<int64_t> Scheduler::StartedUs(int64_t id) const {
  const Job* j = Find(id);
  if (j == nullptr || !j->placement) return std::nullopt;
  return j->start_us;
}

std::optional<std::pair<int, int>> Scheduler::QueuePosition(int64_t id) const {
  const Job* me = Find(id);
  if (me == nullptr || me->record.state() != JobState::kPending) return std::nullopt;
  const Usage usage = CurrentUsage();
  const Shares shares = ActiveWeights();
  const double my_penalty = Penalty(*me, usage, shares);
  auto before = [&](const Job& o) {
    if (o.spec.priority != me->spec.priority) return o.spec.priority > me->spec.priority;
    const double p = Penalty(o, usage, shares);
    if (p != my_penalty) return p < my_penalty;
    const int64_t a = o.record.submit_time_us(), b = me->record.submit_time_us();
    return a != b ? a < b : o.id < me->id;
  };
  int ahead = 0, pending = 0;
  // pending_list_ holds every PENDING job (and some that left PENDING since the last pass).
  for (const Job* o : pending_list_) {
    if (o->record.state() != JobState::kPending) continue;
    ++pending;
    if (o->id != id && before(*o)) ++ahead;
  }
  return std::make_pair(ahead + 1, pending);
}

Status Scheduler::Hold(int64_t hold_id, const std::vector<NodeGpus>& parts) {
  if (hold_id <= 0 || hold_id > AllocId::kMaxNumber) {
    return InvalidArgumentError("hold id must be in [1, 2^60)");
  }
  if (holds_.count(hold_id)) {
    return Status(StatusCode::kAlreadyExists, "hold " + std::to_string(hold_id) + " exists");
  }
  RETURN_IF_ERROR(state_.Allocate(HoldAllocationId(hold_id), parts));
  holds_.emplace(hold_id, *state_.Allocation(HoldAllocationId(hold_id)));
  return OkStatus();
}

Status Scheduler::ReleaseHold(int64_t hold_id) {
  auto it = holds_.find(hold_id);
  if (it == holds_.end()) return NotFoundError("hold " + std::to_string(hold_id) + " not found");
  RETURN_IF_ERROR(state_.Release(HoldAllocationId(hold_id)));
  holds_.erase(it);
  return OkStatus();
}

Status Scheduler::CheckInvariants() const {
  RETURN_IF_ERROR(state_.CheckInvariants());
  size_t holders = 0;
  std::set<std::pair<int, int>> seen, shared;  // GPUs of whole / fractional placements
  for (const auto& [id, j] : jobs_) {
    const bool holds = job::HoldsResources(j.record.state());
    if (holds != state_.HasAllocation(id) || holds != j.placement.has_value()) {
      return InternalError(JobName(id) + " in state " + job::JobStateName(j.record.state()) +
                           (state_.HasAllocation(id) ? " has" : " has no") + " allocation");
    }
    if (!holds) continue;
    ++holders;
    if (*state_.Allocation(id) != j.placement->parts) {
      return InternalError(JobName(id) + ": allocation differs from its placement");
    }
    if (state_.AllocationMilli(id) != j.placement->gpu_milli ||
        (j.placement->gpu_milli > 0) != j.spec.Fractional() ||
        (j.spec.Fractional() && j.placement->gpu_milli != j.spec.gpu_milli)) {
      return InternalError(JobName(id) + ": allocation of " +
                           std::to_string(state_.AllocationMilli(id)) + " milli, placement " +
                           std::to_string(j.placement->gpu_milli) + ", spec " +
                           std::to_string(j.spec.gpu_milli));
    }
    for (const NodeGpus& p : j.placement->parts) {
      for (int g = 0; g < state_.GpuCount(p.node); ++g) {
        if (!p.gpus.test(g)) continue;
        if (j.placement->gpu_milli > 0) {
          shared.insert({p.node, g});
          continue;
        }
        if (!seen.insert({p.node, g}).second) {
          return InternalError("GPU " + std::to_string(g) + " of node " + std::to_string(p.node) +
                               " held by two jobs");
        }
      }
    }
  }
  for (const auto& [hid, parts] : holds_) {
    const std::vector<NodeGpus>* a = state_.Allocation(HoldAllocationId(hid));
    if (a == nullptr || *a != parts) {
      return InternalError("hold " + std::to_string(hid) + ": allocation differs from its GPUs");
    }
    for (const NodeGpus& p : parts) {
      for (int g = 0; g < state_.GpuCount(p.node); ++g) {
        if (p.gpus.test(g) && !seen.insert({p.node, g}).second) {
          return InternalError("GPU " + std::to_string(g) + " of node " + std::to_string(p.node) +
                               " held twice (hold " + std::to_string(hid) + ")");
        }
      }
    }
    ++holders;
  }
  for (const auto& gpu : shared) {
    if (seen.count(gpu)) {
      return InternalError("GPU " + std::to_string(gpu.second) + " of node " +
                           std::to_string(gpu.first) + " held whole and shared by jobs");
    }
  }
  if (holders != state_.AllocationCount()) {
    return InternalError("ClusterState holds " + std::to_string(state_.AllocationCount()) +
                         " allocations, jobs and holds " + std::to_string(holders));
  }
  return OkStatus();
}

}  // namespace toposched::sched
