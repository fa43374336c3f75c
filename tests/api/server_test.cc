// The HTTP server against a real SQLite file, on 127.0.0.1 port 0: the REST contract, the token,
// the limits, and bad requests that get a clear 4xx and change nothing.
#include "api/server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/api_testing.h"
#include "api/service_testing.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"
#include "topo/io/import.h"
#include "topo/io/json_io.h"

namespace toposched::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::toposched::testing::StatusIs;

constexpr const char* kServerToken = "test-token-0123456789abcdef";
constexpr const char* kAgentToken = "agent-token-0123456789abcdef";

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_api::MakeTempDir("toposched-server");
    Boot();
  }
  void TearDown() override {
    server_.reset();
    service_.reset();
    testing_api::RemoveDir(dir_);
  }

  void Boot() {
    auto s = testing_api::OpenTestService(dir_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    service_ = std::move(s).value();
    ServerOptions so = testing_api::ExtenderServerOptions(service_.get(), kServerToken);
    so.agent_token = kAgentToken;
    auto srv = Server::Start(*service_, so);
    ASSERT_TRUE(srv.ok()) << srv.status().ToString();
    server_ = std::move(srv).value();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(std::chrono::seconds(30));
  }

  httplib::Headers Auth() { return {{"Authorization", std::string("Bearer ") + kServerToken}}; }

  // ExtenderArgs of a real 8-GPU pod (a pod group of one) over every node.
  static std::string FilterBody() {
    json names = json::array();
    for (const auto& n : toposched::testing::H100Cluster().nodes) names.push_back(n.name);
    json pod = {{"kind", "Pod"},
                {"apiVersion", "v1"},
                {"metadata", {{"name", "solo"}, {"namespace", "ml"}, {"uid", "uid-solo"}}},
                {"spec",
                 {{"containers",
                   {{{"name", "t"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
    return json{{"Pod", pod}, {"NodeNames", names}}.dump();
  }

  // What `toposched agent` sends for a real 8-GPU node whose GPUs reach each other only over
  // PCIe and the CPUs (all SYS), no NICs.
  static std::string AgentTopologyBody() {
    auto t = topo::io::ImportTopologyFile(
        std::string(TS_SOURCE_DIR) +
            "/data/samples/nvidia-smi/09-8gpu-pcie-all-sys-2numa-mlsys-tutorial.txt",
        topo::io::TopoFormat::kAuto);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return json{{"topology", json::parse(topo::io::TopologyToJson(*t, -1))},
                {"source", "agent test"}}
        .dump();
  }

  httplib::Result Post(const std::string& path, const std::string& body, httplib::Headers h = {}) {
    for (auto& kv : Auth()) h.insert(kv);
    return client_->Post(path, h, body, "application/json");
  }

  json Get(const std::string& path, int expect = 200) {
    auto r = client_->Get(path);
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, expect) << path << ": " << r->body;
    return json::parse(r->body, nullptr, false);
  }

  // Asserts a 4xx with the error shape, and that nothing changed.
  void ExpectRejected(const httplib::Result& r, int status, const std::string& code,
                      const std::string& message_part) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r->body;
    EXPECT_EQ(j.value("code", ""), code) << r->body;
    EXPECT_NE(j.value("message", "").find(message_part), std::string::npos) << r->body;
    EXPECT_EQ(service_->applied_seq(), seq_before_);
  }

  std::string dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
  int64_t seq_before_ = 0;
};

TEST_F(ServerTest, SubmitGetListCancelExplainNodesEvents) {
  auto r = Post("/api/v1/jobs", testing_api::JobJson("first", 8, 5, "research"),
                {{"Idempotency-Key", "k-first"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  json sub = json::parse(r->body);
  EXPECT_EQ(sub["id"], 1);
  EXPECT_EQ(sub["job_id"], "job-1");
  EXPECT_EQ(sub["created"], true);

  // The same key again: the same job, 200, nothing new.
  auto again = Post("/api/v1/jobs", testing_api::JobJson("first", 8, 5, "research"),
                    {{"Idempotency-Key", "k-first"}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(json::parse(again->body)["id"], 1);
  // The same key with another spec: 409.
  auto other =
      Post("/api/v1/jobs", testing_api::JobJson("first", 4), {{"Idempotency-Key", "k-first"}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 409);
  EXPECT_EQ(json::parse(other->body)["code"], "already_exists");

  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("second", 2))->status, 201);
  json pending = Get("/api/v1/jobs?state=PENDING");
  ASSERT_EQ(pending["jobs"].size(), 2u);
  EXPECT_EQ(pending["jobs"][0]["name"], "first");
  EXPECT_EQ(pending["jobs"][0]["state"], "PENDING");
  EXPECT_EQ(pending["jobs"][0]["queue"], "research");

  auto pass = Post("/api/v1/schedule", "");
  ASSERT_TRUE(pass);
  ASSERT_EQ(pass->status, 200) << pass->body;
  EXPECT_EQ(json::parse(pass->body)["started"], json::array({1, 2}));

  json job = Get("/api/v1/jobs/job-1");
  EXPECT_EQ(job["state"], "RUNNING");
  ASSERT_TRUE(job["placement"].is_object());
  EXPECT_EQ(job["placement"]["nodes"].size(), 1u);
  EXPECT_EQ(job["placement"]["nodes"][0]["gpus"].size(), 8u);
  EXPECT_GT(job["placement"]["predicted_ms"].get<double>(), 0.0);
  EXPECT_GE(job["events"].size(), 2u);
  EXPECT_EQ(Get("/api/v1/jobs?queue=research")["jobs"].size(), 1u);
  EXPECT_EQ(Get("/api/v1/jobs?user=nobody")["jobs"].size(), 0u);
  EXPECT_EQ(Get("/api/v1/jobs?after=1")["jobs"].size(), 1u);

  json ex = Get("/api/v1/jobs/1/explain");
  EXPECT_EQ(ex["state"], "RUNNING");
  EXPECT_NE(ex["explanation"].get<std::string>().find("predicted"), std::string::npos);

  json nodes = Get("/api/v1/nodes");
  ASSERT_EQ(nodes["nodes"].size(), 32u);
  int allocated = 0;
  for (const json& n : nodes["nodes"]) allocated += n["allocated"].get<int>();
  EXPECT_EQ(allocated, 10);

  auto cancel = Post("/api/v1/jobs/1/cancel", "");
  ASSERT_TRUE(cancel);
  ASSERT_EQ(cancel->status, 200) << cancel->body;
  EXPECT_EQ(json::parse(cancel->body)["state"], "CANCELLED");
  auto cancel2 = Post("/api/v1/jobs/1/cancel", "");
  EXPECT_EQ(cancel2->status, 409);
  EXPECT_EQ(Post("/api/v1/jobs/77/cancel", "")->status, 404);

  json events = Get("/api/v1/events?job=1");
  ASSERT_FALSE(events["events"].empty());
  EXPECT_EQ(events["events"].back()["to"], "CANCELLED");
  json topo = Get("/api/v1/topology");
  EXPECT_EQ(topo["name"], "h100-2rack");

  json health = Get("/healthz");
  EXPECT_EQ(health["status"], "ok");
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  EXPECT_NE(metrics->body.find("toposched_gpus{state=\"allocated\"} 2\n"), std::string::npos)
      << metrics->body;
}

TEST_F(ServerTest, BadRequestsGetAClear4xxAndChangeNothing) {
  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("ok", 1))->status, 201);
  seq_before_ = service_->applied_seq();

  ExpectRejected(Post("/api/v1/jobs", "{\"name\": \"x\", "), 400, "invalid_argument",
                 "request body");
  ExpectRejected(Post("/api/v1/jobs", R"({"name": "x", "total_gpus": 8, "colour": "red"})"), 400,
                 "invalid_argument", "colour");
  ExpectRejected(Post("/api/v1/jobs", R"({"name": "x", "total_gpus": -8})"), 400,
                 "invalid_argument", "total_gpus");
  ExpectRejected(Post("/api/v1/jobs", R"({"name": "x", "replicas": 1, "gpus_per_replica": -2})"),
                 400, "invalid_argument", "gpus_per_replica");
  ExpectRejected(Post("/api/v1/jobs?force=1", testing_api::JobJson("x", 1)), 400,
                 "invalid_argument", "force");
  ExpectRejected(Post("/api/v1/jobs/1/cancel", R"({"now": true})"), 400, "invalid_argument", "now");

  // No token, a wrong token: 401 before the body is looked at.
  ExpectRejected(client_->Post("/api/v1/jobs", testing_api::JobJson("x", 1), "application/json"),
                 401, "unauthorized", "missing bearer token");
  ExpectRejected(client_->Post("/api/v1/jobs", {{"Authorization", "Bearer wrong-token-xxxx"}},
                               testing_api::JobJson("x", 1), "application/json"),
                 401, "unauthorized", "wrong bearer token");
  ExpectRejected(client_->Post("/api/v1/jobs/1/cancel", "", "application/json"), 401,
                 "unauthorized", "token");

  // 100 MB: refused by size before it is read whole.
  const std::string huge(100u << 20, ' ');
  auto big = Post("/api/v1/jobs", huge);
  if (big) {
    ExpectRejected(big, 413, "payload_too_large", "limit");
  } else {
    // The server may close the connection while the client is still sending; either way the
    // job count must not move.
    EXPECT_EQ(service_->applied_seq(), seq_before_);
  }

  auto r = client_->Get("/api/v1/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["code"], "not_found");
  EXPECT_EQ(Get("/api/v1/jobs/99", 404)["code"], "not_found");
  EXPECT_EQ(Get("/api/v1/jobs?limit=0", 400)["code"], "invalid_argument");
  EXPECT_EQ(Get("/api/v1/jobs?state=SLEEPING", 400)["code"], "invalid_argument");

  EXPECT_EQ(Get("/api/v1/jobs")["jobs"].size(), 1u);
  EXPECT_EQ(service_->applied_seq(), seq_before_);
}

// RFC 7235: the auth scheme is case-insensitive; a JSON body sent as a form (curl -d without a
// Content-Type) is told so, not "unknown query parameter"; the schema's types hold over the REST
// body (the body below was accepted before).
TEST_F(ServerTest, SchemeCaseContentTypeAndJsonTypes) {
  for (const char* scheme : {"bearer ", "BEARER ", "Bearer "}) {
    auto r =
        client_->Post("/api/v1/jobs", {{"Authorization", std::string(scheme) + kServerToken}},
                      testing_api::JobJson(std::string("s") + scheme[1], 1), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 201) << scheme << ": " << r->body;
  }
  seq_before_ = service_->applied_seq();
  ExpectRejected(client_->Post("/api/v1/jobs", Auth(), testing_api::JobJson("form", 1),
                               "application/x-www-form-urlencoded"),
                 400, "invalid_argument", "Content-Type: application/json");
  ExpectRejected(
      Post(
          "/api/v1/jobs",
          R"({"name": 12345, "total_gpus": "2", "priority": "7", "constraints": {"rdma_required": "yes"}})"),
      400, "invalid_argument", "$.name: expected a string, got a number 12345");
  ExpectRejected(Post("/api/v1/jobs", R"({"name": "n", "total_gpus": "2"})"), 400,
                 "invalid_argument", "$.total_gpus: expected a positive integer, got a string");
}

// A request refused for its credentials must not leave its body on the connection, where it was
// parsed as the next request: a request hidden in the body of an unauthenticated POST was
// executed (20 of 20 tries with the body sent 50 ms after the headers).
TEST_F(ServerTest, ARefusedRequestsBodyIsNotParsedAsTheNextRequest) {
  const std::string hidden = "GET /api/v1/jobs/424242 HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string path : {"/api/v1/jobs", "/api/v1/jobs/1/cancel", "/api/v1/nope"}) {
    SCOPED_TRACE(path);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(server_->port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const std::string head = "POST " + path +
                             " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             "Content-Length: " +
                             std::to_string(hidden.size()) + "\r\n\r\n";
    ASSERT_EQ(send(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(send(fd, hidden.data(), hidden.size(), 0), static_cast<ssize_t>(hidden.size()));
    timeval tv{0, 500000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;)
      got.append(buf, static_cast<size_t>(n));
    close(fd);
    EXPECT_EQ(got.rfind("HTTP/1.1 401", 0), 0u) << got;
    EXPECT_EQ(got.find("job-424242"), std::string::npos) << "the hidden request ran:\n" << got;
    size_t responses = 0;
    for (size_t at = 0; (at = got.find("HTTP/1.1 ", at)) != std::string::npos; ++at) ++responses;
    EXPECT_EQ(responses, 1u) << got;
  }
}

// --max-body-bytes holds for chunked bodies too: it was enforced only on Content-Length (a 300 MB
// chunked body to /extender/filter was read whole: RSS 232 → 591 MB, answered 400).
TEST_F(ServerTest, ChunkedBodiesAreHeldToTheBodyLimit) {
  seq_before_ = service_->applied_seq();
  for (const std::string path : {"/api/v1/jobs", "/extender/filter", "/no/such/route"}) {
    SCOPED_TRACE(path);
    size_t sent = 0;
    const std::string chunk(64 * 1024, ' ');
    auto r = client_->Post(
        path, Auth(),
        [&](size_t, httplib::DataSink& sink) {
          if (sent >= (size_t{8} << 20)) {
            sink.done();
            return true;
          }
          sent += chunk.size();
          return sink.write(chunk.data(), chunk.size());
        },
        "application/json");
    if (r) {
      ExpectRejected(r, 413, "payload_too_large", "limit");
    } else {
      EXPECT_EQ(service_->applied_seq(), seq_before_);  // closed while the client still sent
    }
  }
}

// Every route that changes state, without a credential (no token, a wrong one, a scheme
// without one), with a body and without: 401, and nothing changes: the extender's verbs too (a
// filter of a real GPU pod would queue its pod group as a job).
TEST_F(ServerTest, NoRouteChangesStateWithoutACredential) {
  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("victim", 8))->status, 201);
  ASSERT_EQ(Post("/api/v1/schedule", "{}")->status, 200);
  seq_before_ = service_->applied_seq();
  const std::string node = toposched::testing::H100Cluster().nodes[0].name;
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"/api/v1/jobs", testing_api::JobJson("intruder", 8)},
      {"/api/v1/jobs/1/cancel", "{}"},
      {"/api/v1/jobs/1/complete", "{}"},
      {"/api/v1/jobs/1/priority", R"({"priority": 99})"},
      {"/api/v1/nodes/" + node + "/drain", R"({"reason": "x"})"},
      {"/api/v1/nodes/" + node + "/resume", "{}"},
      {"/api/v1/health",
       R"({"node": ")" + node + R"(", "component": "node", "health": "unhealthy"})"},
      {"/api/v1/schedule", "{}"},
      {"/api/v1/nodes/" + node + "/topology", AgentTopologyBody()},
      {"/extender/pod-deleted", R"({"PodName": "x", "PodNamespace": "ml"})"},
      {"/extender/filter", FilterBody()},
      {"/extender/prioritize", FilterBody()},
      {"/extender/bind",
       R"({"PodName": "solo", "PodNamespace": "ml", "PodUID": "uid-solo", "Node": ")" + node +
           R"("})"},
      {"/extender/preempt", R"({"Pod": )" + json::parse(FilterBody())["Pod"].dump() + "}"},
  };
  const std::vector<httplib::Headers> credentials = {
      {},
      {{"Authorization", "Bearer wrong-token-0123456789"}},
      {{"Authorization", "Bearer"}},
      {{"Authorization", std::string("Basic ") + kServerToken}}};
  for (const auto& [path, body] : routes) {
    // The node agents' token may send a node's topology and nothing else.
    if (path.find("/topology") == std::string::npos) {
      ExpectRejected(client_->Post(path, {{"Authorization", std::string("Bearer ") + kAgentToken}},
                                   body, "application/json"),
                     401, "unauthorized", "may only send a node's topology");
    }
    for (const httplib::Headers& h : credentials) {
      for (const bool with_body : {true, false}) {
        SCOPED_TRACE(path + (with_body ? " with a body" : " without a body"));
        ExpectRejected(client_->Post(path, h, with_body ? body : "", "application/json"), 401,
                       "unauthorized", "token");
      }
    }
  }
  EXPECT_EQ(json::parse(service_->JobsJson({}))["jobs"].size(), 1u);
}

// A node's own topology from its agent: recorded with the agents' token, shown in the nodes API
// and the node's topology, used by the next placement (an 8-GPU job leaves the all-SYS node
// alone), and kept across a restart; a bad body or an unknown node is a clear 4xx.
TEST_F(ServerTest, NodeTopologyFromTheAgentIsUsedAndKeptAcrossARestart) {
  const std::string node = toposched::testing::H100Cluster().nodes[0].name;
  const std::string path = "/api/v1/nodes/" + node + "/topology";
  auto r = client_->Post(path, {{"Authorization", std::string("Bearer ") + kAgentToken}},
                         AgentTopologyBody(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["status"], "recorded");
  json nodes = Get("/api/v1/nodes");
  EXPECT_EQ(nodes["nodes"][0]["topology_source"], "agent test");
  EXPECT_EQ(nodes["nodes"][1]["topology_source"], "");
  json nt = Get(path);
  EXPECT_EQ(nt["source"], "agent test");
  EXPECT_EQ(nt["topology"]["gpus"].size(), 8u);
  EXPECT_EQ(nt["topology"]["nics"].size(), 0u);
  EXPECT_EQ(nt["topology"]["gpu_model"], "H100-SXM5-80GB") << "the profile's, unknown to the agent";
  EXPECT_EQ(Get("/api/v1/nodes/" + toposched::testing::H100Cluster().nodes[1].name +
                "/topology")["topology"]["nics"]
                .size(),
            8u);

  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("a", 8))->status, 201);
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  json job = Get("/api/v1/jobs/1");
  ASSERT_EQ(job["state"], "RUNNING");
  EXPECT_NE(job["placement"]["nodes"][0]["node"], node);

  seq_before_ = service_->applied_seq();
  ExpectRejected(Post(path, R"({"topology": 3})"), 400, "invalid_argument", "topology: required");
  ExpectRejected(Post(path, R"({"topology": {"gpus": "x"}})"), 400, "invalid_argument",
                 "request body: topology");
  ExpectRejected(Post(path, R"({"topology": {}, "colour": "red"})"), 400, "invalid_argument",
                 "colour");
  ExpectRejected(Post("/api/v1/nodes/nosuch/topology", AgentTopologyBody()), 404, "not_found",
                 "nosuch");

  server_.reset();
  service_.reset();
  Boot();
  EXPECT_EQ(Get("/api/v1/nodes")["nodes"][0]["topology_source"], "agent test");
  EXPECT_EQ(Get(path)["topology"]["nics"].size(), 0u);
}

TEST_F(ServerTest, RestartKeepsJobsAllocationsAndEvents) {
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("r" + std::to_string(i), 8))->status, 201);
  }
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  ASSERT_EQ(Post("/api/v1/jobs/7/complete", "")->status, 200);
  const std::string jobs = Get("/api/v1/jobs").dump();
  const std::string nodes = Get("/api/v1/nodes").dump();
  const std::string events = Get("/api/v1/events?limit=100000").dump();
  server_.reset();
  service_.reset();
  Boot();
  EXPECT_EQ(Get("/api/v1/jobs").dump(), jobs);
  EXPECT_EQ(Get("/api/v1/nodes").dump(), nodes);
  EXPECT_EQ(Get("/api/v1/events?limit=100000").dump(), events);
  auto pass = Post("/api/v1/schedule", "");
  ASSERT_TRUE(pass);
  EXPECT_EQ(json::parse(pass->body)["started"], json::array({33}));
}

