// Wait-or-spread (SchedulerOptions::wait_or_spread) with run times the jobs declare
// (DeclaredRunTimes), on slurm-8node: leaf0 = gpu01-04, leaf1 = gpu05-08, leaf uplinks 2:1, so a
// 16-GPU job across the two leaves is predicted about twice as slow as inside one.
// tests/sched/testdata/golden/wait_or_spread.script shows both outcomes in a transcript.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/time_units.h"
#include "job/job_spec.h"
#include "sched/run_time.h"
#include "sched/scheduler.h"
#include "testing/clusters.h"
#include "testing/declared_scheduler.h"
#include "testing/placers.h"
#include "testing/status_matchers.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const topo::Cluster& Eight() { return testing::LoadExampleCluster("slurm-8node.yaml"); }

job::JobSpec SpreadJob(const std::string& name, int gpus) {
  return testing::WholeNodeJob(name, gpus);
}

// Eight whole-node jobs w1..w8 (ids 1..8) fill the cluster, declared to run `runs[k]` s; the
// two that run 10 s (w4 on gpu04, w5 on gpu05) end at 10 s, leaving one free node per leaf.
class WaitOrSpread : public testing::DeclaredScheduler {
 public:
  explicit WaitOrSpread(bool on,
                        std::vector<double> runs = {36000, 36000, 600, 10, 10, 36000, 36000, 36000})
      : DeclaredScheduler("slurm-8node.yaml", [on] {
          SchedulerOptions o;
          o.wait_or_spread = on;
          return o;
        }()) {
    for (size_t k = 0; k < runs.size(); ++k)
      Submit(SpreadJob("w" + std::to_string(k + 1), 8), runs[k], 0.2, 0);
    EXPECT_EQ(s().Schedule(0).value().size(), 8u);
    EXPECT_TRUE(s().Complete(JobId{4}, 10 * kUsPerS).ok());
    EXPECT_TRUE(s().Complete(JobId{5}, 10 * kUsPerS).ok());
  }
  std::string Nodes(int64_t id) const {
    const Placement* p = s().PlacementOf(JobId{id});
    if (p == nullptr) return "none";
    std::string out;
    for (const NodeGpus& g : p->parts) out += (out.empty() ? "" : ",") + Eight().nodes[g.node].name;
    return out;
  }
};

TEST(WaitOrSpreadTest, OffALongJobStartsAtOnceAcrossTheLeaves) {
  WaitOrSpread h(false);
  const int64_t id = h.Submit(SpreadJob("long", 16), 36000, 0.5, 10);
  EXPECT_EQ(h.Schedule(10), std::vector<int64_t>{id});
  EXPECT_EQ(h.Nodes(id), "gpu04,gpu05");
}

TEST(WaitOrSpreadTest, ALongJobWaitsForOneLeafOnlyWhileWaitingCanStillPayOff) {
  WaitOrSpread h(true);
  const int64_t id = h.Submit(SpreadJob("long", 16), 36000, 0.5, 10);
  EXPECT_TRUE(h.Schedule(10).empty());
  EXPECT_EQ(h.s().NextPlannedStartUs(), std::optional<int64_t>(600 * kUsPerS));
  const std::string why = h.s().Explain(JobId{id}).value();
  EXPECT_THAT(why, HasSubstr("waiting for leaf0 (free in ~10 min, at 600.000000s): finishes ~4.8 h "
                             "earlier than starting now across spine0"))
      << why;
  // Still waiting at 300 s (the plan holds).
  EXPECT_TRUE(h.Schedule(300).empty());
  // w3 (id 3) overruns its declared 600 s and is expected to end any moment: the job keeps
  // waiting while a start on leaf0 still finishes it by the time starting across the leaves at
  // 10 s would have (10 + 36000 · (0.5 + 0.5 · 267.777 / 134.393) ≈ 53874.9 s), i.e. until
  // 53874.9 − 36000 s; then it starts across the leaves.
  EXPECT_TRUE(h.Schedule(600).empty());
  EXPECT_EQ(h.s().NextPlannedStartUs(), std::optional<int64_t>(600 * kUsPerS));
  EXPECT_TRUE(h.Schedule(17874).empty());
  EXPECT_EQ(h.Schedule(17875), std::vector<int64_t>{id});
  EXPECT_EQ(h.Nodes(id), "gpu04,gpu05");
  EXPECT_EQ(h.s().NextPlannedStartUs(), std::nullopt);
}

