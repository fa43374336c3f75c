// One big job's goodput under failures (sim/goodput.h) on the two-rack GB200 NVL72 example
// cluster: a spare in the rack keeps the step time, any free node may split a TP group across
// racks and slow the step, no spares waits for the repair; the time accounting adds up; bad
// options and a job that does not fit are errors with their reason.
#include "sim/goodput.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/clusters.h"
#include "testing/status_matchers.h"

namespace toposched::sim {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

// TP 8 (two trays of a rack) x PP 2 x DP 2: 32 GPUs, 8 of the 36 trays.
job::JobSpec SmallJob(int dp = 2) {
  job::JobSpec j;
  j.name = "small";
  j.layout.tp = 8;
  j.layout.pp = 2;
  j.layout.dp = dp;
  j.model_params = 8e9;
  EXPECT_TRUE(j.Normalize().ok());
  return j;
}

// 30 days at 0.01 interruptions per GPU-day (about 20 times the Llama 3 rate) so that a small
// cluster sees tens of failures; half the GPUs busy.
GoodputOptions Busy() {
  GoodputOptions o;
  o.interruptions_per_gpu_day = 0.01;
  o.busy_fraction = 0.5;
  return o;
}

GoodputResult RunReplacement(const std::string& name, const GoodputOptions& o = Busy()) {
  StatusOr<ReplacementPolicy> p = ReplacementPolicyNamed(name);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  StatusOr<GoodputResult> r = SimulateGoodput(testing::Gb200Cluster(), SmallJob(), *p, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : GoodputResult{};
}

TEST(Goodput, DomainSparesKeepTheStepTime) {
  const GoodputResult r = RunReplacement("topology-spares");
  EXPECT_GT(r.interruptions, 0);
  EXPECT_EQ(r.from_domain_spare, r.interruptions - r.in_place);
  EXPECT_EQ(r.waited_for_repair, 0);
  EXPECT_EQ(r.job_domains, 1);  // 32 GPUs fit in the 64 a rack trains with
  EXPECT_EQ(r.spare_gpus, 8);   // its 2 spare trays of 4 GPUs
  EXPECT_DOUBLE_EQ(r.step_ms_worst, r.step_ms_before);
  EXPECT_EQ(r.tp_groups_across_domains, 0);
  EXPECT_DOUBLE_EQ(r.goodput, r.ettr);
}

TEST(Goodput, AnyFreeNodeSplitsTpGroupsAndSlowsTheStep) {
  const GoodputResult r = RunReplacement("any-free");
  EXPECT_GT(r.from_any_free, 0);
  EXPECT_GT(r.tp_groups_across_domains, 0);
  EXPECT_GT(r.step_ms_worst, r.step_ms_before);
  EXPECT_GT(r.predicted_ms_after, r.predicted_ms_before);
  EXPECT_LT(r.goodput, r.ettr);  // slower steps: training time that makes less progress
}

TEST(Goodput, NoSparesWaitsForTheRepair) {
  const GoodputResult r = RunReplacement("no-spares");
  EXPECT_EQ(r.waited_for_repair, r.interruptions - r.in_place);
  EXPECT_GT(r.repair_wait_s, 0);
  EXPECT_LT(r.goodput, RunReplacement("topology-spares").goodput);
}

TEST(Goodput, EveryPolicyMeetsTheSameFailures) {
  EXPECT_EQ(RunReplacement("any-free").cluster_failures,
            RunReplacement("no-spares").cluster_failures);
  EXPECT_EQ(RunReplacement("topology-spares").cluster_failures,
            RunReplacement("any-free").cluster_failures);
}

TEST(Goodput, TimeAddsUpToTheWallTime) {
  for (const std::string& name : ReplacementPolicyNames()) {
    const GoodputResult r = RunReplacement(name);
    EXPECT_NEAR(r.ettr * r.wall_s + r.lost_work_s + r.checkpoint_s + r.restart_s + r.repair_wait_s,
                r.wall_s, 1e-3)
        << name;
  }
}

TEST(Goodput, WithoutFailuresOnlyCheckpointWritesCost) {
  GoodputOptions o = Busy();
  o.interruptions_per_gpu_day = 0;
  const GoodputResult r = RunReplacement("any-free", o);
  EXPECT_EQ(r.interruptions, 0);
  EXPECT_NEAR(r.goodput, 1.0 - r.checkpoint_s / r.wall_s, 1e-12);
}

TEST(Goodput, RepeatsWithTheSameSeed) {
  EXPECT_DOUBLE_EQ(RunReplacement("any-free").goodput, RunReplacement("any-free").goodput);
}

TEST(Goodput, Llama3CausesAreTable5) {
  int total = 0, in_place = 0;
  for (const FailureCause& c : Llama3FailureCauses()) {
    total += c.count;
    in_place += c.scope == FailureScope::kInPlace ? c.count : 0;
  }
  EXPECT_EQ(total, 419);
  EXPECT_EQ(in_place, 63);  // software bug 54, NCCL watchdog 7, dependency 2
}

TEST(Goodput, BadOptionsAreRefused) {
  GoodputOptions o;
  o.checkpoint_save_s = o.checkpoint_interval_s;
  EXPECT_THAT(o.Validate(), StatusIs(StatusCode::kInvalidArgument,
                                     HasSubstr("longer than the checkpoint write")));
  o = GoodputOptions{};
  o.busy_fraction = 1.0;
  EXPECT_THAT(o.Validate(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("busy fraction must be in")));
  o = GoodputOptions{};
  o.causes.clear();
  EXPECT_THAT(o.Validate(), StatusIs(StatusCode::kInvalidArgument, HasSubstr("at least one")));
}

TEST(Goodput, UnknownPolicyIsNamed) {
  EXPECT_THAT(ReplacementPolicyNamed("nearest").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown replacement policy")));
}

TEST(Goodput, JobThatDoesNotFitBesideTheSparesIsAnError) {
  // 144 GPUs: the whole cluster, of which the spares hold 16.
  StatusOr<ReplacementPolicy> p = ReplacementPolicyNamed("topology-spares");
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(SimulateGoodput(testing::Gb200Cluster(), SmallJob(9), *p, Busy()).status(),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("does not fit")));
}

}  // namespace
}  // namespace toposched::sim
