// The daemon waits or spreads by the run times jobs declare in their specs (`estimate`,
// sched::SpecRunTimes): a job that fits now only with its TP group split over two nodes waits
// for a whole node that a running job is expected to free soon, says so in numbers, survives a
// restart by replay with the same decision, and starts there; a job without an estimate is
// placed at once as before. On the example H100 cluster (32 nodes of 8 GPUs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/service.h"
#include "api/service_testing.h"
#include "testing/clusters.h"

namespace toposched::api {
namespace {

using nlohmann::json;

// A TP-only job of `gpus` GPUs (8B model); with `run` ("10h") also its estimate.
std::string EstimateSpec(const std::string& name, int gpus, const std::string& run = "",
                         double comm_share = 0.5) {
  std::string s = "{\"name\": \"" + name + "\", \"user\": \"tester\", \"replicas\": 1, " +
                  "\"gpus_per_replica\": " + std::to_string(gpus) +
                  ", \"layout\": {\"tp\": " + std::to_string(gpus) + "}, \"model_params\": \"8B\"";
  if (!run.empty()) {
    s += ", \"estimate\": {\"run_time\": \"" + run +
         "\", \"comm_share\": " + std::to_string(comm_share) + "}";
  }
  return s + "}";
}

class ServiceEstimateTest : public testing_api::ClockedServiceTest {
 protected:
  static json Job(const Service& s, int64_t id) {
    auto j = s.JobJson(id, /*with_events=*/true);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? json::parse(*j) : json();
  }

  // Fills the cluster: jobs 1-30 of 8 GPUs (job 1 expected to end in 600 s, the rest in 10 h),
  // then jobs 31-34 of 4 GPUs, two per node on the last two nodes; jobs 31 and 33 end, leaving
  // 4 free GPUs on each of those two nodes.
  void Fill(Service& s) {
    for (int i = 1; i <= 30; ++i) {
      auto r =
          s.Submit(EstimateSpec("fill-" + std::to_string(i), 8, i == 1 ? "600s" : "10h", 0.2), "");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    for (int i = 31; i <= 34; ++i) {
      auto r = s.Submit(EstimateSpec("half-" + std::to_string(i), 4, "10h", 0.2), "");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    auto started = s.RunPass();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_EQ(started->size(), 34u);
    const std::string a = Job(s, 31)["placement"]["nodes"][0]["node"];
    const std::string b = Job(s, 33)["placement"]["nodes"][0]["node"];
    ASSERT_NE(a, b) << "the two ending 4-GPU jobs must free GPUs on two nodes";
    now_us_ += 10'000'000;
    ASSERT_TRUE(s.Complete(31).ok());
    ASSERT_TRUE(s.Complete(33).ok());
  }
};

TEST_F(ServiceEstimateTest, AJobWithAnEstimateWaitsForTheNodeExpectedToFreeAndStartsThere) {
  std::string jobs_before;
  std::string first_node;
  {
    auto s = Open();
    ASSERT_NE(s, nullptr);
    Fill(*s);
    first_node = Job(*s, 1)["placement"]["nodes"][0]["node"];
    // The running job's estimate shows, with its expected end (start + 600 s).
    const json j1 = Job(*s, 1);
    EXPECT_EQ(j1["estimate"]["run_s"], 600);
    EXPECT_EQ(j1["placement"]["expected_end_us"],
              j1["placement"]["decision_us"].get<int64_t>() + 600'000'000);
    auto r = s->Submit(EstimateSpec("long", 8, "10h", 0.5), "");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->id, 35);
    auto started = s->RunPass();
    ASSERT_TRUE(started.ok());
    EXPECT_TRUE(started->empty()) << "long fits now only split over two nodes; it waits";
    const json j = Job(*s, 35);
    EXPECT_EQ(j["state"], "PENDING");
    const std::string why = j["explanation"];
    EXPECT_NE(why.find("waiting for " + first_node), std::string::npos) << why;
    EXPECT_NE(why.find("earlier than starting now"), std::string::npos) << why;
    jobs_before = s->JobsJson({});
  }
  // A restart replays the stored inputs through a fresh scheduler: the same decision.
  auto s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->JobsJson({}), jobs_before);
  // Job 1 ends when expected; long takes its node whole.
  now_us_ += 600'000'000;
  ASSERT_TRUE(s->Complete(1).ok());
  auto started = s->RunPass();
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(*started, std::vector<int64_t>{35});
  const json j = Job(*s, 35);
  ASSERT_EQ(j["placement"]["nodes"].size(), 1u);
  EXPECT_EQ(j["placement"]["nodes"][0]["node"], first_node);
  EXPECT_EQ(j["placement"]["predicted_ms"], j["placement"]["best_possible_ms"]);
  EXPECT_TRUE(s->CheckInvariants().ok());
}

TEST_F(ServiceEstimateTest, AJobWithoutAnEstimateStartsAtOnceSplit) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  Fill(*s);
  auto r = s->Submit(EstimateSpec("plain", 8), "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto started = s->RunPass();
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(*started, std::vector<int64_t>{35});
  const json j = Job(*s, 35);
  EXPECT_EQ(j["placement"]["nodes"].size(), 2u);
  EXPECT_FALSE(j.contains("estimate"));
  EXPECT_FALSE(j["placement"].contains("expected_end_us"));
  EXPECT_GT(j["placement"]["predicted_ms"].get<double>(),
            j["placement"]["best_possible_ms"].get<double>());
}

}  // namespace
}  // namespace toposched::api
