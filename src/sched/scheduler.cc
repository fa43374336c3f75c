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

#include "placer/policy.h"
#include "sched/scheduler_util.h"

namespace toposched::sched {

namespace {

using internal::AllocatePlacement;
using internal::GpusOf;
using internal::JobName;
using internal::kNever;
using internal::PlusLimit;
using internal::Seconds;
using job::JobState;

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
  return estimator_->DpHideFactor(JobId{id}).value_or(0.0);
}

StatusOr<JobId> Scheduler::Submit(job::JobSpec spec, int64_t now_us) {
  ASSIGN_OR_RETURN(int64_t id, SubmitAs(std::move(spec), now_us, ""));
  return JobId{id};
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
  return state_.Release(AllocId::Job(j.id));
}

Status Scheduler::Cancel(JobId id, int64_t now_us) {
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

Status Scheduler::Complete(JobId id, int64_t now_us, const std::string& failure, int drain_node,
                           const std::string& drain_reason, bool platform, int failed_node) {
  Job* j = Find(id);
  if (j == nullptr) return NotFoundError("no job " + JobName(id));
  if (j->record.state() != JobState::kRunning && j->record.state() != JobState::kCompleting) {
    return FailedPreconditionError(JobName(id) + ": cannot complete a job in state " +
                                   job::JobStateName(j->record.state()));
  }
  Accrue(now_us);
  if (drain_node >= 0) RETURN_IF_ERROR(SetNodeDrained(drain_node, true, now_us, drain_reason));
  if (platform && !failure.empty() && j->record.state() == JobState::kRunning) {
    std::vector<NodeGpus> lost;
    for (const NodeGpus& part : j->placement->parts) {
      if (failed_node < 0 || part.node == failed_node) lost.push_back(part);
    }
    return HandleFailure(*j, JobState::kFailed, failure, now_us, lost);
  }
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

Status Scheduler::ReportDegraded(JobId id, const std::string& reason, double after_ms,
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
  RETURN_IF_ERROR(AllocatePlacement(state_, AllocId::Job(j.id), p));
  Status st = j.record.Transition(now_us, JobState::kRunning, reason);
  Sync(j);
  if (!st.ok()) {
    (void)state_.Release(AllocId::Job(j.id));
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

StatusOr<std::string> Scheduler::Explain(JobId id) const {
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

std::optional<job::JobState> Scheduler::State(JobId id) const {
  const Job* j = Find(id);
  if (j == nullptr) return std::nullopt;
  return j->record.state();
}

const Placement* Scheduler::PlacementOf(JobId id) const {
  const Job* j = Find(id);
  return j == nullptr || !j->placement ? nullptr : &*j->placement;
}

const std::string& Scheduler::PodGroupOf(JobId id) const {
  static const std::string kNone;
  const Job* j = Find(id);
  return j == nullptr ? kNone : j->pod_group;
}

std::optional<int64_t> Scheduler::StartedUs(JobId id) const {
  const Job* j = Find(id);
  if (j == nullptr || !j->placement) return std::nullopt;
  return j->start_us;
}

std::optional<std::pair<int, int>> Scheduler::QueuePosition(JobId id) const {
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
    if (o->id != id.value && before(*o)) ++ahead;
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

int64_t Scheduler::EndUs(const Job& j) {
  if (auto kill = j.record.kill_deadline_us()) return *kill;
  if (j.spec.time_limit_s <= 0) return kNever;
  return PlusLimit(j.start_us, j.spec.time_limit_s);
}

std::optional<int64_t> Scheduler::NextPlannedStartUs() const {
  std::optional<int64_t> out;
  for (const Job* j : pending_list_) {
    if (j->record.state() != JobState::kPending || j->wait_start_us < 0) continue;
    if (!out || j->wait_start_us < *out) out = j->wait_start_us;
  }
  return out;
}

}  // namespace toposched::sched
