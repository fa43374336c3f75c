// Crash test: a real `toposched serve` child process, clients submitting 1,000 jobs at once with
// idempotency keys, SIGKILL in the middle, restart. Every acknowledged job must be there exactly
// once (same id as acknowledged), no GPU may be held twice, and scheduling must go on. One test
// per kill point (20 of them), each its own CTest entry.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/api_testing.h"

namespace toposched::api {
namespace {

using nlohmann::json;

constexpr int kJobs = 1000;
constexpr int kClients = 16;
constexpr const char* kToken = "crash-test-token-0123456789";

int GpusOf(int i) { return 1 << (i % 4); }  // 1, 2, 4, 8

class CrashTest : public ::testing::TestWithParam<int> {};

TEST_P(CrashTest, AcknowledgedJobsSurviveSigkillExactlyOnce) {
  const int kill_at = 25 + GetParam() * 47;  // acknowledged submits before the kill: 25..918
  const std::string dir = testing_api::MakeTempDir("toposched-crash");
  testing_api::WriteFile(dir + "/token", std::string(kToken) + "\n");
  testing_api::ServeProcess serve(TS_CLI,
                                  std::string(TS_SOURCE_DIR) + "/data/clusters/h100-2rack.yaml",
                                  dir + "/state.db", dir + "/token", dir);
  ASSERT_TRUE(serve.Start()) << serve.log(0);
  std::atomic<int> port{serve.port()};
  std::atomic<int> acked{0};
  std::mutex mu;
  std::map<int, int64_t> ack_id;           // job index -> id acknowledged
  std::map<int, int64_t> ack_before_kill;  // acknowledged before the kill
  std::atomic<bool> killed{false};

  auto client = [&](int c) {
    for (int i = c; i < kJobs; i += kClients) {
      const std::string key = "crash-key-" + std::to_string(i);
      const std::string body = testing_api::JobJson("crash-" + std::to_string(i), GpusOf(i));
      for (int attempt = 0;; ++attempt) {
        ASSERT_LT(attempt, 3000) << "job " << i << " never acknowledged";
        httplib::Client cli("127.0.0.1", port.load());
        cli.set_connection_timeout(std::chrono::seconds(2));
        cli.set_read_timeout(std::chrono::seconds(20));
        auto r =
            cli.Post("/api/v1/jobs",
                     {{"Authorization", std::string("Bearer ") + kToken}, {"Idempotency-Key", key}},
                     body, "application/json");
        if (!r) {  // the server is down: retry the same key
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        ASSERT_TRUE(r->status == 201 || r->status == 200) << r->status << " " << r->body;
        const int64_t id = json::parse(r->body)["id"].get<int64_t>();
        std::lock_guard<std::mutex> lk(mu);
        ack_id[i] = id;
        if (!killed.load()) ack_before_kill[i] = id;
        ++acked;
        break;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) threads.emplace_back(client, c);
  while (acked.load() < kill_at) std::this_thread::sleep_for(std::chrono::microseconds(200));
  {
    // Whatever was acknowledged up to here must survive.
    std::lock_guard<std::mutex> lk(mu);
    killed = true;
    serve.Kill(SIGKILL);
  }
  const std::map<int, int64_t> before = [&] {
    std::lock_guard<std::mutex> lk(mu);
    return ack_before_kill;
  }();
  ASSERT_GE(static_cast<int>(before.size()), kill_at);
  ASSERT_TRUE(serve.Start()) << serve.log(1);
  port = serve.port();
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(static_cast<int>(ack_id.size()), kJobs);

  httplib::Client cli("127.0.0.1", serve.port());
  cli.set_read_timeout(std::chrono::seconds(30));
  auto list = cli.Get("/api/v1/jobs?limit=100000");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->status, 200);
  json jobs = json::parse(list->body)["jobs"];
  // Exactly once: 1,000 jobs, one per name and key, each with the id it was acknowledged with.
  ASSERT_EQ(jobs.size(), static_cast<size_t>(kJobs));
  std::map<std::string, int64_t> by_name;
  std::set<std::string> keys;
  for (const json& j : jobs) {
    ASSERT_TRUE(by_name.emplace(j["name"].get<std::string>(), j["id"].get<int64_t>()).second)
        << "duplicate " << j["name"];
    ASSERT_TRUE(keys.insert(j["idempotency_key"].get<std::string>()).second);
  }
  for (const auto& [i, id] : ack_id) {
    ASSERT_EQ(by_name.at("crash-" + std::to_string(i)), id) << "job " << i;
  }
  for (const auto& [i, id] : before) {
    ASSERT_EQ(by_name.at("crash-" + std::to_string(i)), id) << "job " << i << " (before kill)";
  }

  // No GPU held twice, and the node view agrees with the jobs' placements.
  auto no_gpu_twice = [&](const json& all) {
    std::set<std::pair<std::string, int>> held;
    int running_gpus = 0;
    for (const json& j : all) {
      if (!j["placement"].is_object()) continue;
      for (const json& n : j["placement"]["nodes"]) {
        for (const json& g : n["gpus"]) {
          EXPECT_TRUE(held.insert({n["node"].get<std::string>(), g.get<int>()}).second)
              << n["node"] << " GPU " << g << " held twice";
          ++running_gpus;
        }
      }
    }
    auto nodes = cli.Get("/api/v1/nodes");
    EXPECT_TRUE(nodes);
    int allocated = 0;
    const json node_list = json::parse(nodes->body)["nodes"];
    for (const json& n : node_list) allocated += n["allocated"].get<int>();
    EXPECT_EQ(allocated, running_gpus) << nodes->status << " " << nodes->body.substr(0, 300);
    return running_gpus;
  };
  const int busy = no_gpu_twice(jobs);
  EXPECT_GT(busy, 0);

  // Scheduling goes on: finish every running job; the next pass starts waiting ones.
  std::set<int64_t> was_running;
  for (const json& j : jobs) {
    if (j["state"] == "RUNNING") was_running.insert(j["id"].get<int64_t>());
  }
  const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kToken}};
  for (int64_t id : was_running) {
    auto r =
        cli.Post("/api/v1/jobs/" + std::to_string(id) + "/complete", auth, "", "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
  auto pass = cli.Post("/api/v1/schedule", auth, "", "application/json");
  ASSERT_TRUE(pass);
  ASSERT_EQ(pass->status, 200);
  auto after = cli.Get("/api/v1/jobs?limit=100000");
  ASSERT_TRUE(after);
  json jobs2 = json::parse(after->body)["jobs"];
  int running = 0;
  for (const json& j : jobs2) {
    if (j["state"] == "RUNNING") {
      ++running;
      EXPECT_EQ(was_running.count(j["id"].get<int64_t>()), 0u);
    }
  }
  EXPECT_GT(running, 0);
  no_gpu_twice(jobs2);
  serve.Kill(SIGTERM);
  testing_api::RemoveDir(dir);
}

INSTANTIATE_TEST_SUITE_P(KillPoints, CrashTest, ::testing::Range(0, 20));

}  // namespace
}  // namespace toposched::api