TEST_F(ServerTest, PriorityDrainAndHealthReportsAreAppliedAndSurviveRestart) {
  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("low", 8))->status, 201);
  auto pr = Post("/api/v1/jobs/1/priority", R"({"priority": 42})");
  ASSERT_TRUE(pr);
  ASSERT_EQ(pr->status, 200) << pr->body;
  EXPECT_EQ(json::parse(pr->body)["priority"], 42);

  auto drain = Post("/api/v1/nodes/gpu001/drain", R"({"reason": "maintenance"})");
  ASSERT_TRUE(drain);
  ASSERT_EQ(drain->status, 200) << drain->body;
  auto sick = Post("/api/v1/health",
                   R"({"node": "gpu002", "component": "gpu", "index": 3, "health": "unhealthy",
                       "reason": "XID 79"})");
  ASSERT_TRUE(sick);
  ASSERT_EQ(sick->status, 200) << sick->body;
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  json job = Get("/api/v1/jobs/1");
  ASSERT_EQ(job["state"], "RUNNING");
  const std::string node = job["placement"]["nodes"][0]["node"];
  EXPECT_NE(node, "gpu001");  // drained
  EXPECT_NE(node, "gpu002");  // a GPU down: no whole free node of 8
  json nodes = Get("/api/v1/nodes");
  EXPECT_EQ(nodes["nodes"][0]["drained"], true);
  ASSERT_EQ(nodes["nodes"][1]["gpu_health"].size(), 1u);
  EXPECT_EQ(nodes["nodes"][1]["gpu_health"][0]["gpu"], 3);
  EXPECT_EQ(nodes["nodes"][1]["gpu_health"][0]["health"], "unhealthy");
  auto metrics = client_->Get("/metrics");
  EXPECT_NE(metrics->body.find("toposched_gpus{state=\"unhealthy\"} 1\n"), std::string::npos);

  // Refused, and nothing changes.
  seq_before_ = service_->applied_seq();
  ExpectRejected(Post("/api/v1/nodes/gpu999/drain", ""), 404, "not_found", "gpu999");
  ExpectRejected(Post("/api/v1/health", R"({"node": "gpu003", "component": "gpu", "index": 1,
                                             "health": "sparkly"})"),
                 400, "invalid_argument", "health");
  ExpectRejected(Post("/api/v1/health", R"({"node": "gpu003", "component": "fan", "index": 1,
                                             "health": "unhealthy"})"),
                 400, "invalid_argument", "component");
  ExpectRejected(Post("/api/v1/health", R"({"node": "gpu003", "component": "gpu",
                                             "health": "unhealthy"})"),
                 400, "invalid_argument", "index");
  ExpectRejected(Post("/api/v1/jobs/1/priority", R"({"priority": "high"})"), 400,
                 "invalid_argument", "priority");
  ExpectRejected(Post("/api/v1/jobs/9/priority", R"({"priority": 1})"), 404, "not_found", "9");

  const std::string jobs = Get("/api/v1/jobs").dump();
  const std::string node_view = Get("/api/v1/nodes").dump();
  server_.reset();
  service_.reset();
  Boot();
  EXPECT_EQ(Get("/api/v1/jobs").dump(), jobs);
  EXPECT_EQ(Get("/api/v1/nodes").dump(), node_view);
  ASSERT_EQ(Post("/api/v1/nodes/gpu001/resume", "")->status, 200);
  EXPECT_EQ(Get("/api/v1/nodes")["nodes"][0]["drained"], false);
}