TEST(WaitOrSpreadTest, TheWaitingJobsPlannedNodeIsReservedAgainstLaterJobs) {
  WaitOrSpread h(true);
  const int64_t id = h.Submit(SpreadJob("long", 16), 36000, 0.5, 10);
  EXPECT_TRUE(h.Schedule(10).empty());
  // An 8-GPU job without a time limit may not take gpu04 (planned for long at 600 s); it takes
  // the free node of leaf1.
  const int64_t small = h.Submit(SpreadJob("small", 8), 36000, 0.2, 20);
  EXPECT_EQ(h.Schedule(20), std::vector<int64_t>{small});
  EXPECT_EQ(h.Nodes(small), "gpu05");
  EXPECT_TRUE(h.s().Complete(JobId{3}, 600 * kUsPerS).ok());
  EXPECT_EQ(h.Schedule(600), std::vector<int64_t>{id});
  EXPECT_EQ(h.Nodes(id), "gpu03,gpu04");
}

TEST(WaitOrSpreadTest, AShortJobSpreadsAndSaysWhy) {
  WaitOrSpread h(true);
  const int64_t id = h.Submit(SpreadJob("short", 16), 60, 0.5, 10);
  EXPECT_EQ(h.Schedule(10), std::vector<int64_t>{id});
  EXPECT_EQ(h.Nodes(id), "gpu04,gpu05");
  const std::string& why = h.s().Events().back().reason;
  EXPECT_THAT(why, HasSubstr("across spine0 now it finishes at ~")) << why;
}

TEST(WaitOrSpreadTest, AMiddleJobComparesTheWaitAndStartsWhenItLoses) {
  // w3 ends at 600 s; a 16-GPU job of 3000 s at 10% communication: across the leaves ~3308 s,
  // on one leaf 3000 s but only from 600 s: starting now finishes ~5 min sooner.
  WaitOrSpread h(true);
  const int64_t id = h.Submit(SpreadJob("mid", 16), 3000, 0.1, 10);
  EXPECT_EQ(h.Schedule(10), std::vector<int64_t>{id});
  const std::string& why = h.s().Events().back().reason;
  EXPECT_THAT(why, HasSubstr("across spine0 now it finishes at ~3307.7")) << why;
  EXPECT_THAT(why, HasSubstr("~5 min before waiting for leaf0 (free at 600.000000s) would")) << why;
}

TEST(WaitOrSpreadTest, WithoutAnEstimateNobodyWaits) {
  WaitOrSpread h(true);
  auto id = h.s().Submit(SpreadJob("unknown", 16), 10 * kUsPerS);  // no declared run time
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(h.Schedule(10), std::vector<int64_t>{id->value});
}

TEST(WaitOrSpreadTest, OptionsAndDeclarationsAreChecked) {
  SchedulerOptions o;
  o.wait_plan_attempts = 0;
  EXPECT_THAT(o.Validate(), StatusIs(StatusCode::kInvalidArgument,
                                     HasSubstr("wait_plan_attempts must be in [1, 1024]")));
  DeclaredRunTimes d;
  EXPECT_THAT(
      d.Declare(JobId{1}, 0, 0.5),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("run time of job 1 must be in (0, 1e9] s")));
  EXPECT_THAT(d.Declare(JobId{1}, 10, 1.5),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("communication share of job 1 must be in [0, 1]")));
  EXPECT_TRUE(d.Declare(JobId{1}, 10, 0.5).ok());
  Placement p;
  p.predicted_ms = 3;
  p.best_possible_ms = 1;
  EXPECT_DOUBLE_EQ(d.RunSeconds(JobId{1}, p).value(), 10 * (0.5 + 0.5 * 3));
  EXPECT_EQ(d.ExpectedEndUs(JobId{1}, 0), std::nullopt);  // not attached, not running
}

}  // namespace
}  // namespace toposched::sched
