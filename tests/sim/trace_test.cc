// Trace readers on the real trace files copied into data/traces, their errors (file:line:
// column), and the layout rule for traces without a parallel layout.
#include "sim/trace.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/trace_spec.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"

namespace toposched::sim {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using testing::TracePath;

TEST(TraceTest, PhillyPrefixReadsEveryRowSortedFromZero) {
  auto t = ReadTraceFile(TracePath("philly-head200.csv"), TraceFormat::kPhilly);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 200u);
  std::map<int, int> sizes;
  for (const TraceJob& j : t->jobs) ++sizes[j.gpus];
  EXPECT_EQ(sizes, (std::map<int, int>{{1, 197}, {4, 2}, {8, 1}}));
  EXPECT_EQ(t->jobs.front().submit_us, 0);
  for (size_t i = 1; i < t->jobs.size(); ++i) {
    EXPECT_LE(t->jobs[i - 1].submit_us, t->jobs[i].submit_us);
  }
  // Row 2 of the file: "2017-10-09 07:01:55,66.0,1,66.0,11cb48"; row 3 is 48 min 52 s earlier.
  const TraceJob* r2 = nullptr;
  const TraceJob* r3 = nullptr;
  for (const TraceJob& j : t->jobs) {
    if (j.line == 2) r2 = &j;
    if (j.line == 3) r3 = &j;
  }
  ASSERT_TRUE(r2 && r3);
  EXPECT_EQ(r2->duration_us, 66'000'000);
  EXPECT_EQ(r2->user, "11cb48");
  EXPECT_EQ(r2->submit_us - r3->submit_us, (48 * 60 + 52) * 1'000'000LL);
}

TEST(TraceTest, OpenbSkipsCpuPodsAndCountsFractions) {
  auto t = ReadTraceFile(TracePath("openb_pod_list_default-head400.csv"), TraceFormat::kOpenb);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(static_cast<int>(t->jobs.size()) + t->skipped, 400);
  EXPECT_GT(t->skipped, 0);
  EXPECT_GT(t->fractional, 0);
  // openb-pod-0001: 1 GPU at 460 milli, created and scheduled at 427061, deleted at 12902960.
  const TraceJob* p1 = nullptr;
  for (const TraceJob& j : t->jobs) {
    if (j.name == "openb-pod-0001") p1 = &j;
  }
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->gpus, 1);
  EXPECT_EQ(p1->gpu_milli, 460);
  EXPECT_EQ(p1->duration_us, (12902960LL - 427061LL) * 1'000'000LL);
  EXPECT_EQ(p1->submit_us, 427061LL * 1'000'000LL);  // pod 0000 was created at 0
}

TEST(TraceTest, TiresiasSampleHasSixtyJobs) {
  auto t = ReadTraceFile(TracePath("tiresias-60_job.csv"), TraceFormat::kTiresias);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 60u);
  EXPECT_EQ(t->jobs[0].name, "job-0-vgg19");
  EXPECT_EQ(t->jobs[0].model, "vgg19");  // model_name: the step model's catalog entry
  EXPECT_EQ(t->jobs[0].duration_us, 164'000'000);
  EXPECT_EQ(t->jobs[1].gpus, 8);
}

TEST(TraceTest, GenericCsvModelColumn) {
  auto t = ParseTrace("submit_s,duration_s,gpus,model\n0,10,4,resnet50\n5,10,2,\n", "m.csv",
                      TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].model, "resnet50");
  EXPECT_EQ(t->jobs[1].model, "");
}

TEST(TraceTest, GenericCsvReadsLayoutAndModel) {
  auto t = ReadTraceFile(TracePath("example-generic.csv"), TraceFormat::kCsv, 3);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 3u);  // --max-jobs 3
  EXPECT_EQ(t->jobs[0].name, "pretrain-a");
  EXPECT_EQ(t->jobs[0].tp, 8);
  EXPECT_EQ(t->jobs[0].dp, 8);
  EXPECT_DOUBLE_EQ(t->jobs[0].model_params, 70e9);
  EXPECT_EQ(t->jobs[2].model_params, 0);
}

struct BadCase {
  const char* name;
  TraceFormat format;
  const char* text;
  const char* message;
};

class TraceErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(TraceErrorTest, NamesFileLineAndColumn) {
  const BadCase& c = GetParam();
  auto t = ParseTrace(c.text, "t.csv", c.format);
  ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.message)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TraceErrorTest,
    ::testing::Values(
        BadCase{"philly_bad_duration", TraceFormat::kPhilly,
                "timestamp,duration,num_gpus,gpu_time,cluster\n"
                "2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:01:56,abc,1,1,a\n",
                "t.csv:3: column \"duration\": expected a number, got \"abc\""},
        BadCase{"philly_bad_time", TraceFormat::kPhilly,
                "timestamp,duration,num_gpus\n2017-13-09 07:01:55,66,1\n",
                "t.csv:2: column \"timestamp\": expected YYYY-MM-DD HH:MM:SS"},
        BadCase{"philly_zero_gpus", TraceFormat::kPhilly,
                "timestamp,duration,num_gpus\n2017-10-09 07:01:55,66,0\n",
                "t.csv:2: column \"num_gpus\": must be in [1, 65536], got 0"},
        BadCase{"missing_column", TraceFormat::kPhilly, "timestamp,num_gpus\n",
                "t.csv:1: philly trace: missing column \"duration\""},
        BadCase{"short_row", TraceFormat::kTiresias, "job_id,num_gpu,submit_time,duration\n1,2,3\n",
                "t.csv:2: expected 4 fields (as the header), got 3"},
        BadCase{"openb_fraction_of_two", TraceFormat::kOpenb,
                "name,num_gpu,gpu_milli,creation_time,deletion_time\np,2,500,0,10\n",
                "t.csv:2: column \"gpu_milli\": a fraction of a GPU is only possible"},
        BadCase{"openb_deleted_before_start", TraceFormat::kOpenb,
                "name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
                "p,1,1000,5,10,20\n",
                "t.csv:2: column \"deletion_time\": before the pod started"},
        BadCase{"generic_unknown_column", TraceFormat::kCsv,
                "submit_s,duration_s,gpus,colour\n0,1,1,red\n",
                "t.csv:1: unknown column \"colour\""},
        BadCase{"generic_zero_duration", TraceFormat::kCsv,
                "# comment\nsubmit_s,duration_s,gpus\n0,0,1\n", "t.csv:3: duration must be > 0"},
        BadCase{"empty", TraceFormat::kCsv, "\n\n", "t.csv: empty trace"}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

TEST(TraceTest, UnknownFormatIsAnError) {
  EXPECT_THAT(ParseTraceFormat("yarn"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown trace format \"yarn\"")));
  ASSERT_TRUE(ParseTraceFormat("openb").ok());
  EXPECT_EQ(*ParseTraceFormat("openb"), TraceFormat::kOpenb);
}

TEST(TraceTest, MissingFileIsNotFound) {
  auto t = ReadTraceFile("/nonexistent/trace.csv", TraceFormat::kCsv);
  ASSERT_THAT(t, StatusIs(StatusCode::kNotFound, HasSubstr("/nonexistent/trace.csv: cannot read")));
}

struct LayoutCase {
  int gpus, max_tp, tp, dp;
};

// A transformer without a layout (here 7e9 parameters); a job without a model size is
// data-parallel (step_model_test.cc).
TEST(LayoutRuleTest, TpWithinTheNodeThenDp) {
  const LayoutCase cases[] = {{1, 8, 1, 1},  {4, 8, 4, 1},  {6, 8, 6, 1},  {8, 8, 8, 1},
                              {12, 8, 4, 3}, {16, 8, 8, 2}, {24, 8, 8, 3}, {128, 8, 8, 16},
                              {4, 2, 2, 2},  {8, 4, 4, 2},  {3, 2, 1, 3}};
  for (const LayoutCase& c : cases) {
    TraceJob j;
    j.name = "j";
    j.line = 7;
    j.gpus = c.gpus;
    j.duration_us = 1;
    j.model_params = 7e9;
    auto s = MakeJobSpec(j, "t.csv", c.max_tp);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->layout.tp, c.tp) << c.gpus << " GPUs, max_tp " << c.max_tp;
    EXPECT_EQ(s->layout.dp, c.dp) << c.gpus << " GPUs, max_tp " << c.max_tp;
    EXPECT_EQ(s->total_gpus, c.gpus);
    EXPECT_EQ(s->gpus_per_replica, c.tp);
  }
}

TEST(LayoutRuleTest, ALayoutThatDoesNotMultiplyOutNamesTheLine) {
  TraceJob j;
  j.name = "bad";
  j.line = 9;
  j.gpus = 10;
  j.tp = 4;
  j.duration_us = 1;
  auto s = MakeJobSpec(j, "t.csv", 8);
  ASSERT_THAT(s, StatusIs(StatusCode::kInvalidArgument, HasSubstr("t.csv:9: job \"bad\"")));
}

}  // namespace
}  // namespace toposched::sim
