// A real Prometheus server (Debian's `prometheus`) started on loopback scrapes the daemon's
// /metrics, and a PromQL query returns the queue length the daemon has.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "api/api_testing.h"
#include "api/server.h"
#include "testing/clusters.h"

namespace toposched::api {
namespace {

using nlohmann::json;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

TEST(PrometheusTest, RealPrometheusScrapesQueueLength) {
  const std::string prom = "/usr/bin/prometheus";
  if (!std::filesystem::exists(prom)) {
    GTEST_SKIP() << "prometheus is not installed (scripts/install-deps.sh installs it)";
  }
  const std::string dir = testing_api::MakeTempDir("toposched-prom");
  ServiceOptions o;
  o.db_path = dir + "/state.db";
  o.store.sync_full = false;
  o.background_passes = false;
  auto svc = Service::Open(toposched::testing::H100Cluster(), o);
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  // 32 nodes of 8 GPUs: 35 jobs of 8 GPUs leave 3 waiting in queue "research".
  for (int i = 0; i < 35; ++i) {
    ASSERT_TRUE(
        (*svc)->Submit(testing_api::JobJson("p" + std::to_string(i), 8, 0, "research"), "").ok());
  }
  ASSERT_TRUE((*svc)->RunPass().ok());
  ServerOptions so;
  so.token = "prometheus-test-token-0123456789";
  so.log_requests = false;
  auto server = Server::Start(**svc, so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  const int prom_port = FreePort();
  ASSERT_GT(prom_port, 0);
  testing_api::WriteFile(dir + "/prometheus.yml",
                         "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                         "scrape_configs:\n  - job_name: toposched\n    static_configs:\n"
                         "      - targets: ['127.0.0.1:" +
                             std::to_string((*server)->port()) + "']\n");
  std::vector<std::string> args = {
      prom, "--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/tsdb",
      "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log = dir + "/prometheus.log";
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, prom.c_str(), &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);

  // The first sample arrives some seconds after start: poll the query API.
  httplib::Client cli("127.0.0.1", prom_port);
  std::string value;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (value.empty() && std::chrono::steady_clock::now() < deadline) {
    auto r = cli.Get("/api/v1/query?query=toposched_queue_length%7Bqueue%3D%22research%22%7D");
    if (r && r->status == 200) {
      json j = json::parse(r->body, nullptr, false);
      if (j.is_object() && j["status"] == "success" && !j["data"]["result"].empty()) {
        value = j["data"]["result"][0]["value"][1].get<std::string>();
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_EQ(value, "3") << testing_api::ReadFile(log);
  server->reset();
  svc->reset();
  testing_api::RemoveDir(dir);
}

}  // namespace
}  // namespace toposched::api