TEST_F(ServerTest, DashboardAssetsAtFixedPathsOnlyWithTheirHeaders) {
  for (const char* path : {"/", "/ui/app.js", "/ui/app.css"}) {
    auto r = client_->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_FALSE(r->body.empty()) << path;
    EXPECT_NE(r->get_header_value("Content-Security-Policy").find("script-src 'self'"),
              std::string::npos)
        << path;
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff") << path;
  }
  EXPECT_NE(client_->Get("/")->body.find("/ui/app.js"), std::string::npos);
  EXPECT_EQ(client_->Get("/ui/app.js")->get_header_value("Content-Type"),
            "text/javascript; charset=utf-8");
  for (const char* path : {"/index.html", "/ui/", "/ui/app.js.map", "/ui/../CMakeLists.txt",
                           "/ui/app.css/..", "/web/app.js"}) {
    auto r = client_->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path << ": " << r->body;
  }
}

TEST(ServerDashboardTest, AssetsNeedNoTokenBeyondLoopbackButTheApiDoes) {
  const std::string dir = testing_api::MakeTempDir("toposched-dash");
  ServiceOptions o;
  o.db_path = dir + "/state.db";
  o.background_passes = false;
  auto svc = Service::Open(toposched::testing::H100Cluster(), o);
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  ServerOptions so;
  so.host = "0.0.0.0";  // not loopback: every API call needs the token
  so.token = kServerToken;
  so.log_requests = false;
  auto srv = Server::Start(**svc, so);
  ASSERT_TRUE(srv.ok()) << srv.status().ToString();
  httplib::Client cli("127.0.0.1", (*srv)->port());
  EXPECT_EQ(cli.Get("/")->status, 200);
  EXPECT_EQ(cli.Get("/ui/app.js")->status, 200);
  EXPECT_EQ(cli.Get("/api/v1/nodes")->status, 401);
  EXPECT_EQ(cli.Get("/api/v1/topology")->status, 401);
  httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kServerToken}};
  EXPECT_EQ(cli.Get("/api/v1/nodes", auth)->status, 200);
  srv->reset();
  svc->reset();
  testing_api::RemoveDir(dir);
}

