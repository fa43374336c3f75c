// Issue 18, item 1: a few idle or slow clients must not stop the service. Before the daemon's
// own listener (src/api/http_listener.h), each connection held one of 16 worker threads for as
// long as its client liked: 200 idle connections or 16 slowloris ones (a header line every few
// seconds, each inside the per-read timeout) left /healthz and the extender unanswered. These
// tests hold such connections open over real loopback sockets and time what still gets through.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "api/api_testing.h"
#include "api/server.h"
#include "api/service.h"
#include "api/service_testing.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"

namespace toposched::api {
namespace {

using ::toposched::testing::HasSubstr;

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kSlowClientsTls = std::string(TS_SOURCE_DIR) + "/tests/api/testdata/tls/";
constexpr const char* kSlowToken = "slow-clients-token-0123456789";

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void SendAll(int fd, const std::string& s) {
  for (size_t at = 0; at < s.size();) {
    const ssize_t n = send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

// Everything the server sends until it closes the connection or `wait_ms` pass in silence.
std::string ReadAll(int fd, int wait_ms) {
  timeval tv{wait_ms / 1000, (wait_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  return got;
}

// True when the server has closed the connection (EOF or reset) within `wait_ms`.
bool ClosedByServer(int fd, int wait_ms) {
  timeval tv{wait_ms / 1000, (wait_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c;
  const ssize_t n = recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

std::string SlowFilterBody() {
  json names = json::array();
  for (const auto& n : toposched::testing::H100Cluster().nodes) names.push_back(n.name);
  json pod = {{"kind", "Pod"},
              {"apiVersion", "v1"},
              {"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "uid-p"}}},
              {"spec",
               {{"containers",
                 {{{"name", "t"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
  return json{{"Pod", pod}, {"NodeNames", names}}.dump();
}

class SlowClientsTest : public ::testing::Test {
 protected:
  void Start(int read_timeout_ms, int max_connections) {
    dir_ = testing_api::MakeTempDir("toposched-slow");
    auto s = testing_api::OpenTestService(dir_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    service_ = std::move(s).value();
    ServerOptions so =
        testing_api::ExtenderServerOptions(service_.get(), kSlowToken, kSlowClientsTls);
    so.read_timeout_ms = read_timeout_ms;
    so.max_connections = max_connections;
    auto srv = Server::Start(*service_, so);
    ASSERT_TRUE(srv.ok()) << srv.status().ToString();
    server_ = std::move(srv).value();
  }
  void TearDown() override {
    for (int fd : fds_) close(fd);
    server_.reset();
    service_.reset();
    testing_api::RemoveDir(dir_);
  }
  int Open(int port) {
    const int fd = Connect(port);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
  // Milliseconds one GET /healthz takes on a new connection; -1 when it fails.
  double HealthMs() {
    const auto t0 = Clock::now();
    httplib::Client c("127.0.0.1", server_->port());
    c.set_connection_timeout(std::chrono::seconds(5));
    c.set_read_timeout(std::chrono::seconds(5));
    auto r = c.Get("/healthz");
    if (!r || r->status != 200) return -1;
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }

  std::string dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<Server> server_;
  std::vector<int> fds_;
};

TEST_F(SlowClientsTest, HealthAndTheExtenderAnswerBehindIdleAndSlowlorisConnections) {
  Start(/*read_timeout_ms=*/2000, /*max_connections=*/512);
  for (int i = 0; i < 200; ++i) ASSERT_GE(Open(server_->port()), 0) << "idle " << i;
  for (int i = 0; i < 100; ++i) ASSERT_GE(Open(server_->extender_port()), 0) << "idle tls " << i;
  std::vector<int> slow;
  for (int i = 0; i < 16; ++i) {
    slow.push_back(Open(server_->port()));
    ASSERT_GE(slow.back(), 0);
    SendAll(slow.back(), "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n");
  }
  // Slowloris: a header line every 400 ms, well inside any per-read timeout, for 3 s.
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    for (int round = 0; round < 8 && !stop; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      for (int fd : slow) SendAll(fd, "X-Slow-" + std::to_string(round) + ": 1\r\n");
    }
  });
  int over_1s = 0;
  double worst = 0;
  for (int i = 0; i < 16; ++i) {
    const double ms = HealthMs();
    if (ms < 0 || ms > 1000) ++over_1s;
    worst = std::max(worst, ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(over_1s, 0) << "health probes failed or slower than 1 s; worst " << worst << " ms";
  std::printf(
      "health probes behind 200 + 100 idle and 16 slowloris connections: 16, worst %.1f ms\n",
      worst);

  // kube-scheduler's client, with its certificate, within its 5 s httpTimeout
  // (deploy/kubernetes/scheduler-config.yaml): here within 1 s.
  httplib::SSLClient ext("127.0.0.1", server_->extender_port(), kSlowClientsTls + "client.crt",
                         kSlowClientsTls + "client.key");
  ext.set_ca_cert_path((kSlowClientsTls + "ca.crt").c_str());
  ext.enable_server_certificate_verification(true);
  ext.set_read_timeout(std::chrono::seconds(5));
  auto t0 = Clock::now();
  auto f = ext.Post("/extender/filter", SlowFilterBody(), "application/json");
  ASSERT_TRUE(f) << httplib::to_string(f.error());
  EXPECT_EQ(f->status, 200) << f->body;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);

  // A change with the token, on the main listener, also gets through.
  httplib::Client main("127.0.0.1", server_->port());
  t0 = Clock::now();
  auto sub = main.Post("/api/v1/jobs", {{"Authorization", std::string("Bearer ") + kSlowToken}},
                       testing_api::JobJson("through", 1), "application/json");
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->status, 201) << sub->body;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);

  trickle.join();
  // The slow heads were cut at the 2 s read timeout, the idle connections too: none is open
  // after it, though their clients never stopped or never started.
  int slow_open = 0;
  for (int fd : slow) slow_open += ClosedByServer(fd, 1500) ? 0 : 1;
  EXPECT_EQ(slow_open, 0) << "slowloris connections still open past the head's timeout";
  int idle_open = 0;
  for (size_t i = 0; i < 200; ++i) idle_open += ClosedByServer(fds_[i], 1500) ? 0 : 1;
  EXPECT_EQ(idle_open, 0) << "idle connections still open past the head's timeout";
  // The submit and the filtered pod's group; none of the slow requests.
  EXPECT_EQ(json::parse(service_->JobsJson({}))["jobs"].size(), 2u);
}

TEST_F(SlowClientsTest, BeyondTheConnectionLimitA503NamesItAndHealthIsStillAnswered) {
  Start(/*read_timeout_ms=*/5000, /*max_connections=*/8);
  for (int i = 0; i < 8; ++i) ASSERT_GE(Open(server_->port()), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all 8 accepted
  const int over = Open(server_->port());
  ASSERT_GE(over, 0);
  SendAll(over, "GET /api/v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string got = ReadAll(over, 2000);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_THAT(got, HasSubstr("--max-connections")) << got;
  EXPECT_THAT(got, HasSubstr("Retry-After: 1")) << got;
  const double ms = HealthMs();
  EXPECT_GE(ms, 0) << "GET /healthz beyond the connection limit was not answered";
  EXPECT_LT(ms, 1000);
}

TEST_F(SlowClientsTest, ASlowBodyIsCutAtTheReadTimeoutAndNothingIsSubmitted) {
  Start(/*read_timeout_ms=*/1000, /*max_connections=*/512);
  const std::string body = testing_api::JobJson("slow-body", 1);
  const int fd = Open(server_->port());
  ASSERT_GE(fd, 0);
  SendAll(fd, std::string("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
                  kSlowToken + "\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n");
  const auto t0 = Clock::now();
  bool closed = false;
  for (size_t i = 0; i + 1 < body.size() && !closed; ++i) {  // all but the last byte
    SendAll(fd, body.substr(i, 1));
    closed = ClosedByServer(fd, 200);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_TRUE(closed) << "a body trickled over " << s << " s was still being read";
  EXPECT_LT(s, 2.0);
  EXPECT_EQ(json::parse(service_->JobsJson({}))["jobs"].size(), 0u);
}

TEST_F(SlowClientsTest, OversizedHeadsAndBodiesAreRefusedNamingTheLimit) {
  Start(/*read_timeout_ms=*/5000, /*max_connections=*/512);
  const int fd = Open(server_->port());
  ASSERT_GE(fd, 0);
  SendAll(fd,
          "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n");
  const std::string got = ReadAll(fd, 2000);
  EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got.substr(0, 200);
  EXPECT_THAT(got, HasSubstr("limit of 16384 bytes")) << got.substr(0, 400);

  // A Content-Length over --max-body-bytes is refused from the head alone: 413, not 400.
  const int big = Open(server_->port());
  ASSERT_GE(big, 0);
  SendAll(big, std::string("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
                   kSlowToken +
                   "\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n");
  const std::string refused = ReadAll(big, 2000);
  EXPECT_EQ(refused.rfind("HTTP/1.1 413", 0), 0u) << refused;
  EXPECT_THAT(refused, HasSubstr("limit of 1048576 bytes")) << refused;
  EXPECT_EQ(json::parse(service_->JobsJson({}))["jobs"].size(), 0u);
}

// A chunked body's trailer (and a chunk's extensions) are outside both the head limit and the
// body limit; the read buffer's own bound stops an endless one (the review of the listener found
// that it would otherwise grow until the body's deadline).
TEST_F(SlowClientsTest, AnEndlessChunkedTrailerIsRefusedAtTheBufferLimit) {
  Start(/*read_timeout_ms=*/5000, /*max_connections=*/512);
  const int fd = Open(server_->port());
  ASSERT_GE(fd, 0);
  SendAll(fd, std::string("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
                  kSlowToken + "\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n0\r\nX-Trailer: ");
  const std::string piece(64 * 1024, 'a');
  const auto t0 = Clock::now();
  for (int i = 0; i < 64; ++i) {  // up to 4 MiB
    if (send(fd, piece.data(), piece.size(), MSG_NOSIGNAL | MSG_DONTWAIT) <= 0) break;
  }
  const std::string got = ReadAll(fd, 2000);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 4.0);
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got.substr(0, 300);
  // The answer comes at once, not after the 5 s body deadline: the buffer hit its bound.
  EXPECT_EQ(json::parse(service_->JobsJson({}))["jobs"].size(), 0u);
}

}  // namespace
}  // namespace toposched::api
