// The daemon's service against a real SQLite file: durability, restart by replay, idempotency,
// bad input that changes nothing.
#include "api/service.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "api/api_testing.h"
#include "api/service_testing.h"
#include "job/job_spec.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"

namespace toposched::api {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using ServiceTest = testing_api::ClockedServiceTest;

TEST_F(ServiceTest, RestartBringsBackQueueAllocationsAndEvents) {
  std::string jobs, nodes, events, metrics;
  {
    auto s = Open();
    ASSERT_NE(s, nullptr);
    // 33 jobs of 8 GPUs on 32 nodes: 32 run, one waits.
    for (int i = 0; i < 33; ++i) {
      auto r = s->Submit(testing_api::JobJson("train-" + std::to_string(i), 8), "");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->id, i + 1);
      now_us_ += 1000;
    }
    auto started = s->RunPass();
    ASSERT_TRUE(started.ok());
    EXPECT_EQ(started->size(), 32u);
    now_us_ += 1'000'000;
    ASSERT_TRUE(s->Cancel(3).ok());
    ASSERT_TRUE(s->Complete(4).ok());
    now_us_ += 1000;
    auto again = s->RunPass();  // the waiting job takes a freed node
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->size(), 1u);
    ASSERT_TRUE(s->CheckInvariants().ok());
    jobs = s->JobsJson({});
    nodes = s->NodesJson();
    events = s->EventsJson(0, 100000, "");
  }
  auto s = Open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->replayed_inputs(), 33u + 4u);
  EXPECT_EQ(s->JobsJson({}), jobs);
  EXPECT_EQ(s->NodesJson(), nodes);
  EXPECT_EQ(s->EventsJson(0, 100000, ""), events);
  EXPECT_TRUE(s->CheckInvariants().ok());
  // And it goes on: ids continue, a freed node is used.
  now_us_ += 1000;
  auto r = s->Submit(testing_api::JobJson("after-restart", 8), "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->id, 34);
  ASSERT_TRUE(s->Complete(5).ok());
  auto started = s->RunPass();
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(*started, std::vector<int64_t>{34});
}

TEST_F(ServiceTest, IdempotencyKeyGivesTheSameJobOnceAndRefusesAnotherSpec) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  auto a = s->Submit(testing_api::JobJson("a", 2), "key-1");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->created);
  auto b = s->Submit(testing_api::JobJson("a", 2), "key-1");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->created);
  EXPECT_EQ(b->id, a->id);
  EXPECT_THAT(s->Submit(testing_api::JobJson("a", 4), "key-1"),
              StatusIs(StatusCode::kAlreadyExists,
                       HasSubstr("idempotency key \"key-1\" was used for job-" +
                                 std::to_string(a->id) + " with a different spec")));
  EXPECT_EQ(json::parse(s->JobsJson({}))["jobs"].size(), 1u);
  // The key survives a restart.
  s.reset();
  s = Open();
  auto d = s->Submit(testing_api::JobJson("a", 2), "key-1");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->created);
  EXPECT_EQ(d->id, a->id);
}

TEST_F(ServiceTest, BadSpecsChangeNothing) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  const int64_t seq = s->applied_seq();
  // Each body and what its error must say: where in the body (position or field) and why.
  const std::pair<const char*, ::testing::Matcher<std::string>> bad[] = {
      {"{not json",
       AllOf(HasSubstr("request body: not valid JSON: "), HasSubstr("at line 1, column 3"))},
      {R"({"name": "x", "total_gpus": -8})",
       HasSubstr("request body: $.total_gpus: expected a positive integer, got \"-8\"")},
      {R"({"name": "x", "total_gpus": 8, "colour": "blue"})",
       HasSubstr("request body: $.colour: unknown key (expected one of: name, ")},
      {R"({"name": "x", "total_gpus": 8, "constraints": {"job": {"required": "rack"}}})",
       HasSubstr("request body: $.constraints.job.required: unknown level \"rack\" (this "
                 "cluster has: nvlink-domain, node, spine, leaf)")},
      {R"([1, 2, 3])", HasSubstr("request body: $: expected a map, got a list")},
  };
  for (const auto& [body, why] : bad) {
    EXPECT_THAT(s->Submit(body, ""), StatusIs(StatusCode::kInvalidArgument, why)) << body;
  }
  EXPECT_EQ(s->applied_seq(), seq);
  EXPECT_EQ(json::parse(s->JobsJson({}))["jobs"].size(), 0u);
  EXPECT_THAT(s->Cancel(99), StatusIs(StatusCode::kNotFound, HasSubstr("no job job-99")));
  EXPECT_EQ(s->applied_seq(), seq);
}

