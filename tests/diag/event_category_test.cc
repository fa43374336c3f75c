// Which of the scheduler's job events are interruptions, and their cause category: what the
// daemon stores beside each event and counts in /metrics (diag::InterruptionCategory).
#include "diag/event_category.h"

#include <gtest/gtest.h>

#include <string>

namespace toposched::diag {
namespace {

using job::JobState;

job::JobEvent Event(JobState from, JobState to, const std::string& reason) {
  return job::JobEvent{12000000, "job-7", from, to, reason};
}

TEST(InterruptionCategoryTest, OnlyEventsThatStopARunningJobAreInterruptions) {
  EXPECT_FALSE(InterruptionCategory(Event(JobState::kPending, JobState::kRunning, "started")));
  EXPECT_FALSE(InterruptionCategory(
      Event(JobState::kRunning, JobState::kCompleting, "job finished: running epilog")));
  EXPECT_FALSE(InterruptionCategory(Event(JobState::kCompleting, JobState::kCompleted, "done")));
  EXPECT_FALSE(InterruptionCategory(
      Event(JobState::kPending, JobState::kCancelled, "cancelled by user")));  // never ran
  EXPECT_FALSE(InterruptionCategory(
      Event(JobState::kPreempted, JobState::kRequeued, "requeued after preemption")));
}

TEST(InterruptionCategoryTest, TheSchedulersOwnReasonsGiveTheirCategories) {
  EXPECT_EQ(InterruptionCategory(Event(JobState::kCompleting, JobState::kTimeout,
                                       "time limit 3600 s reached: SIGKILL after grace period")),
            Category::kTimeout);
  EXPECT_EQ(InterruptionCategory(Event(JobState::kRunning, JobState::kPreempted,
                                       "preempted by job-3 (priority 500)")),
            Category::kPreempted);
  EXPECT_EQ(InterruptionCategory(Event(JobState::kCompleting, JobState::kCancelled,
                                       "cancelled by user: SIGKILL after grace period")),
            Category::kCancelled);
  EXPECT_EQ(InterruptionCategory(Event(JobState::kRunning, JobState::kNodeFail,
                                       "node gpu002 unhealthy (XID 79); on_failure: requeue")),
            Category::kNodeFailure);
  // A stop the readers know nothing of is still an interruption, of unknown cause.
  EXPECT_EQ(InterruptionCategory(Event(JobState::kRunning, JobState::kFailed, "went away")),
            Category::kUnknown);
}

TEST(InterruptionCategoryTest, AnExitReportsClassifiedCauseIsReadBack) {
  EXPECT_EQ(InterruptionCategory(Event(
                JobState::kRunning, JobState::kFailed,
                "exit code 1: cause nccl_transport_fallback: NCCL used NET/Socket (exit report "
                "of job-7 line 3); fix: set NCCL_IB_HCA=mlx5_0")),
            Category::kNcclTransportFallback);
  EXPECT_EQ(InterruptionCategory(Event(JobState::kRunning, JobState::kFailed,
                                       "killed by signal 9 (SIGKILL): cause host_oom: the "
                                       "container was OOM-killed")),
            Category::kHostOom);
  // Only a reason the daemon wrote counts: text from elsewhere (a node's or a health report's
  // message inside the reason) cannot pass for a classification.
  EXPECT_EQ(InterruptionCategory(Event(JobState::kRunning, JobState::kFailed,
                                       "went away (operator: cause host_oom: forged)")),
            Category::kUnknown);
  EXPECT_EQ(InterruptionCategory(Event(JobState::kRunning, JobState::kPreempted,
                                       "log report: cause nccl_transport_fallback: NET/Socket, "
                                       "predicted 1.000 -> 9.000 ms; on_degraded: wait")),
            Category::kNcclTransportFallback);
  // A name outside the vocabulary is not taken for one.
  EXPECT_EQ(InterruptionCategory(
                Event(JobState::kRunning, JobState::kFailed, "exit code 1: cause gremlins: ?")),
            Category::kUnknown);
}

}  // namespace
}  // namespace toposched::diag
