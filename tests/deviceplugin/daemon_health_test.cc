// The daemon's view of a GPU's health reaches the kubelet: a GPU the daemon holds failed (the
// real daemon, api::Service, in process, its GET /api/v1/nodes answer) is streamed Unhealthy by
// ListAndWatch over the real gRPC API, and Healthy again once the daemon holds it healthy.
#include "deviceplugin/daemon_health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "api/service.h"
#include "testing/clusters.h"
#include "testing/device_plugin.h"
#include "testing/status_matchers.h"

namespace toposched::deviceplugin {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::PluginClient;
using testing::SocketDir;
using testing::StatusIs;

constexpr char kDaemonNode[] = "gpu001";

class DaemonHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api::ServiceOptions o;
    o.db_path = dir_.path() + "/state.db";
    o.store.sync_full = false;
    o.background_passes = false;
    auto s = api::Service::Open(testing::H100Cluster(), o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    daemon_ = std::move(*s);
  }
  StatusOr<std::vector<int>> Failed() {
    return DaemonFailedGpus(daemon_->NodesJson(), kDaemonNode, 8);
  }
  SocketDir dir_;
  std::unique_ptr<api::Service> daemon_;
};

TEST_F(DaemonHealthTest, TheDaemonsFailedGpuIsStreamedUnhealthyAndBackWhenItRecovers) {
  const topo::Cluster& cluster = testing::H100Cluster();
  auto plugin = testing::StartPlugin(cluster.topology(cluster.FindNode(kDaemonNode)),
                                     testing::TestPluginOptions(dir_.path()));
  ASSERT_NE(plugin, nullptr);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + testing::kKubeletWait);
  auto stub = PluginClient(testing::TestPluginOptions(dir_.path()).socket_path());
  auto reader = stub->ListAndWatch(&ctx, {});
  v1beta1::ListAndWatchResponse first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_EQ(first.devices_size(), 8);
  EXPECT_EQ(first.devices(3).health(), "Healthy");

  ASSERT_THAT(daemon_->ReportHealth("gpu", kDaemonNode, 3, "unhealthy", "XID 79"), testing::IsOk());
  ASSERT_THAT(daemon_->ReportHealth("gpu", kDaemonNode, 5, "degraded", "NVLink CRC"),
              testing::IsOk());
  ASSERT_THAT(Failed(), testing::IsOk());
  EXPECT_THAT(*Failed(), ElementsAre(3));  // degraded GPUs stay offered
  ASSERT_THAT(plugin->SetDaemonFailed(*Failed()), testing::IsOk());
  v1beta1::ListAndWatchResponse second;
  ASSERT_TRUE(reader->Read(&second));
  EXPECT_EQ(second.devices(3).health(), "Unhealthy");
  EXPECT_EQ(second.devices(5).health(), "Healthy");

  ASSERT_THAT(daemon_->ReportHealth("gpu", kDaemonNode, 3, "healthy", "replaced"), testing::IsOk());
  ASSERT_THAT(plugin->SetDaemonFailed(*Failed()), testing::IsOk());
  v1beta1::ListAndWatchResponse third;
  ASSERT_TRUE(reader->Read(&third));
  EXPECT_EQ(third.devices(3).health(), "Healthy");
  ctx.TryCancel();
}

TEST_F(DaemonHealthTest, AViewThatDoesNotFitThisNodeIsRefused) {
  EXPECT_THAT(DaemonFailedGpus(daemon_->NodesJson(), "gpu999", 8),
              StatusIs(StatusCode::kNotFound, HasSubstr("the daemon has no node gpu999")));
  EXPECT_THAT(DaemonFailedGpus(daemon_->NodesJson(), kDaemonNode, 4),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("the daemon's node gpu001 has 8 GPUs, this one 4")));
  EXPECT_THAT(DaemonFailedGpus("[]", kDaemonNode, 8),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("expected {\"nodes\": [...]}")));
  EXPECT_THAT(DaemonFailedGpus(R"({"nodes": [{"name": "gpu001", "gpus": 8,
                                  "gpu_health": [{"gpu": 9, "health": "unhealthy"}]}]})",
                               kDaemonNode, 8),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("daemon nodes[0].gpu_health[0].gpu: 9 is outside 0..7")));
  const topo::Cluster& cluster = testing::H100Cluster();
  auto plugin = testing::StartPlugin(cluster.topology(cluster.FindNode(kDaemonNode)),
                                     testing::TestPluginOptions(dir_.path()));
  ASSERT_NE(plugin, nullptr);
  EXPECT_THAT(plugin->SetDaemonFailed({8}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("outside this node's 0..7")));
}

}  // namespace
}  // namespace toposched::deviceplugin