TEST_F(ServerTest, NodesGiveEachGpusStateAndAJobGivesItsRanks) {
  ASSERT_EQ(Post("/api/v1/jobs", R"({"name": "big", "replicas": 2, "gpus_per_replica": 8,
                                       "layout": {"tp": 8, "dp": 2}, "model_params": "8B"})")
                ->status,
            201);
  ASSERT_EQ(Post("/api/v1/nodes/gpu032/drain", "")->status, 200);
  ASSERT_EQ(Post("/api/v1/health", R"({"node": "gpu031", "component": "gpu", "index": 2,
                                         "health": "unhealthy"})")
                ->status,
            200);
  ASSERT_EQ(Post("/api/v1/health", R"({"node": "gpu031", "component": "nvlink", "index": 5,
                                         "health": "degraded"})")
                ->status,
            200);
  ASSERT_EQ(Post("/api/v1/health", R"({"node": "gpu031", "component": "nic", "index": 3,
                                         "health": "unhealthy"})")
                ->status,
            200);
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  json job = Get("/api/v1/jobs/1");
  ASSERT_EQ(job["state"], "RUNNING") << job.dump();
  const json& p = job["placement"];
  ASSERT_EQ(p["ranks"].size(), 16u);
  EXPECT_NEAR(p["predicted_ms"].get<double>(),
              p["tp_ms"].get<double>() + p["pp_ms"].get<double>() + p["dp_ms"].get<double>(), 1e-9);
  // Each rank's node and GPU is one of the placement's; its NIC is a NIC of the node.
  std::set<std::string> slots;
  for (const json& part : p["nodes"]) {
    for (const json& g : part["gpus"])
      slots.insert(part["node"].get<std::string>() + "/" + g.dump());
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < p["ranks"].size(); ++i) {
    const json& r = p["ranks"][i];
    EXPECT_EQ(r["rank"], static_cast<int>(i));
    const std::string slot = r["node"].get<std::string>() + "/" + r["gpu"].dump();
    EXPECT_TRUE(slots.count(slot)) << slot;
    seen.insert(slot);
    ASSERT_TRUE(r["nic"].is_string()) << r.dump();
    EXPECT_EQ(r["nic"].get<std::string>().rfind("mlx5_", 0), 0u) << r.dump();
  }
  EXPECT_EQ(seen, slots);
  // The list view leaves the ranks out (its size grows with every job).
  EXPECT_FALSE(Get("/api/v1/jobs")["jobs"][0]["placement"].contains("ranks"));

  std::map<std::string, json> nodes;
  const json listed = Get("/api/v1/nodes");
  for (const json& n : listed["nodes"]) nodes[n["name"]] = n;
  const std::string held = p["nodes"][0]["node"];
  for (const json& g : nodes[held]["gpu_states"]) {
    EXPECT_EQ(g["state"], "job");
    EXPECT_EQ(g["holders"], json::array({"job-1"}));
  }
  for (const json& g : nodes["gpu032"]["gpu_states"]) EXPECT_EQ(g["state"], "drained");
  const json& sick = nodes["gpu031"]["gpu_states"];
  ASSERT_EQ(sick.size(), 8u);
  EXPECT_EQ(sick[2]["state"], "unhealthy");
  EXPECT_EQ(sick[5]["state"], "free");
  EXPECT_EQ(sick[5]["nvlink_health"], "degraded");
  EXPECT_EQ(sick[0]["state"], "free");
  EXPECT_EQ(sick[0]["health"], "healthy");
  EXPECT_EQ(sick[0]["nvlink_health"], "healthy");
  // Only the NICs not healthy are listed.
  EXPECT_EQ(nodes["gpu031"]["nic_health"],
            json::array({{{"nic", 3}, {"name", "mlx5_3"}, {"health", "unhealthy"}}}));
  EXPECT_EQ(nodes["gpu030"]["nic_health"], json::array());
  // The per-GPU states add up to the node's counts.
  for (const auto& [name, n] : nodes) {
    int free = 0;
    for (const json& g : n["gpu_states"]) free += g["state"] == "free" ? 1 : 0;
    EXPECT_EQ(free, n["free"].get<int>()) << name;
  }
}

