// Job states with Slurm's names, the table of legal transitions, and JobRecord: the state of one
// job plus its event log, where every transition is an event with a time and a reason. Time is
// an injected clock value (microseconds); this module never reads a clock, sends a signal or
// knows where the job runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace toposched::job {

enum class JobState {
  kPending,
  kRunning,
  kCompleting,
  kCompleted,
  kFailed,
  kCancelled,
  kTimeout,
  kPreempted,
  kNodeFail,
  kRequeued,
};
inline constexpr int kNumJobStates = 10;

// "PENDING", "RUNNING", ..., "NODE_FAIL", "REQUEUED" (Slurm's spelling).
const char* JobStateName(JobState s);
inline const char* ToString(JobState s) { return JobStateName(s); }
// Case-insensitive; also accepts Slurm's short codes (PD, R, CG, CD, F, CA, TO, PR, NF, RQ).
// InvalidArgument naming the text otherwise.
StatusOr<JobState> ParseJobState(std::string_view text);

// The transition table (docs/jobs.md):
//   PENDING    -> RUNNING, CANCELLED, FAILED (cannot ever start: launch failure, unresolvable)
//   RUNNING    -> COMPLETING, FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL
//   COMPLETING -> COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL
//   FAILED, PREEMPTED, NODE_FAIL -> REQUEUED        (on_failure: requeue / preemption requeue)
//   REQUEUED   -> PENDING, CANCELLED
//   COMPLETED, CANCELLED, TIMEOUT: final.
bool IsLegalTransition(JobState from, JobState to);
// No transition leaves it: COMPLETED, CANCELLED, TIMEOUT.
bool IsFinal(JobState s);
// Holds or may hold GPUs: RUNNING, COMPLETING.
bool HoldsResources(JobState s);

// One entry of the event log. from == to for a note that changes no state (a resize).
struct JobEvent {
  int64_t time_us = 0;
  std::string job_id;
  JobState from = JobState::kPending;
  JobState to = JobState::kPending;
  std::string reason;
  bool operator==(const JobEvent&) const = default;
};
// "12.000000s job-7 RUNNING -> COMPLETING: time limit: SIGTERM sent"
std::string FormatEvent(const JobEvent& e);

// The state of one job and its history. Starts PENDING at submit time with no events.
// Invariants: events are in non-decreasing time; each event's `from` is the previous event's
// `to`; state() is the last event's `to`. Not thread-safe (one owner, e.g. the JobStore).
class JobRecord {
 public:
  JobRecord(std::string job_id, int64_t submit_time_us);

  const std::string& job_id() const { return job_id_; }
  JobState state() const { return state_; }
  int64_t submit_time_us() const { return submit_time_us_; }
  const std::vector<JobEvent>& events() const { return events_; }
  int requeue_count() const { return requeue_count_; }

  // Applies one transition and appends its event. Errors (nothing changes):
  //   FailedPrecondition "job-7: illegal transition PENDING -> COMPLETED (reason)";
  //   InvalidArgument for an empty reason or a time before the last event.
  // Leaving COMPLETING by hand drops a pending termination (e.g. NODE_FAIL during the grace).
  Status Transition(int64_t now_us, JobState to, const std::string& reason);

  // A note in the log that changes no state (a resize, a degraded placement). Same time rules.
  Status Note(int64_t now_us, const std::string& reason);

  // Graceful stop of a RUNNING job, as Slurm does it: now, RUNNING -> COMPLETING with
  // "<cause>: SIGTERM sent"; the processes then get `grace_us` to exit. The move to
  // `final_state` (TIMEOUT, CANCELLED, PREEMPTED) happens in AdvanceTo (at now + grace_us,
  // "<cause>: SIGKILL after grace period") or in ProcessesExited if they exit sooner. grace 0:
  // both events at once. FailedPrecondition unless RUNNING or final_state is not a legal exit of
  // COMPLETING; InvalidArgument for a negative grace.
  Status Terminate(int64_t now_us, int64_t grace_us, JobState final_state,
                   const std::string& cause);
  // Terminate(now, grace, TIMEOUT, "time limit").
  Status Timeout(int64_t now_us, int64_t grace_us);
  // When the SIGKILL of a pending termination is due; nullopt when none is pending. The caller
  // (scheduler loop, simulator) arranges to call AdvanceTo then.
  std::optional<int64_t> kill_deadline_us() const;
  // Fires a due SIGKILL: if a termination is pending and now_us >= its deadline, moves to the
  // final state with the event at the deadline time. Returns true when it did.
  bool AdvanceTo(int64_t now_us);
  // The processes of a terminating job exited before the deadline: moves to the final state
  // with "<cause>: exited after SIGTERM". FailedPrecondition when no termination is pending.
  Status ProcessesExited(int64_t now_us);

 private:
  struct Termination {
    int64_t kill_at_us;
    JobState final_state;
    std::string cause;
  };
  Status CheckTime(int64_t now_us, const std::string& reason) const;
  void Append(int64_t now_us, JobState to, std::string reason);

  std::string job_id_;
  int64_t submit_time_us_;
  JobState state_ = JobState::kPending;
  std::vector<JobEvent> events_;
  std::optional<Termination> termination_;
  int requeue_count_ = 0;
};

}  // namespace toposched::job
