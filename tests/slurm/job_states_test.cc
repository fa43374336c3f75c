#include "slurm/job_states.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace toposched::slurm {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using job::JobState;

TEST(MapSlurmJobState, EveryDocumentedStateAndCode) {
  const struct {
    const char* slurm;
    JobState want;
  } cases[] = {
      {"PENDING", JobState::kPending},
      {"PD", JobState::kPending},
      {"REQUEUE_HOLD", JobState::kPending},
      {"RESV_DEL_HOLD", JobState::kPending},
      {"CONFIGURING", JobState::kRunning},
      {"RUNNING", JobState::kRunning},
      {"R", JobState::kRunning},
      {"SUSPENDED", JobState::kRunning},
      {"STOPPED", JobState::kRunning},
      {"RESIZING", JobState::kRunning},
      {"SIGNALING", JobState::kRunning},
      {"COMPLETING", JobState::kCompleting},
      {"CG", JobState::kCompleting},
      {"STAGE_OUT", JobState::kCompleting},
      {"COMPLETED", JobState::kCompleted},
      {"CD", JobState::kCompleted},
      {"CANCELLED", JobState::kCancelled},
      {"REVOKED", JobState::kCancelled},
      {"FAILED", JobState::kFailed},
      {"OUT_OF_MEMORY", JobState::kFailed},
      {"OOM", JobState::kFailed},
      {"SPECIAL_EXIT", JobState::kFailed},
      {"TIMEOUT", JobState::kTimeout},
      {"DEADLINE", JobState::kTimeout},
      {"DL", JobState::kTimeout},
      {"NODE_FAIL", JobState::kNodeFail},
      {"BOOT_FAIL", JobState::kNodeFail},
      {"BF", JobState::kNodeFail},
      {"PREEMPTED", JobState::kPreempted},
      {"PR", JobState::kPreempted},
      {"REQUEUED", JobState::kRequeued},
      {"REQUEUE_FED", JobState::kRequeued},
  };
  for (const auto& c : cases) {
    auto s = MapSlurmJobState(c.slurm);
    ASSERT_TRUE(s.ok()) << c.slurm << ": " << s.status().message();
    EXPECT_EQ(*s, c.want) << c.slurm;
  }
}

TEST(MapSlurmJobState, CaseAndFlags) {
  EXPECT_EQ(*MapSlurmJobState("running"), JobState::kRunning);
  EXPECT_EQ(*MapSlurmJobState("CANCELLED+"), JobState::kCancelled);
  EXPECT_EQ(*MapSlurmJobState("RUNNING+COMPLETING"), JobState::kCompleting);
  // A finished job with a COMPLETING flag stays finished.
  EXPECT_EQ(*MapSlurmJobState("TIMEOUT+COMPLETING"), JobState::kTimeout);
}

TEST(MapSlurmJobState, UnknownIsAnErrorNamingIt) {
  auto s = MapSlurmJobState("SLEEPY");
  ASSERT_THAT(s, StatusIs(StatusCode::kInvalidArgument, HasSubstr("\"SLEEPY\"")));
  EXPECT_THAT(MapSlurmJobState(""),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown Slurm job state \"\"")));
}

}  // namespace
}  // namespace toposched::slurm