std::string MetricLine(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

// A job's JSON (testing_api::JobJson) with more fields, e.g. `"on_failure": "fail"`.
std::string JobJsonWith(const std::string& name, int gpus, const std::string& fields) {
  std::string j = testing_api::JobJson(name, gpus);
  return j.substr(0, j.size() - 1) + ", " + fields + "}";
}

TEST_F(ServerTest, AnExitReportEndsTheJobWithItsCauseAndAFatalXidDrainsTheNode) {
  // on_failure: fail, so that the GPU fault ends it (the default requeues it: the next test).
  ASSERT_EQ(Post("/api/v1/jobs", JobJsonWith("faulty", 8, R"("on_failure": "fail")"))->status, 201);
  for (const char* name : {"fine", "stopped"}) {
    ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson(name, 8))->status, 201);
  }
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  const json faulty = Get("/api/v1/jobs/1");
  ASSERT_EQ(faulty["state"], "RUNNING");
  const std::string node = faulty["placement"]["nodes"][0]["node"];

  // Refused, and nothing changes: bad fields, an unknown node, a job that is not running.
  seq_before_ = service_->applied_seq();
  ExpectRejected(Post("/api/v1/jobs/1/complete", R"({"signal": 99})"), 400, "invalid_argument",
                 "signal");
  ExpectRejected(Post("/api/v1/jobs/1/complete", R"({"exit_code": "1"})"), 400, "invalid_argument",
                 "exit_code");
  ExpectRejected(Post("/api/v1/jobs/1/complete", R"({"exit_code": 1, "node": "gpu999"})"), 404,
                 "not_found", "gpu999");
  ExpectRejected(Post("/api/v1/jobs/1/complete", R"({"exit_code": 1, "pid": 4})"), 400,
                 "invalid_argument", "pid");
  // A node the job does not run on: its log cannot drain that node.
  const std::string other = node == "gpu032" ? "gpu031" : "gpu032";
  ExpectRejected(
      Post("/api/v1/jobs/1/complete", json{{"exit_code", 1}, {"log", "x"}, {"node", other}}.dump()),
      400, "invalid_argument", "does not run on");

  // A real dmesg with Xid 119 (GSP RPC timeout: the GPU needs a reset), exit code 1.
  const std::string log =
      testing_api::ReadFile(std::string(TS_SOURCE_DIR) +
                            "/data/interruption-logs/3-xid119-gsp-rpc-timeout-xe9680-"
                            "gpud-fixture.log");
  ASSERT_NE(log.find("Xid"), std::string::npos);
  auto r = Post("/api/v1/jobs/1/complete", json{{"exit_code", 1}, {"log", log}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["state"], "FAILED");
  const json events = Get("/api/v1/events?job=job-1");
  const json& last = events["events"].back();
  EXPECT_EQ(last["to"], "FAILED");
  EXPECT_EQ(last["category"], "gpu_fault");
  const std::string reason = last["reason"];
  EXPECT_EQ(reason.rfind("exit code 1: cause gpu_fault: ", 0), 0u) << reason;
  EXPECT_NE(reason.find("; fix: "), std::string::npos) << reason;
  // The node is drained, with the reason: its GPU needs a reset before the next job.
  const json nodes = Get("/api/v1/nodes");
  for (const json& n : nodes["nodes"]) {
    EXPECT_EQ(n["drained"], n["name"] == node) << n["name"];
    if (n["name"] != node) continue;
    const std::string why = n["drain_reason"];
    EXPECT_EQ(why.rfind("Xid 119", 0), 0u) << why;
    EXPECT_NE(why.find("job-1's exit report"), std::string::npos) << why;
  }

  // A zero exit completes; a cancel is an interruption of category "cancelled".
  ASSERT_EQ(Post("/api/v1/jobs/2/complete", R"({"exit_code": 0})")->status, 200);
  EXPECT_EQ(Get("/api/v1/jobs/2")["state"], "COMPLETED");
  ASSERT_EQ(Post("/api/v1/jobs/3/cancel", "")->status, 200);
  const json all = Get("/api/v1/events");
  int interruptions = 0;
  for (const json& e : all["events"]) {
    if (e["category"].is_null()) continue;
    ++interruptions;
    EXPECT_TRUE(e["job"] == "job-1" || e["job"] == "job-3") << e.dump();
  }
  EXPECT_EQ(interruptions, 2);
  const std::string metrics = client_->Get("/metrics")->body;
  EXPECT_EQ(MetricLine(metrics, "toposched_job_interruptions_total{category=\"gpu_fault\"}"),
            "toposched_job_interruptions_total{category=\"gpu_fault\"} 1");
  EXPECT_EQ(MetricLine(metrics, "toposched_job_interruptions_total{category=\"cancelled\"}"),
            "toposched_job_interruptions_total{category=\"cancelled\"} 1");
  EXPECT_EQ(MetricLine(metrics, "toposched_job_interruptions_total{category=\"timeout\"}"),
            "toposched_job_interruptions_total{category=\"timeout\"} 0");

  // Completing it again: refused, nothing changes.
  seq_before_ = service_->applied_seq();
  ExpectRejected(Post("/api/v1/jobs/1/complete", R"({"exit_code": 1})"), 409, "failed_precondition",
                 "FAILED");

  // A restart replays the same ends, causes and drain.
  const std::string before = Get("/api/v1/events").dump();
  const std::string node_view = Get("/api/v1/nodes").dump();
  server_.reset();
  service_.reset();
  Boot();
  EXPECT_EQ(Get("/api/v1/events").dump(), before);
  EXPECT_EQ(Get("/api/v1/nodes").dump(), node_view);
  EXPECT_EQ(MetricLine(client_->Get("/metrics")->body,
                       "toposched_job_interruptions_total{category=\"gpu_fault\"}"),
            "toposched_job_interruptions_total{category=\"gpu_fault\"} 1");
}

