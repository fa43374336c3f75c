// toposched's own job events as evidence: each line below is what the scheduler wrote in the
// golden transcripts (tests/sched/testdata/golden/*.out) or what `diagnose --server` renders
// for a pending job, and each gives its cause at the top, naming the node where there is one.
#include <gtest/gtest.h>

#include <string>

#include "diag/diagnose.h"

namespace toposched::diag {
namespace {

Cause Top(const std::string& text) {
  Diagnosis d = DiagnoseText(text, "job-events", nullptr);
  EXPECT_FALSE(d.causes.empty()) << text;
  return d.causes.empty() ? Cause{} : d.causes[0];
}

TEST(SchedulerEvents, EachEventGivesItsCause) {
  const struct {
    const char* line;
    Category category;
    const char* summary_has;
    const char* fix_has;
  } cases[] = {
      {"10.000000s job-1 RUNNING -> NODE_FAIL: node gpu002 unhealthy (PSU failure); on_failure: "
       "requeue",
       Category::kNodeFailure, "node gpu002 of the job failed", "toposched drain gpu002"},
      {"20.000000s job-2 RUNNING -> FAILED: GPU 3 of gpu003 unhealthy (Xid 79); on_failure: fail",
       Category::kGpuFault, "on node gpu003", "drain gpu003"},
      {"20.000000s job-4 RUNNING -> PREEMPTED: preempted by job-6 (priority 500)",
       Category::kPreempted, "preempted", "priority"},
      {"40.000000s job-4 RUNNING -> PREEMPTED: NVLinks of GPU 5 on gpu006 degraded (nvlink health "
       "report: degraded), predicted 0.259 -> 0.505 ms; on_degraded: wait, stopped to wait for a "
       "better placement",
       Category::kNcclDegraded, "on node gpu006", "nvlink -e"},
      {"1000.000000s job-3 RUNNING -> COMPLETING: time limit: SIGTERM sent", Category::kTimeout,
       "time limit", "time_limit"},
      {"130.000000s job-5 RUNNING -> COMPLETING: cancelled by user: SIGTERM sent",
       Category::kCancelled, "cancelled", ""},
      {"job-9 PENDING: needs 128 GPUs in one leaf; 64 free in leaf0", Category::kUnschedulable,
       "pending: needs 128 GPUs in one leaf", "explain"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    const Cause top = Top(c.line);
    EXPECT_EQ(top.category, c.category) << CategoryName(top.category);
    EXPECT_NE(top.summary.find(c.summary_has), std::string::npos) << top.summary;
    EXPECT_NE(top.fix.find(c.fix_has), std::string::npos) << top.fix;
    ASSERT_FALSE(top.evidence.empty());
    EXPECT_EQ(top.evidence[0].text, c.line);
    EXPECT_EQ(top.evidence[0].source, Source::kScheduler);
  }
}

TEST(SchedulerEvents, OrdinaryEventsAreNoCause) {
  const Diagnosis d = DiagnoseText(
      "0.000000s job-1 PENDING -> RUNNING: scheduled (8 GPUs)\n"
      "50.000000s job-1 RUNNING -> COMPLETING: job finished: running epilog\n"
      "50.000000s job-1 COMPLETING -> COMPLETED: epilog done\n",
      "job-events", nullptr);
  EXPECT_TRUE(d.causes.empty()) << CategoryName(d.causes[0].category);
}

TEST(SchedulerEvents, CancelledIsInTheVocabulary) {
  EXPECT_STREQ(CategoryName(Category::kCancelled), "cancelled");
  EXPECT_EQ(ParseCategory("cancelled"), Category::kCancelled);
  EXPECT_EQ(ParseCategory("unknown"), Category::kUnknown);
}

}  // namespace
}  // namespace toposched::diag
