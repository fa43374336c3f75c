// The run times jobs declare in their specs (JobSpec::estimate, sched::SpecRunTimes, the daemon's
// estimator): read from the scheduler's current spec, stretched by the comm-fraction rule on a
// slower placement, a running job's end capped at its time limit; no estimate, no run time. And
// wait-or-spread on them: the long job of wait_or_spread.script waits with its estimate in its
// spec and starts at once without one. On slurm-8node (leaf0 = gpu01-04, leaf1 = gpu05-08, 2:1).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/time_units.h"
#include "job/job_spec.h"
#include "sched/run_time.h"
#include "sched/scheduler.h"
#include "testing/declared_scheduler.h"
#include "testing/placers.h"
#include "testing/status_matchers.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;

job::JobSpec TimedJob(const std::string& name, int gpus, int64_t run_s, double share,
                      int64_t limit_s = 0) {
  job::JobSpec j = testing::WholeNodeJob(name, gpus, limit_s);
  if (run_s > 0) j.estimate = job::RunEstimate{run_s, share};
  return j;
}

// Eight whole-node jobs fill the cluster (w3 expected to end at 600 s, w4 and w5 at 10 s, the
// rest in 10 h); w4 and w5 end at 10 s, leaving gpu04 and gpu05 free, one per leaf.
class SpecRunTimesTest : public ::testing::Test {
 protected:
  void Make(bool wait_or_spread) {
    SchedulerOptions o;
    o.wait_or_spread = wait_or_spread;
    auto s = Scheduler::Create(testing::ExamplePlacer("slurm-8node.yaml"), o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    s_ = std::move(s).value();
    est_ = std::make_unique<SpecRunTimes>(*s_);
    s_->SetRunTimeEstimator(est_.get());
    const int64_t runs[] = {36000, 36000, 600, 10, 10, 36000, 36000, 36000};
    for (int k = 0; k < 8; ++k) {
      ASSERT_TRUE(s_->Submit(TimedJob("w" + std::to_string(k + 1), 8, runs[k], 0.2), 0).ok());
    }
    ASSERT_EQ(s_->Schedule(0).value().size(), 8u);
    ASSERT_TRUE(s_->Complete(JobId{4}, 10 * kUsPerS).ok());
    ASSERT_TRUE(s_->Complete(JobId{5}, 10 * kUsPerS).ok());
  }
  std::unique_ptr<Scheduler> s_;
  std::unique_ptr<SpecRunTimes> est_;
};

TEST_F(SpecRunTimesTest, TheSpecsEstimateStretchesWithCommunication) {
  Make(false);
  Placement slow;
  slow.predicted_ms = 3;
  slow.best_possible_ms = 1;
  // w3 declares 600 s with 20% communication: 600 x (0.8 + 0.2 x 3) on a 3x slower placement.
  EXPECT_DOUBLE_EQ(est_->RunSeconds(JobId{3}, slow).value(), 840);
  EXPECT_EQ(est_->ExpectedEndUs(JobId{3}, 10 * kUsPerS), 600 * kUsPerS);
  EXPECT_EQ(est_->ExpectedEndUs(JobId{3}, 700 * kUsPerS), 700 * kUsPerS) << "never before now";
  ASSERT_TRUE(s_->Submit(TimedJob("plain", 8, 0, 0), 10 * kUsPerS).ok());
  EXPECT_FALSE(est_->RunSeconds(JobId{9}, slow).has_value());
  EXPECT_FALSE(est_->ExpectedEndUs(JobId{4}, 10 * kUsPerS).has_value()) << "w4 holds no placement";
}

// Started across the two leaves (wait-or-spread off), a job with 100% communication runs
// predicted / best times its 900 s there; its limit of 1,000 s ends it first.
TEST_F(SpecRunTimesTest, ARunningJobsEndIsCappedAtItsTimeLimit) {
  Make(false);
  auto id = s_->Submit(TimedJob("x", 16, 900, 1.0, 1000), 10 * kUsPerS);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(s_->Schedule(10 * kUsPerS).value(), std::vector<JobId>{*id});
  const Placement* p = s_->PlacementOf(JobId{*id});
  ASSERT_NE(p, nullptr);
  const double run = est_->RunSeconds(*id, *p).value();
  ASSERT_GT(run, 1000) << "the split placement must stretch 900 s past the limit";
  EXPECT_EQ(est_->ExpectedEndUs(*id, 10 * kUsPerS), 1010 * kUsPerS);
}

TEST_F(SpecRunTimesTest, WithItsEstimateTheLongJobWaitsWithoutItStartsAcross) {
  Make(true);
  auto waits = s_->Submit(TimedJob("long", 16, 36000, 0.5), 10 * kUsPerS);
  ASSERT_TRUE(waits.ok());
  EXPECT_TRUE(s_->Schedule(10 * kUsPerS).value().empty());
  EXPECT_THAT(s_->Explain(JobId{*waits}).value(), HasSubstr("waiting for leaf0"))
      << s_->Explain(JobId{*waits}).value();
  ASSERT_TRUE(s_->Cancel(JobId{*waits}, 20 * kUsPerS).ok());
  auto plain = s_->Submit(TimedJob("plain", 16, 0, 0), 20 * kUsPerS);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(s_->Schedule(20 * kUsPerS).value(), std::vector<JobId>{*plain});
  EXPECT_EQ(s_->PlacementOf(JobId{*plain})->parts.size(), 2u);
}

}  // namespace
}  // namespace toposched::sched
