// The plugin and a kubelet over the real v1beta1 protocol: registration, registering again when
// the kubelet restarts, the options, ListAndWatch streaming a GPU that turns unhealthy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "testing/device_plugin.h"
#include "testing/status_matchers.h"

namespace toposched::deviceplugin {
namespace {

using ::testing::ElementsAre;
using testing::FakeKubelet;
using testing::PluginClient;
using testing::SocketDir;

class RegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    options_ = testing::TestPluginOptions(dir_.path());
    topology_ = testing::LoadSample(testing::SamplePath(testing::kDgxH100Sample));
  }
  SocketDir dir_;
  PluginOptions options_;
  topo::NodeTopology topology_;
};

TEST_F(RegistrationTest, RegistersItsResourceWithTheKubelet) {
  FakeKubelet kubelet(options_.kubelet_socket_path());
  auto plugin = testing::StartPlugin(topology_, options_);
  ASSERT_NE(plugin, nullptr);
  ASSERT_TRUE(kubelet.WaitForRequests(1));
  const v1beta1::RegisterRequest r = kubelet.requests().front();
  EXPECT_EQ(r.version(), "v1beta1");
  EXPECT_EQ(r.endpoint(), "toposched-gpu.sock");
  EXPECT_EQ(r.resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(r.options().get_preferred_allocation_available());
  EXPECT_FALSE(r.options().pre_start_required());
  EXPECT_TRUE(std::filesystem::exists(options_.socket_path()));
}

TEST_F(RegistrationTest, RegistersAgainWhenTheKubeletRestarts) {
  auto kubelet = std::make_unique<FakeKubelet>(options_.kubelet_socket_path());
  auto plugin = testing::StartPlugin(topology_, options_);
  ASSERT_NE(plugin, nullptr);
  ASSERT_TRUE(kubelet->WaitForRequests(1));
  // A kubelet that starts removes every socket of the directory and serves kubelet.sock anew.
  kubelet.reset();
  std::filesystem::remove(options_.kubelet_socket_path());
  std::filesystem::remove(options_.socket_path());
  FakeKubelet restarted(options_.kubelet_socket_path());
  ASSERT_TRUE(restarted.WaitForRequests(1));
  EXPECT_EQ(restarted.requests().front().resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(std::filesystem::exists(options_.socket_path()));  // served again
  grpc::ClientContext ctx;
  v1beta1::DevicePluginOptions reply;
  EXPECT_TRUE(PluginClient(options_.socket_path())->GetDevicePluginOptions(&ctx, {}, &reply).ok());
}

TEST_F(RegistrationTest, RegistersAgainWhenOnlyKubeletSockIsRecreated) {
  auto kubelet = std::make_unique<FakeKubelet>(options_.kubelet_socket_path());
  auto plugin = testing::StartPlugin(topology_, options_);
  ASSERT_NE(plugin, nullptr);
  ASSERT_TRUE(kubelet->WaitForRequests(1));
  kubelet.reset();
  std::filesystem::remove(options_.kubelet_socket_path());
  FakeKubelet restarted(options_.kubelet_socket_path());
  ASSERT_TRUE(restarted.WaitForRequests(1));
  EXPECT_EQ(restarted.requests().front().endpoint(), "toposched-gpu.sock");
}

TEST_F(RegistrationTest, KeepsTryingUntilAKubeletComes) {
  auto plugin = testing::StartPlugin(topology_, options_);
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->registrations(), 0);
  FakeKubelet late(options_.kubelet_socket_path());
  ASSERT_TRUE(late.WaitForRequests(1));
  EXPECT_EQ(late.requests().size(), 1u);
}

TEST_F(RegistrationTest, AnswersItsOptions) {
  auto plugin = testing::StartPlugin(topology_, options_);
  ASSERT_NE(plugin, nullptr);
  grpc::ClientContext ctx;
  v1beta1::DevicePluginOptions reply;
  ASSERT_TRUE(PluginClient(options_.socket_path())->GetDevicePluginOptions(&ctx, {}, &reply).ok());
  EXPECT_TRUE(reply.get_preferred_allocation_available());
  EXPECT_FALSE(reply.pre_start_required());
}

TEST_F(RegistrationTest, ListAndWatchStreamsAGpuTurningUnhealthy) {
  auto plugin = testing::StartPlugin(topology_, options_);
  ASSERT_NE(plugin, nullptr);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + testing::kKubeletWait);
  auto stub = PluginClient(options_.socket_path());
  auto reader = stub->ListAndWatch(&ctx, {});
  v1beta1::ListAndWatchResponse first;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_EQ(first.devices_size(), 8);
  EXPECT_EQ(first.devices(0).id(), "0");
  EXPECT_EQ(first.devices(0).health(), "Healthy");
  EXPECT_THAT(first.devices(0).topology().nodes(), ::testing::SizeIs(1));
  EXPECT_EQ(first.devices(0).topology().nodes(0).id(), 0);
  EXPECT_EQ(first.devices(7).topology().nodes(0).id(), 1);
  ASSERT_THAT(plugin->SetHealthy("3", false), testing::IsOk());
  v1beta1::ListAndWatchResponse second;
  ASSERT_TRUE(reader->Read(&second));
  EXPECT_EQ(second.devices(3).health(), "Unhealthy");
  EXPECT_EQ(second.devices(2).health(), "Healthy");
  ctx.TryCancel();
}

TEST_F(RegistrationTest, HealthOfAnUnknownDeviceIsRefused) {
  auto plugin = testing::StartPlugin(topology_, options_);
  ASSERT_NE(plugin, nullptr);
  EXPECT_THAT(plugin->SetHealthy("GPU-nope", false),
              testing::StatusIs(StatusCode::kNotFound, ::testing::HasSubstr("\"GPU-nope\"")));
}

TEST_F(RegistrationTest, StopRemovesTheSocket) {
  auto plugin = testing::StartPlugin(topology_, options_);
  ASSERT_NE(plugin, nullptr);
  plugin->Stop();
  EXPECT_FALSE(std::filesystem::exists(options_.socket_path()));
}

}  // namespace
}  // namespace toposched::deviceplugin
