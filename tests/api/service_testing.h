// The API tests' daemon: a Service on the example H100 cluster (two racks, 256 GPUs) with its
// SQLite file in a test directory, and the server options that serve its extender verbs, on the
// main listener and (with the test certificates of testdata/tls) on the HTTPS listener.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "api/api_testing.h"
#include "api/server.h"
#include "api/service.h"
#include "core/status.h"
#include "testing/clusters.h"

namespace toposched::testing_api {

// Passes on demand only (no background loop), extender on.
inline StatusOr<std::unique_ptr<api::Service>> OpenTestService(const std::string& dir) {
  api::ServiceOptions o;
  o.db_path = dir + "/state.db";
  o.background_passes = false;
  o.extender = true;
  return api::Service::Open(toposched::testing::H100Cluster(), o);
}

// The main listener with `token`, request logging off, the extender verbs answered by `svc`;
// with `tls_dir` ("" for none) also the extender's HTTPS listener (server.crt, server.key,
// clients signed by ca.crt).
inline api::ServerOptions ExtenderServerOptions(api::Service* svc, const std::string& token,
                                                const std::string& tls_dir = "") {
  api::ServerOptions so;
  so.token = token;
  so.log_requests = false;
  so.extender = [svc](const std::string& verb, const std::string& body) {
    return svc->ExtenderCall(verb, body);
  };
  if (!tls_dir.empty()) {
    so.extender_tls.cert_file = tls_dir + "server.crt";
    so.extender_tls.key_file = tls_dir + "server.key";
    so.extender_tls.client_ca_file = tls_dir + "ca.crt";
  }
  return so;
}

// A daemon on the example H100 cluster in a fresh test directory, on a clock the test moves
// (now_us_), passes on demand, SQLite without fsync; Open again to restart it by replay.
class ClockedServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("toposched-service"); }
  void TearDown() override { RemoveDir(dir_); }

  std::unique_ptr<api::Service> Open() {
    api::ServiceOptions o;
    o.db_path = dir_ + "/state.db";
    o.store.sync_full = false;
    o.background_passes = false;
    o.clock_us = [this] { return now_us_; };
    auto s = api::Service::Open(toposched::testing::H100Cluster(), o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string dir_;
  int64_t now_us_ = 1'000'000;
};

}  // namespace toposched::testing_api
