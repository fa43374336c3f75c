// `toposched simulate` end to end: the report files and their contract fields, byte-identical
// reruns, and bad input (exit 1 with file:line).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_util.h"
#include "testing/status_matchers.h"

namespace toposched::cli_testing {
namespace {

using ::toposched::testing::HasSubstr;

TEST(SimulateCliTest, WritesTheReportContract) {
  const std::string out = TempDir() + "/sim1";
  Result r =
      RunCli("simulate --cluster " + kSrc + "/data/clusters/h100-2rack.yaml --trace " + kSrc +
             "/data/traces/tiresias-60_job.csv --policy toposched,first-fit --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("| toposched |")) << r.out;
  auto j = nlohmann::json::parse(Slurp(out + "/report.json"));
  ASSERT_TRUE(j["policies"].contains("toposched"));
  ASSERT_TRUE(j["policies"].contains("first-fit"));
  for (const char* k :
       {"jobs", "mean_jct_s", "p50_jct_s", "p99_jct_s", "mean_queue_s", "makespan_s",
        "gpu_utilization", "mean_comm_slowdown", "failures", "preemptions"}) {
    EXPECT_TRUE(j["policies"]["toposched"].contains(k)) << k;
  }
  EXPECT_EQ(j["policies"]["toposched"]["jobs"], 60);
  EXPECT_EQ(j["trace"]["format"], "tiresias");  // guessed from the header
  // jobs.csv: the header and a row per job of each policy (60 jobs, two policies).
  const std::string jobs = Slurp(out + "/jobs.csv");
  EXPECT_EQ(jobs.rfind("policy,seed,job,gpus,", 0), 0u);
  EXPECT_EQ(std::count(jobs.begin(), jobs.end(), '\n'), 1 + 2 * 60);
  for (const char* f :
       {"report.md", "jobs.csv", "jct_cdf.svg", "utilization.svg", "slowdown_by_size.svg"}) {
    const std::string text = Slurp(out + "/" + f);
    ASSERT_FALSE(text.empty()) << f;
    if (std::string(f).find(".svg") != std::string::npos) {
      EXPECT_EQ(text.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << f;
      EXPECT_THAT(text, HasSubstr("</svg>")) << f;
    }
  }

  // Same command, same seed: byte-identical files.
  const std::string out2 = TempDir() + "/sim2";
  Result r2 =
      RunCli("simulate --cluster " + kSrc + "/data/clusters/h100-2rack.yaml --trace " + kSrc +
             "/data/traces/tiresias-60_job.csv --policy toposched,first-fit --out " + out2);
  ASSERT_EQ(r2.code, 0) << r2.err;
  for (const char* f : {"report.json", "report.md", "jobs.csv", "jct_cdf.svg", "utilization.svg",
                        "slowdown_by_size.svg"}) {
    EXPECT_EQ(Slurp(out + "/" + f), Slurp(out2 + "/" + f)) << f;
  }
}

// The report's six files are written as a set: when one cannot be written, the earlier report
// in --out stays whole (not report.json of the new run beside jobs.csv of the old one) and no
// temporary is left behind.
TEST(SimulateCliTest, AFailedWriteLeavesTheEarlierReportWhole) {
  const std::string out = TempDir() + "/sim-set";
  const std::string run = "simulate --cluster " + kSrc + "/data/clusters/h100-2rack.yaml --trace " +
                          kSrc + "/data/traces/tiresias-60_job.csv --out " + out + " --policy ";
  Result first = RunCli(run + "first-fit");
  ASSERT_EQ(first.code, 0) << first.err;
  const std::string json = Slurp(out + "/report.json"), md = Slurp(out + "/report.md");
  // jobs.csv's temporary cannot be opened: the second run's files cannot all be written.
  std::filesystem::create_directory(out + "/jobs.csv.tmp");
  Result second = RunCli(run + "spread");
  EXPECT_EQ(second.code, 1);
  EXPECT_THAT(second.err, HasSubstr("jobs.csv.tmp: cannot open for writing")) << second.err;
  EXPECT_EQ(Slurp(out + "/report.json"), json);
  EXPECT_EQ(Slurp(out + "/report.md"), md);
  EXPECT_FALSE(std::filesystem::exists(out + "/report.json.tmp"));
  EXPECT_FALSE(std::filesystem::exists(out + "/report.md.tmp"));
  // Once it can, the whole new report replaces the old one.
  std::filesystem::remove(out + "/jobs.csv.tmp");
  Result third = RunCli(run + "spread");
  ASSERT_EQ(third.code, 0) << third.err;
  EXPECT_TRUE(nlohmann::json::parse(Slurp(out + "/report.json"))["policies"].contains("spread"));
  EXPECT_THAT(Slurp(out + "/jobs.csv"), HasSubstr("\nspread,"));
}

TEST(SimulateCliTest, OpenbNodeListAndMaxJobs) {
  const std::string out = TempDir() + "/sim-openb";
  Result r = RunCli("simulate --cluster " + kSrc + "/data/traces/openb_node_list_gpu_node.csv" +
                    " --trace " + kSrc + "/data/traces/openb_pod_list_default-head400.csv" +
                    " --trace-format openb --policy best-fit --max-jobs 100 --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(Slurp(out + "/report.json"));
  EXPECT_EQ(j["cluster"]["gpus"], 6212);
  EXPECT_EQ(j["trace"]["jobs"], 100);
  // Fractional pods share GPUs; none is rounded up any more.
  EXPECT_EQ(j["trace"]["fractional_rounded_up"].get<int>(), 0);
  EXPECT_GT(j["trace"]["fractional_shared"].get<int>(), 0);
  EXPECT_THAT(Slurp(out + "/report.md"), HasSubstr("requests for a fraction of a GPU share GPUs"));
}

TEST(SimulateCliTest, BadTraceNamesTheLine) {
  const std::string bad = WriteTemp("bad-trace.csv", "submit_s,duration_s,gpus\n0,10,1\n5,ten,2\n");
  Result r = RunCli("simulate --cluster " + kSrc + "/data/clusters/h100-2rack.yaml --trace " + bad +
                    " --trace-format csv --policy toposched --out " + TempDir() + "/x");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("bad-trace.csv:3: column \"duration_s\": expected a number, got \"ten\""))
      << r.err;
}

TEST(SimulateCliTest, EstimatedBackfillIsReportedAndCheckedWhenParsed) {
  const std::string base = "simulate --cluster " + kSrc +
                           "/data/clusters/h100-2rack.yaml --trace " + kSrc +
                           "/data/traces/tiresias-60_job.csv --policy first-fit --out " + TempDir();
  for (const std::string& who : {std::string(""), std::string("toposched"), std::string("all")}) {
    Result r = RunCli(base + "/eb-" + who + (who.empty() ? "" : " --estimated-backfill " + who));
    ASSERT_EQ(r.code, 0) << r.err;
    auto j = nlohmann::json::parse(Slurp(TempDir() + "/eb-" + who + "/report.json"));
    EXPECT_EQ(j["estimated_backfill"], who.empty() ? "off" : who);
  }
  Result bad = RunCli(base + "/eb-bad --estimated-backfill kueue-tas");
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err,
              HasSubstr("--estimated-backfill: expected toposched or all, got \"kueue-tas\""))
      << bad.err;
}

// --no-rail-alignment runs toposched with the rails plugin "none" and says so in report.json;
// without it the report says the rail work was on.
TEST(SimulateCliTest, RailAlignmentAblationIsReported) {
  const std::string base = "simulate --cluster " + kSrc +
                           "/data/clusters/h100-2rack.yaml --trace " + kSrc +
                           "/data/traces/tiresias-60_job.csv --policy toposched --out " + TempDir();
  for (const bool off : {false, true}) {
    const std::string dir = off ? "/rails-none" : "/rails-align";
    Result r = RunCli(base + dir + (off ? " --no-rail-alignment" : ""));
    ASSERT_EQ(r.code, 0) << r.err;
    auto j = nlohmann::json::parse(Slurp(TempDir() + dir + "/report.json"));
    EXPECT_EQ(j["rail_alignment"], !off);
    EXPECT_EQ(j["policies"]["toposched"]["jobs"], 60) << "every job completes either way";
  }
}

TEST(SimulateCliTest, UnknownPolicyIsBadInput) {
  Result r = RunCli("simulate --cluster " + kSrc + "/data/clusters/h100-2rack.yaml --trace " +
                    kSrc + "/data/traces/tiresias-60_job.csv --policy fastest");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("unknown policy \"fastest\"")) << r.err;
}

}  // namespace
}  // namespace toposched::cli_testing
