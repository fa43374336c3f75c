// The extender's own listener (issue 18: no change on any port without a credential): HTTPS on
// 127.0.0.1, kube-scheduler's four verbs only, to clients presenting a certificate signed by the
// configured CA. A real TLS handshake with OpenSSL on both sides; the certificates are test
// material (tests/api/testdata/tls/PROVENANCE.md).
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
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
using ::toposched::testing::StatusIs;

using nlohmann::json;

const std::string kTls = std::string(TS_SOURCE_DIR) + "/tests/api/testdata/tls/";
constexpr const char* kTlsToken = "extender-tls-token-0123456789";

std::string FilterBody(const std::string& pod_name) {
  json names = json::array();
  for (const auto& n : toposched::testing::H100Cluster().nodes) names.push_back(n.name);
  json pod = {{"kind", "Pod"},
              {"apiVersion", "v1"},
              {"metadata", {{"name", pod_name}, {"namespace", "ml"}, {"uid", "uid-" + pod_name}}},
              {"spec",
               {{"containers",
                 {{{"name", "t"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
  return json{{"Pod", pod}, {"NodeNames", names}}.dump();
}

class ExtenderTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_api::MakeTempDir("toposched-ext-tls");
    auto s = testing_api::OpenTestService(dir_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    service_ = std::move(s).value();
    auto srv = Server::Start(*service_, Options());
    ASSERT_TRUE(srv.ok()) << srv.status().ToString();
    server_ = std::move(srv).value();
    ASSERT_GT(server_->extender_port(), 0);
  }
  void TearDown() override {
    server_.reset();
    service_.reset();
    testing_api::RemoveDir(dir_);
  }
  ServerOptions Options() {
    return testing_api::ExtenderServerOptions(service_.get(), kTlsToken, kTls);
  }
  // A client that trusts the test CA, with the client certificate `who` ("" for none).
  std::unique_ptr<httplib::SSLClient> Client(const std::string& who) {
    auto c = who.empty()
                 ? std::make_unique<httplib::SSLClient>("127.0.0.1", server_->extender_port())
                 : std::make_unique<httplib::SSLClient>("127.0.0.1", server_->extender_port(),
                                                        kTls + who + ".crt", kTls + who + ".key");
    c->set_ca_cert_path((kTls + "ca.crt").c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(std::chrono::seconds(5));
    c->set_read_timeout(std::chrono::seconds(10));
    return c;
  }
  size_t Jobs() { return json::parse(service_->JobsJson({}))["jobs"].size(); }

  std::string dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<Server> server_;
};

TEST_F(ExtenderTlsTest, KubeSchedulersCertificateGetsTheVerbs) {
  auto c = Client("client");
  auto f = c->Post("/extender/filter", FilterBody("solo"), "application/json");
  ASSERT_TRUE(f) << httplib::to_string(f.error());
  ASSERT_EQ(f->status, 200) << f->body;
  const json fj = json::parse(f->body);
  ASSERT_EQ(fj["NodeNames"].size(), 1u) << f->body;
  auto p = c->Post("/extender/prioritize", FilterBody("solo"), "application/json");
  ASSERT_TRUE(p && p->status == 200);
  auto b = c->Post("/extender/bind",
                   json{{"PodName", "solo"},
                        {"PodNamespace", "ml"},
                        {"PodUID", "uid-solo"},
                        {"Node", fj["NodeNames"][0]}}
                       .dump(),
                   "application/json");
  ASSERT_TRUE(b && b->status == 200);
  EXPECT_EQ(json::parse(b->body), json({{"Error", ""}}));
  EXPECT_EQ(Jobs(), 1u);  // the pod group's job
}

TEST_F(ExtenderTlsTest, NoCertificateOrAnotherCasIsRefusedInTheHandshake) {
  for (const std::string who : {"", "rogue"}) {
    SCOPED_TRACE(who.empty() ? "no client certificate" : "signed by another CA");
    auto c = Client(who);
    auto f = c->Post("/extender/filter", FilterBody("intruder"), "application/json");
    EXPECT_FALSE(f) << "answered " << f->status;
  }
  EXPECT_EQ(Jobs(), 0u);
  // Plain HTTP on the TLS port gets nothing either.
  httplib::Client plain("127.0.0.1", server_->extender_port());
  plain.set_read_timeout(std::chrono::seconds(5));
  auto r = plain.Post("/extender/filter", FilterBody("intruder"), "application/json");
  EXPECT_TRUE(!r || r->status == 400) << r->status;
  EXPECT_EQ(Jobs(), 0u);
}

TEST_F(ExtenderTlsTest, ServesTheFourVerbsOnly) {
  auto c = Client("client");
  auto jobs = c->Get("/api/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 404);
  auto gone = c->Post("/extender/pod-deleted", R"({"PodName": "x", "PodNamespace": "ml"})",
                      "application/json");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404) << gone->body;
  auto submit = c->Post("/api/v1/jobs", testing_api::JobJson("x", 8), "application/json");
  ASSERT_TRUE(submit);
  EXPECT_EQ(submit->status, 404);
  EXPECT_EQ(Jobs(), 0u);
  // The main listener still wants the token for the verbs.
  httplib::Client main("127.0.0.1", server_->port());
  auto f = main.Post("/extender/filter", FilterBody("solo"), "application/json");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, 401);
}

TEST(ExtenderTlsOptions, MissingOrBadFilesAreClearErrors) {
  ServerOptions so;
  so.token = kTlsToken;
  so.extender = [](const std::string&, const std::string&) -> StatusOr<std::string> {
    return std::string("{}");
  };
  so.extender_tls.cert_file = kTls + "server.crt";
  so.extender_tls.key_file = kTls + "server.key";
  Status st = so.Validate();
  EXPECT_THAT(st, StatusIs(StatusCode::kInvalidArgument, HasSubstr("--extender-client-ca")));
  so.extender_tls.client_ca_file = kTls + "ca.crt";
  EXPECT_TRUE(so.Validate().ok());
  ServerOptions no_ext = so;
  no_ext.extender = nullptr;
  EXPECT_THAT(no_ext.Validate(), StatusIs(StatusCode::kInvalidArgument,
                                          HasSubstr("an extender listener without the extender")));

  const std::string dir = testing_api::MakeTempDir("toposched-ext-tls-bad");
  ServiceOptions o;
  o.db_path = dir + "/state.db";
  o.background_passes = false;
  auto svc = Service::Open(toposched::testing::H100Cluster(), o);
  ASSERT_TRUE(svc.ok());
  so.extender_tls.key_file = kTls + "no-such.key";
  auto srv = Server::Start(**svc, so);
  ASSERT_THAT(srv, StatusIs(StatusCode::kInvalidArgument, HasSubstr("no-such.key")));
  so.extender_tls.key_file = kTls + "PROVENANCE.md";  // readable, not a key
  srv = Server::Start(**svc, so);
  ASSERT_THAT(srv, StatusIs(StatusCode::kInvalidArgument, HasSubstr("could not be loaded")));
  svc->reset();
  testing_api::RemoveDir(dir);
}

}  // namespace
}  // namespace toposched::api