// An exit report whose cause is the platform's requeues the job (its on_failure, the default
// requeue); one whose cause is the job's own ends it FAILED; a restart replays both.
TEST_F(ServerTest, AnExitReportOfAPlatformCauseFollowsOnFailure) {
  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("on-bad-gpu", 8))->status, 201);
  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("own-bug", 8))->status, 201);
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  ASSERT_EQ(Get("/api/v1/jobs/1")["state"], "RUNNING");
  ASSERT_EQ(Get("/api/v1/jobs/2")["state"], "RUNNING");
  const std::string node = Get("/api/v1/jobs/1")["placement"]["nodes"][0]["node"];

  // A real dmesg with Xid 119 (the GPU needs a reset): the platform's fault.
  const std::string xid = testing_api::ReadFile(
      std::string(TS_SOURCE_DIR) +
      "/data/interruption-logs/3-xid119-gsp-rpc-timeout-xe9680-gpud-fixture.log");
  auto r = Post("/api/v1/jobs/1/complete", json{{"exit_code", 1}, {"log", xid}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<std::string> states;
  std::string failed_reason;
  const json events = Get("/api/v1/events?job=job-1");
  for (const json& e : events["events"]) {
    states.push_back(e["to"]);
    if (e["to"] == "FAILED") failed_reason = e["reason"];
  }
  ASSERT_GE(states.size(), 3u);
  EXPECT_EQ(states[states.size() - 3], "FAILED");
  EXPECT_EQ(states[states.size() - 2], "REQUEUED");
  EXPECT_EQ(states.back(), "PENDING");
  EXPECT_THAT(failed_reason, HasSubstr("cause gpu_fault: "));
  EXPECT_THAT(failed_reason, HasSubstr("; on_failure: requeue"));
  // Its node is drained, so the requeued job does not go back to the faulty GPU.
  const json nodes = Get("/api/v1/nodes");
  for (const json& n : nodes["nodes"]) {
    if (n["name"] == node) {
      EXPECT_EQ(n["drained"], true);
    }
  }

  // A real CUDA out-of-memory log of a DeepSpeed job: the job's own error, no requeue.
  const std::string oom = testing_api::ReadFile(
      std::string(TS_SOURCE_DIR) +
      "/data/interruption-logs/6-cuda-oom-a100-deepspeed-launcher-kills-subprocess-happy-"
      "transformer-333.log");
  r = Post("/api/v1/jobs/2/complete", json{{"exit_code", 1}, {"log", oom}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json own = Get("/api/v1/jobs/2");
  EXPECT_EQ(own["state"], "FAILED");
  const json own_events = Get("/api/v1/events?job=job-2");
  const json& last = own_events["events"].back();
  EXPECT_EQ(last["to"], "FAILED");
  EXPECT_EQ(last["category"], "gpu_oom");
  EXPECT_THAT(last["reason"].get<std::string>(), Not(HasSubstr("on_failure")));

  // The restart replays the stored inputs to the same events.
  const std::string before = Get("/api/v1/events").dump();
  server_.reset();
  service_.reset();
  Boot();
  EXPECT_EQ(Get("/api/v1/events").dump(), before);
}

TEST_F(ServerTest, ALogReportOfATransportFallbackFollowsTheJobsOnDegraded) {
  // Two 16-GPU jobs across two nodes each (DP over the network), one waiting on degradation.
  for (const char* policy : {"continue", "wait"}) {
    ASSERT_EQ(Post("/api/v1/jobs", std::string(R"({"name": "dp-)") + policy +
                                       R"(", "replicas": 2, "gpus_per_replica": 8,
                                       "layout": {"tp": 8, "dp": 2}, "model_params": "8B",
                                       "on_degraded": ")" +
                                       policy + R"("})")
                  ->status,
              201);
  }
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  // A third that cannot start while they run.
  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("waiting", 256))->status, 201);
  const json before = Get("/api/v1/jobs/1");
  ASSERT_EQ(before["state"], "RUNNING");
  ASSERT_EQ(before["placement"]["nodes"].size(), 2u);
  ASSERT_EQ(Get("/api/v1/jobs/2")["state"], "RUNNING") << Get("/api/v1/jobs/2").dump();
  const double predicted = before["placement"]["predicted_ms"];
  const std::string log =
      testing_api::ReadFile(std::string(TS_SOURCE_DIR) +
                            "/data/interruption-logs/1-socket-fallback-libibverbs-"
                            "missing-detectron2-4730.log");

  // Refused, nothing changes: no log, an unknown field, a job that does not run.
  seq_before_ = service_->applied_seq();
  ExpectRejected(Post("/api/v1/jobs/1/report", "{}"), 400, "invalid_argument", "log");
  ExpectRejected(Post("/api/v1/jobs/1/report", R"({"log": "x", "exit_code": 1})"), 400,
                 "invalid_argument", "exit_code");
  ExpectRejected(Post("/api/v1/jobs/3/report", json{{"log", log}}.dump()), 409,
                 "failed_precondition", "PENDING");

  // A log with no fault: nothing done.
  auto fine = Post("/api/v1/jobs/1/report", R"({"log": "step 100 loss 2.31\nstep 200 loss 2.11"})");
  ASSERT_TRUE(fine);
  ASSERT_EQ(fine->status, 200) << fine->body;
  EXPECT_TRUE(json::parse(fine->body)["cause"].is_null());
  EXPECT_EQ(json::parse(fine->body)["actions"], json::array());
  EXPECT_EQ(service_->applied_seq(), seq_before_);

  // on_degraded: continue — the job runs on, the event says how much slower it now is.
  auto r = Post("/api/v1/jobs/1/report", json{{"log", log}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json rep = json::parse(r->body);
  EXPECT_EQ(rep["cause"]["category"], "nccl_transport_fallback");
  EXPECT_NE(rep["cause"]["topology"].get<std::string>().find("NET/Socket"), std::string::npos);
  EXPECT_EQ(rep["state"], "RUNNING");
  const json ev1 = Get("/api/v1/events?job=job-1")["events"].back();
  EXPECT_EQ(ev1["from"], "RUNNING");
  EXPECT_EQ(ev1["to"], "RUNNING");
  const std::string why = ev1["reason"];
  EXPECT_EQ(why.rfind("log report: cause nccl_transport_fallback: ", 0), 0u) << why;
  EXPECT_NE(why.find("on_degraded: continue"), std::string::npos) << why;
  // "predicted A -> B ms": slower over sockets.
  const size_t at = why.find("predicted ");
  ASSERT_NE(at, std::string::npos) << why;
  double a = 0, b = 0;
  ASSERT_EQ(std::sscanf(why.c_str() + at, "predicted %lf -> %lf ms", &a, &b), 2) << why;
  EXPECT_NEAR(a, predicted, 1e-3);
  EXPECT_GT(b, 2 * a);

  // on_degraded: wait — stopped to wait for a better placement; the stop is an interruption of
  // that category.
  auto w = Post("/api/v1/jobs/2/report", json{{"log", log}}.dump());
  ASSERT_TRUE(w);
  ASSERT_EQ(w->status, 200) << w->body;
  bool stopped = false;
  const json ev2 = Get("/api/v1/events?job=job-2");
  for (const json& e : ev2["events"]) {
    if (e["to"] == "PREEMPTED") {
      stopped = true;
      EXPECT_EQ(e["category"], "nccl_transport_fallback") << e.dump();
      EXPECT_NE(e["reason"].get<std::string>().find("on_degraded: wait"), std::string::npos);
    }
  }
  EXPECT_TRUE(stopped) << ev2.dump();

  // A job on one node: NCCL does not use the network there, so nothing is done. (The waiting
  // 256-GPU job goes first, or it would hold the room.)
  ASSERT_EQ(Post("/api/v1/jobs/3/cancel", "")->status, 200);
  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("solo", 8))->status, 201);
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  const json solo = Get("/api/v1/jobs?name=solo");
  ASSERT_EQ(solo["jobs"][0]["state"], "RUNNING");
  const int64_t solo_id = solo["jobs"][0]["id"];
  seq_before_ = service_->applied_seq();
  auto one = Post("/api/v1/jobs/" + std::to_string(solo_id) + "/report", json{{"log", log}}.dump());
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200) << one->body;
  EXPECT_EQ(json::parse(one->body)["actions"][0].get<std::string>().rfind("none:", 0), 0u)
      << one->body;
  EXPECT_EQ(service_->applied_seq(), seq_before_);

  // A restart replays the degraded reports to the same events.
  const std::string events = Get("/api/v1/events").dump();
  server_.reset();
  service_.reset();
  Boot();
  EXPECT_EQ(Get("/api/v1/events").dump(), events);
  EXPECT_EQ(MetricLine(client_->Get("/metrics")->body,
                       "toposched_job_interruptions_total{category=\"nccl_transport_fallback\"}"),
            "toposched_job_interruptions_total{category=\"nccl_transport_fallback\"} 1");
}

