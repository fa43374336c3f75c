#include "job/job_state.h"

#include <cinttypes>
#include <cstdio>

#include "core/strings.h"
#include "core/time_units.h"

namespace toposched::job {

namespace {

struct StateInfo {
  JobState state;
  const char* name;
  const char* code;
};
constexpr StateInfo kStates[kNumJobStates] = {
    {JobState::kPending, "PENDING", "PD"},       {JobState::kRunning, "RUNNING", "R"},
    {JobState::kCompleting, "COMPLETING", "CG"}, {JobState::kCompleted, "COMPLETED", "CD"},
    {JobState::kFailed, "FAILED", "F"},          {JobState::kCancelled, "CANCELLED", "CA"},
    {JobState::kTimeout, "TIMEOUT", "TO"},       {JobState::kPreempted, "PREEMPTED", "PR"},
    {JobState::kNodeFail, "NODE_FAIL", "NF"},    {JobState::kRequeued, "REQUEUED", "RQ"},
};

}  // namespace

const char* JobStateName(JobState s) {
  const int i = static_cast<int>(s);
  return i >= 0 && i < kNumJobStates ? kStates[i].name : "UNKNOWN";
}

StatusOr<JobState> ParseJobState(std::string_view text) {
  std::string t = ToLower(Trim(text));
  for (const StateInfo& info : kStates) {
    if (t == ToLower(info.name) || t == ToLower(info.code)) return info.state;
  }
  return InvalidArgumentError("unknown job state \"" + std::string(text) + "\"");
}

bool IsLegalTransition(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    case S::kPending:
      return to == S::kRunning || to == S::kCancelled || to == S::kFailed;
    case S::kRunning:
    case S::kCompleting:
      // RUNNING -> COMPLETED is not legal: a job always passes COMPLETING (epilog, SIGTERM
      // grace), as in Slurm.
      return (from == S::kRunning && to == S::kCompleting) ||
             (from == S::kCompleting && to == S::kCompleted) || to == S::kFailed ||
             to == S::kCancelled || to == S::kTimeout || to == S::kPreempted || to == S::kNodeFail;
    case S::kFailed:
    case S::kPreempted:
    case S::kNodeFail:
      return to == S::kRequeued;
    case S::kRequeued:
      return to == S::kPending || to == S::kCancelled;
    default:
      return false;
  }
}

bool IsFinal(JobState s) {
  return s == JobState::kCompleted || s == JobState::kCancelled || s == JobState::kTimeout;
}

bool HoldsResources(JobState s) { return s == JobState::kRunning || s == JobState::kCompleting; }

std::string FormatEvent(const JobEvent& e) {
  // Unsigned: INT64_MIN has no positive counterpart.
  const uint64_t abs_us =
      e.time_us < 0 ? 0 - static_cast<uint64_t>(e.time_us) : static_cast<uint64_t>(e.time_us);
  char time[48];
  std::snprintf(time, sizeof time, "%s%" PRIu64 ".%06" PRIu64 "s", e.time_us < 0 ? "-" : "",
                abs_us / kUsPerS, abs_us % kUsPerS);
  std::string out = std::string(time) + " " + e.job_id + " ";
  if (e.from == e.to) {
    out += std::string(JobStateName(e.to));
  } else {
    out += std::string(JobStateName(e.from)) + " -> " + JobStateName(e.to);
  }
  return out + ": " + e.reason;
}

JobRecord::JobRecord(std::string job_id, int64_t submit_time_us)
    : job_id_(std::move(job_id)), submit_time_us_(submit_time_us) {}

Status JobRecord::CheckTime(int64_t now_us, const std::string& reason) const {
  if (reason.empty()) return InvalidArgumentError(job_id_ + ": a transition needs a reason");
  const int64_t last = events_.empty() ? submit_time_us_ : events_.back().time_us;
  if (now_us < last) {
    return InvalidArgumentError(job_id_ + ": event at " + std::to_string(now_us) +
                                " us is before the last one at " + std::to_string(last) + " us");
  }
  return OkStatus();
}

void JobRecord::Append(int64_t now_us, JobState to, std::string reason) {
  events_.push_back(JobEvent{now_us, job_id_, state_, to, std::move(reason)});
  if (to == JobState::kRequeued && state_ != to) ++requeue_count_;
  state_ = to;
}

Status JobRecord::Transition(int64_t now_us, JobState to, const std::string& reason) {
  if (!IsLegalTransition(state_, to)) {
    return FailedPreconditionError(job_id_ + ": illegal transition " + JobStateName(state_) +
                                   " -> " + JobStateName(to) + " (" + reason + ")");
  }
  RETURN_IF_ERROR(CheckTime(now_us, reason));
  termination_.reset();
  Append(now_us, to, reason);
  return OkStatus();
}

Status JobRecord::Note(int64_t now_us, const std::string& reason) {
  RETURN_IF_ERROR(CheckTime(now_us, reason));
  Append(now_us, state_, reason);
  return OkStatus();
}

Status JobRecord::Terminate(int64_t now_us, int64_t grace_us, JobState final_state,
                            const std::string& cause) {
  if (state_ != JobState::kRunning) {
    return FailedPreconditionError(job_id_ + ": cannot terminate a job in state " +
                                   JobStateName(state_) + " (" + cause +
                                   "): only RUNNING -> COMPLETING");
  }
  if (final_state == JobState::kCompleting ||
      !IsLegalTransition(JobState::kCompleting, final_state)) {
    return FailedPreconditionError(job_id_ + ": illegal transition COMPLETING -> " +
                                   JobStateName(final_state) + " (" + cause + ")");
  }
  if (grace_us < 0) return InvalidArgumentError(job_id_ + ": negative grace period");
  if (cause.empty()) return InvalidArgumentError(job_id_ + ": a termination needs a cause");
  RETURN_IF_ERROR(CheckTime(now_us, cause));
  if (grace_us > INT64_MAX - now_us) grace_us = INT64_MAX - now_us;
  Append(now_us, JobState::kCompleting, cause + ": SIGTERM sent");
  termination_ = Termination{now_us + grace_us, final_state, cause};
  if (grace_us == 0) AdvanceTo(now_us);
  return OkStatus();
}

Status JobRecord::Timeout(int64_t now_us, int64_t grace_us) {
  return Terminate(now_us, grace_us, JobState::kTimeout, "time limit");
}

std::optional<int64_t> JobRecord::kill_deadline_us() const {
  if (!termination_) return std::nullopt;
  return termination_->kill_at_us;
}

bool JobRecord::AdvanceTo(int64_t now_us) {
  if (!termination_ || now_us < termination_->kill_at_us) return false;
  Termination t = std::move(*termination_);
  termination_.reset();
  Append(t.kill_at_us, t.final_state, t.cause + ": SIGKILL after grace period");
  return true;
}

Status JobRecord::ProcessesExited(int64_t now_us) {
  if (!termination_) {
    return FailedPreconditionError(job_id_ + ": no termination pending (state " +
                                   JobStateName(state_) + ")");
  }
  RETURN_IF_ERROR(CheckTime(now_us, termination_->cause));
  // Past the deadline the SIGKILL came first.
  if (AdvanceTo(now_us)) return OkStatus();
  Termination t = std::move(*termination_);
  termination_.reset();
  Append(now_us, t.final_state, t.cause + ": exited after SIGTERM");
  return OkStatus();
}

}  // namespace toposched::job