TEST_F(ServiceTest, TamperedLogIsDetectedOnOpen) {
  {
    auto s = Open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Submit(testing_api::JobJson("a", 8), "").ok());
    ASSERT_TRUE(s->Submit(testing_api::JobJson("b", 8), "").ok());
    ASSERT_TRUE(s->RunPass().ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/state.db").c_str(), &db), SQLITE_OK);
  // Drop the record of the pass: the stored events then say more than the inputs replay to.
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM inputs WHERE kind = 'pass'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ServiceOptions o;
  o.db_path = dir_ + "/state.db";
  o.background_passes = false;
  EXPECT_THAT(Service::Open(toposched::testing::H100Cluster(), o),
              StatusIs(StatusCode::kDataLoss,
                       HasSubstr("state.db: replay gave 2 events, the store has 4")));
}

TEST_F(ServiceTest, MetricsCountQueueGpusAndPredictedTime) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  for (int i = 0; i < 34; ++i) {
    ASSERT_TRUE(s->Submit(testing_api::JobJson("m" + std::to_string(i), 8), "").ok());
  }
  ASSERT_TRUE(s->RunPass().ok());
  const std::string m = s->MetricsText();
  EXPECT_NE(m.find("toposched_queue_length{queue=\"default\"} 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("toposched_gpus{state=\"allocated\"} 256\n"), std::string::npos);
  EXPECT_NE(m.find("toposched_gpus{state=\"free\"} 0\n"), std::string::npos);
  EXPECT_NE(m.find("toposched_placements_total 32\n"), std::string::npos);
  EXPECT_NE(m.find("toposched_decision_latency_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(m.find("toposched_job_predicted_comm_ms{job=\"job-1\",name=\"m0\"}"),
            std::string::npos);
}

// A database remembers its cluster: opened with another (other nodes), it is refused at once,
// before any replay, naming both clusters and where this one came from; a database without the
// fact (an earlier build's) gets it at its next open.
TEST_F(ServiceTest, AnotherClusterIsRefusedBeforeReplay) {
  {
    auto s = Open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Submit(testing_api::JobJson("kept", 8), "").ok());
    ASSERT_TRUE(s->RunPass().ok());
  }
  ServiceOptions o;
  o.db_path = dir_ + "/state.db";
  o.store.sync_full = false;
  o.background_passes = false;
  o.cluster_source = "gb200.yaml";
  EXPECT_THAT(
      Service::Open(toposched::testing::Gb200Cluster(), o),
      StatusIs(StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("state.db was written with the cluster \"h100-2rack\" (32 nodes, "
                               "256 GPUs)"),
                     HasSubstr("started with the cluster \"gb200-nvl72\" (36 nodes, 144 GPUs) "
                               "from gb200.yaml"))));
  // An earlier build's database: no fact yet; the next open writes it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/state.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM meta", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  {
    auto s = Open();
    ASSERT_NE(s, nullptr);
    EXPECT_NE(s->JobsJson({}).find("\"kept\""), std::string::npos);
  }
  // The open with the H100 cluster wrote the fact again: the other cluster is refused by it.
  EXPECT_THAT(Service::Open(toposched::testing::Gb200Cluster(), o),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("state.db was written with the cluster \"h100-2rack\"")));
}

// Every GPU is counted in exactly one state, in /metrics and in /api/v1/nodes: a drained node's
// idle GPUs were counted nowhere (free + allocated + unhealthy < total).
TEST_F(ServiceTest, EveryGpuIsInExactlyOneState) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  const std::string n0 = toposched::testing::H100Cluster().nodes[0].name;
  const std::string n1 = toposched::testing::H100Cluster().nodes[1].name;
  ASSERT_TRUE(s->Submit(testing_api::JobJson("one", 8), "").ok());
  ASSERT_TRUE(s->RunPass().ok());
  ASSERT_TRUE(s->SetDrained(n0, true, "").ok());  // the job's node or not: counted once
  ASSERT_TRUE(s->SetDrained(n1, true, "").ok());
  ASSERT_TRUE(
      s->ReportHealth("gpu", toposched::testing::H100Cluster().nodes[2].name, 3, "unhealthy", "")
          .ok());
  const std::string m = s->MetricsText();
  auto gauge = [&](const std::string& state) {
    const std::string key = "toposched_gpus{state=\"" + state + "\"} ";
    const size_t at = m.find(key);
    EXPECT_NE(at, std::string::npos) << state << "\n" << m;
    return at == std::string::npos ? -1 : std::stoi(m.substr(at + key.size()));
  };
  EXPECT_EQ(gauge("allocated"), 8);
  EXPECT_EQ(gauge("drained"), 8);
  EXPECT_EQ(gauge("unhealthy"), 1);
  EXPECT_EQ(gauge("free") + gauge("allocated") + gauge("unhealthy") + gauge("drained"),
            gauge("total"));
  const json nodes = json::parse(s->NodesJson())["nodes"];
  int sum = 0, total = 0;
  for (const json& n : nodes) {
    EXPECT_EQ(n["free"].get<int>() + n["allocated"].get<int>() + n["unavailable"].get<int>(),
              n["gpus"].get<int>())
        << n.dump();
    sum += n["free"].get<int>() + n["allocated"].get<int>() + n["unavailable"].get<int>();
    total += n["gpus"].get<int>();
  }
  EXPECT_EQ(sum, total);
}

}  // namespace
}  // namespace toposched::api