// A cause summary cut at its limit inside a multi-byte character: what the scheduler recorded
// must be what the store gives back, or the restart would refuse the database.
TEST_F(ServerTest, AReasonCutInsideAMultiByteCharacterReplays) {
  ASSERT_EQ(Post("/api/v1/jobs", testing_api::JobJson("utf8", 8))->status, 201);
  ASSERT_EQ(Post("/api/v1/schedule", "")->status, 200);
  std::string ifname;
  for (int i = 0; i < 200; ++i) ifname += "\xc3\xa9";  // é
  const std::string log = "h:1:1 [0] NCCL INFO NET/Socket : Using [0]" + ifname +
                          ":10.0.0.1<0>\nh:1:1 [0] NCCL INFO Using network Socket\n";
  auto r = Post("/api/v1/jobs/1/complete", json{{"exit_code", 1}, {"log", log}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string events = Get("/api/v1/events").dump();
  EXPECT_NE(events.find("cause nccl_transport_fallback"), std::string::npos) << events;
  server_.reset();
  service_.reset();
  Boot();
  EXPECT_EQ(Get("/api/v1/events").dump(), events);
}

TEST_F(ServerTest, ResponsesAreNeverBrotliCompressed) {
  // Debian's library compresses with Brotli at its slowest setting (docs/api.md): a browser's
  // Accept-Encoding gets gzip instead; a client that asks for br alone gets the plain body.
  for (const char* accept : {"gzip, deflate, br", "gzip, deflate, br, zstd", "  br ,gzip",
                             "gzip,\tbr", "br;q=1, gzip;q=0.5"}) {
    httplib::Headers h = {{"Accept-Encoding", accept}};
    auto r = client_->Get("/api/v1/topology", h);
    ASSERT_TRUE(r) << accept;
    EXPECT_EQ(r->status, 200) << accept;
    EXPECT_EQ(r->get_header_value("Content-Encoding"), "gzip") << accept;
  }
  for (const char* accept : {"br;q=1.0", "br ;q=1", "brotli"}) {
    httplib::Headers h = {{"Accept-Encoding", accept}};
    auto plain = client_->Get("/api/v1/topology", h);
    ASSERT_TRUE(plain) << accept;
    EXPECT_EQ(plain->status, 200) << accept;
    EXPECT_EQ(plain->get_header_value("Content-Encoding"), "") << accept;
    EXPECT_TRUE(json::parse(plain->body, nullptr, false).is_object()) << accept;
  }
}

TEST(ServerExtenderRoutesTest, VerbsReachTheExtenderOnlyWithTheToken) {
  const std::string dir = testing_api::MakeTempDir("toposched-ext-routes");
  ServiceOptions o;
  o.db_path = dir + "/state.db";
  o.background_passes = false;
  auto svc = Service::Open(toposched::testing::H100Cluster(), o);
  ASSERT_TRUE(svc.ok());
  ServerOptions so;
  so.token = kServerToken;
  so.log_requests = false;
  std::vector<std::string> seen;
  so.extender = [&seen](const std::string& verb, const std::string& body) -> StatusOr<std::string> {
    seen.push_back(verb + ":" + body);
    if (body == "bad") return InvalidArgumentError("ExtenderArgs: malformed JSON");
    return std::string(R"({"verb": ")") + verb + "\"}";
  };
  auto srv = Server::Start(**svc, so);
  ASSERT_TRUE(srv.ok());
  httplib::Client cli("127.0.0.1", (*srv)->port());
  const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kServerToken}};
  for (const char* verb : {"filter", "prioritize", "bind", "preempt", "pod-deleted"}) {
    // No credential, no call: kube-scheduler uses the extender listener (client certificates).
    auto denied = cli.Post(std::string("/extender/") + verb, "{}", "application/json");
    ASSERT_TRUE(denied);
    EXPECT_EQ(denied->status, 401) << verb;
  }
  EXPECT_TRUE(seen.empty());
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    auto r = cli.Post(std::string("/extender/") + verb, auth, "{}", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["verb"], verb);
  }
  auto bad = cli.Post("/extender/filter", auth, "bad", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["code"], "invalid_argument");
  EXPECT_EQ(cli.Post("/extender/unknown", auth, "{}", "application/json")->status, 404);
  EXPECT_EQ(seen.size(), 5u);
  // Other mutating calls still need the token.
  EXPECT_EQ(cli.Post("/api/v1/schedule", "", "application/json")->status, 401);
  srv->reset();
  svc->reset();
  testing_api::RemoveDir(dir);
}

TEST(ServerOptionsTest, BeyondLoopbackNeedsAToken) {
  ServerOptions o;
  o.host = "0.0.0.0";
  EXPECT_THAT(
      o.Validate(),
      StatusIs(
          StatusCode::kInvalidArgument,
          HasSubstr("listening on 0.0.0.0 (beyond loopback) needs a bearer token (--token-file)")));
  o.token = kServerToken;
  EXPECT_TRUE(o.Validate().ok());
  EXPECT_TRUE(IsLoopback("127.0.0.1"));
  EXPECT_TRUE(IsLoopback("127.1.2.3"));
  EXPECT_TRUE(IsLoopback("::1"));
  EXPECT_FALSE(IsLoopback("10.0.0.1"));
  EXPECT_EQ(HttpStatusOf(StatusCode::kNotFound), 404);
  EXPECT_EQ(ErrorCodeName(StatusCode::kFailedPrecondition), "failed_precondition");
}

}  // namespace
}  // namespace toposched::api
