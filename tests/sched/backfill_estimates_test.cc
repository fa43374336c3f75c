// Backfill by run-time estimates (SchedulerOptions::backfill_by_estimates) with run times the
// jobs declare (DeclaredRunTimes), on slurm-8node (8 nodes of 8 GPUs). r1 (32 GPUs, 3,600 s),
// r2 (16 GPUs, 600 s) and r3 (8 GPUs, 7,200 s) leave one node free; head (24 GPUs) does not fit.
// tests/sched/testdata/golden/backfill_estimates.script shows the same in a transcript.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "job/job_spec.h"
#include "sched/scheduler.h"
#include "testing/declared_scheduler.h"
#include "testing/status_matchers.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;

using testing::WholeNodeJob;

class Backfill : public testing::DeclaredScheduler {
 public:
  explicit Backfill(bool by_estimates, int64_t r2_limit_s = 0)
      : DeclaredScheduler("slurm-8node.yaml", [by_estimates] {
          SchedulerOptions o;
          o.backfill_by_estimates = by_estimates;
          return o;
        }()) {
    Submit(WholeNodeJob("r1", 32), 3600, 0);
    Submit(WholeNodeJob("r2", 16, r2_limit_s), 600, 0);
    Submit(WholeNodeJob("r3", 8), 7200, 0);
    EXPECT_EQ(s().Schedule(0).value().size(), 3u);
  }
  // Declared with 20% of a step communicating.
  int64_t Submit(const job::JobSpec& spec, double run_s, int64_t t_s) {
    return DeclaredScheduler::Submit(spec, run_s, 0.2, t_s);
  }
  std::string Why(int64_t id) const {
    StatusOr<std::string> w = s().Explain(JobId{id});
    return w.ok() ? *w : w.status().ToString();
  }
  bool Running(int64_t id) const { return s().PlacementOf(JobId{id}) != nullptr; }
  void Complete(int64_t id, int64_t t_s) {
    EXPECT_TRUE(s().Complete(JobId{id}, t_s * testing::kDeclaredSec).ok());
  }
};

TEST(BackfillByEstimatesTest, AJobExpectedToEndBeforeTheReservationTakesItsGpus) {
  Backfill b(true);
  const int64_t head = b.Submit(WholeNodeJob("head", 24), 1000, 10);
  const int64_t quick = b.Submit(WholeNodeJob("quick", 8), 300, 10);
  EXPECT_EQ(b.Schedule(10), std::vector<int64_t>{quick});
  EXPECT_THAT(b.Why(head),
              HasSubstr("reserved to start at 600.000000s (by the running jobs' estimated"))
      << b.Why(head);
  EXPECT_THAT(b.Why(quick), HasSubstr("RUNNING")) << b.Why(quick);
}

TEST(BackfillByEstimatesTest, AJobExpectedToRunPastTheReservationWaits) {
  Backfill b(true);
  b.Submit(WholeNodeJob("head", 24), 1000, 10);
  const int64_t slow = b.Submit(WholeNodeJob("slow", 8), 5000, 10);
  EXPECT_TRUE(b.Schedule(10).empty());
  EXPECT_THAT(b.Why(slow), HasSubstr("its estimated run ends at 5010.000000s, after it"))
      << b.Why(slow);
}

// Without estimates the head's reservation is "never", on the GPUs it would take on the empty
// cluster (held by r1 for an hour): slow takes the free node, and when r2 ends at 600 s its
// nodes are not the reserved ones, so head still cannot start. With them head reserves r2's
// nodes and the free node, slow waits, and head starts at 600 s.
TEST(BackfillByEstimatesTest, WithoutEstimatesTheHeadIsPassedOverWithThemItStartsOnTime) {
  for (bool on : {false, true}) {
    SCOPED_TRACE(on ? "with estimates" : "without");
    Backfill b(on);
    const int64_t head = b.Submit(WholeNodeJob("head", 24), 1000, 10);
    const int64_t slow = b.Submit(WholeNodeJob("slow", 8), 5000, 10);
    const std::vector<int64_t> started = b.Schedule(10);
    EXPECT_EQ(b.Running(slow), !on);
    EXPECT_EQ(started.size(), on ? 0u : 1u);
    EXPECT_THAT(b.Why(head),
                HasSubstr(on ? "reserved to start at 600.000000s" : "reserved to start at never"))
        << b.Why(head);
    b.Complete(2, 600);
    b.Schedule(600);
    EXPECT_EQ(b.Running(head), on);
  }
}

TEST(BackfillByEstimatesTest, ADeclaredTimeLimitWinsOverTheEstimate) {
  // r2 is estimated to end at 600 s but may run to its 2,000 s limit: the reservation starts
  // then, from a limit alone. mid, estimated at 1,000 s without a limit, is not let onto it on
  // that estimate; mid2, with a 1,000 s limit, is.
  Backfill b(true, 2000);
  const int64_t head = b.Submit(WholeNodeJob("head", 24), 1000, 10);
  const int64_t mid = b.Submit(WholeNodeJob("mid", 8), 1000, 10);
  EXPECT_TRUE(b.Schedule(10).empty());
  EXPECT_THAT(b.Why(head), HasSubstr("reserved to start at 2000.000000s: ")) << b.Why(head);
  EXPECT_THAT(b.Why(mid), HasSubstr("its limit (none) ends after it")) << b.Why(mid);
  const int64_t mid2 = b.Submit(WholeNodeJob("mid2", 8, 1000), 1000, 20);
  EXPECT_EQ(b.Schedule(20), std::vector<int64_t>{mid2});
}

TEST(BackfillByEstimatesTest, AJobsOwnTimeLimitDecidesItsBackfill) {
  // quick is estimated at 300 s but declares a 1,000 s limit: it would end after 600 s.
  Backfill b(true);
  b.Submit(WholeNodeJob("head", 24), 1000, 10);
  const int64_t quick = b.Submit(WholeNodeJob("quick", 8, 1000), 300, 10);
  EXPECT_TRUE(b.Schedule(10).empty());
  EXPECT_THAT(b.Why(quick), HasSubstr("its limit 16m40s ends after it")) << b.Why(quick);
}

}  // namespace
}  // namespace toposched::sched
