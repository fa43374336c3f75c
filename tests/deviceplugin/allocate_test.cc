// Allocate over gRPC: the container's GPUs in NVLink ring order (local rank i <-> GPU i), the
// NICs nearest them, the NCCL topology file, device nodes, CDI names; bad requests refused.
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "core/strings.h"
#include "testing/device_plugin.h"

namespace toposched::deviceplugin {
namespace {

using ::testing::HasSubstr;
using testing::PluginClient;
using testing::SocketDir;

struct Allocated {
  grpc::Status status;
  v1beta1::ContainerAllocateResponse response;
  std::map<std::string, std::string> envs;
};

Allocated AskAllocate(v1beta1::DevicePlugin::Stub& stub, const std::vector<std::string>& ids) {
  v1beta1::AllocateRequest req;
  v1beta1::ContainerAllocateRequest* c = req.add_container_requests();
  for (const std::string& id : ids) c->add_devicesids(id);
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  Allocated out;
  out.status = stub.Allocate(&ctx, req, &resp);
  if (out.status.ok() && resp.container_responses_size() == 1) {
    out.response = resp.container_responses(0);
    out.envs.insert(out.response.envs().begin(), out.response.envs().end());
  }
  return out;
}

void Touch(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "";
}

class AllocateTest : public ::testing::Test {
 protected:
  void Start(const char* sample, PluginOptions options) {
    topology_ = testing::LoadSample(testing::SamplePath(sample));
    plugin_ = testing::StartPlugin(topology_, options, driver_);
    ASSERT_NE(plugin_, nullptr);
    stub_ = PluginClient(options.socket_path());
  }
  SocketDir dir_;
  std::map<std::string, DriverGpu> driver_;
  topo::NodeTopology topology_;
  std::unique_ptr<DevicePlugin> plugin_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(AllocateTest, RingOrderFollowsNvlinkOnAHybridCubeMesh) {
  Start(testing::kDgx1CubeMeshSample, testing::TestPluginOptions(dir_.path()));
  const Allocated a = AskAllocate(*stub_, {"0", "1", "2", "3", "4", "5", "6", "7"});
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  const std::vector<std::string> ring = Split(a.envs.at("TOPOSCHED_RING"), ',');
  ASSERT_EQ(ring.size(), 8u);
  for (size_t i = 0; i < ring.size(); ++i) {  // every ring edge, the closing one too, on NVLink
    const int from = topology_.gpu_pos(std::stoi(ring[i]));
    const int to = topology_.gpu_pos(std::stoi(ring[(i + 1) % ring.size()]));
    EXPECT_EQ(topology_.path(from, to).cls, topo::PathClass::kNV) << a.envs.at("TOPOSCHED_RING");
  }
  // Without UUIDs, CUDA_VISIBLE_DEVICES names the container's ordinals (GPUs by index) in that
  // order, and NVIDIA_VISIBLE_DEVICES the devices themselves.
  EXPECT_EQ(a.envs.at("CUDA_VISIBLE_DEVICES"), a.envs.at("TOPOSCHED_RING"));
  EXPECT_EQ(a.envs.at("NVIDIA_VISIBLE_DEVICES"), a.envs.at("TOPOSCHED_RING"));
  EXPECT_EQ(a.envs.at("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
}

TEST_F(AllocateTest, NcclIbHcaNamesTheNicsNearestTheGpus) {
  Start(testing::kDgxH100Sample, testing::TestPluginOptions(dir_.path()));
  const Allocated a = AskAllocate(*stub_, {"7", "5", "4", "6"});
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  EXPECT_EQ(a.envs.at("TOPOSCHED_RING"), "4,5,6,7");
  EXPECT_EQ(a.envs.at("NCCL_IB_HCA"), "=mlx5_4,mlx5_5,mlx5_6,mlx5_7");
  EXPECT_EQ(a.envs.at("NVIDIA_VISIBLE_DEVICES"), "4,5,6,7");
  // The container sees four GPUs: ordinals 0..3 in PCI order.
  EXPECT_EQ(a.envs.at("CUDA_VISIBLE_DEVICES"), "0,1,2,3");
  EXPECT_EQ(a.envs.at("TOPOSCHED_NUMA_NODES"), "1,1,1,1");
}

TEST_F(AllocateTest, UuidsNameTheGpusWhenTheDriverGivesThem) {
  topology_ = testing::LoadSample(testing::SamplePath(testing::kDgxH100Sample));
  for (size_t i = 0; i < topology_.gpus.size(); ++i) {
    topology_.gpus[i].pci_bus_id = "00000000:" + std::to_string(10 + i) + ":00.0";
    driver_["0000:" + std::to_string(10 + i) + ":00.0"] = {"GPU-0000000" + std::to_string(i),
                                                           static_cast<int>(7 - i)};
  }
  PluginOptions o = testing::TestPluginOptions(dir_.path());
  Touch(o.dev_root + "/nvidia3");  // minor of GPU 4
  Touch(o.dev_root + "/nvidiactl");
  plugin_ = testing::StartPlugin(topology_, o, driver_);
  ASSERT_NE(plugin_, nullptr);
  stub_ = PluginClient(o.socket_path());
  const Allocated a = AskAllocate(*stub_, {"GPU-00000005", "GPU-00000004"});
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  EXPECT_EQ(a.envs.at("CUDA_VISIBLE_DEVICES"), "GPU-00000004,GPU-00000005");
  EXPECT_EQ(a.envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-00000004,GPU-00000005");
  ASSERT_EQ(a.response.devices_size(), 2);  // nvidia2 (GPU 5) does not exist here
  EXPECT_EQ(a.response.devices(0).container_path(), "/dev/nvidia3");
  EXPECT_EQ(a.response.devices(0).host_path(), o.dev_root + "/nvidia3");
  EXPECT_EQ(a.response.devices(1).container_path(), "/dev/nvidiactl");
}

TEST_F(AllocateTest, RdmaDevicesOfTheNearestNicsAreGiven) {
  PluginOptions o = testing::TestPluginOptions(dir_.path());
  Touch(o.sys_root + "/class/infiniband/mlx5_4/device/infiniband_verbs/uverbs4/dev");
  Touch(o.sys_root + "/class/infiniband/mlx5_0/device/infiniband_verbs/uverbs0/dev");
  Touch(o.dev_root + "/infiniband/uverbs4");
  Touch(o.dev_root + "/infiniband/uverbs0");
  Touch(o.dev_root + "/infiniband/rdma_cm");
  Start(testing::kDgxH100Sample, o);
  const Allocated a = AskAllocate(*stub_, {"4"});
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  ASSERT_EQ(a.response.devices_size(), 2);
  EXPECT_EQ(a.response.devices(0).container_path(), "/dev/infiniband/uverbs4");
  EXPECT_EQ(a.response.devices(1).container_path(), "/dev/infiniband/rdma_cm");
  EXPECT_EQ(a.response.devices(1).permissions(), "rw");
}

TEST_F(AllocateTest, TheNcclTopologyFileIsMountedAndNamed) {
  PluginOptions o = testing::TestPluginOptions(dir_.path());
  o.nccl_topo_file = "/var/lib/toposched/nccl-topo.xml";
  Start(testing::kDgxH100Sample, o);
  const Allocated a = AskAllocate(*stub_, {"0", "1"});
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  EXPECT_EQ(a.envs.at("NCCL_TOPO_FILE"), "/etc/toposched/nccl-topo.xml");
  ASSERT_EQ(a.response.mounts_size(), 1);
  EXPECT_EQ(a.response.mounts(0).host_path(), "/var/lib/toposched/nccl-topo.xml");
  EXPECT_EQ(a.response.mounts(0).container_path(), "/etc/toposched/nccl-topo.xml");
  EXPECT_TRUE(a.response.mounts(0).read_only());
}

TEST_F(AllocateTest, CdiNamesFollowTheRingWhenAskedFor) {
  PluginOptions o = testing::TestPluginOptions(dir_.path());
  o.cdi = true;
  Start(testing::kDgxH100Sample, o);
  const Allocated a = AskAllocate(*stub_, {"3", "2"});
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  ASSERT_EQ(a.response.cdi_devices_size(), 2);
  EXPECT_EQ(a.response.cdi_devices(0).name(), "nvidia.com/gpu=2");
  EXPECT_EQ(a.response.cdi_devices(1).name(), "nvidia.com/gpu=3");
}

TEST_F(AllocateTest, NoCdiNamesByDefault) {
  Start(testing::kDgxH100Sample, testing::TestPluginOptions(dir_.path()));
  const Allocated a = AskAllocate(*stub_, {"3", "2"});
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  EXPECT_EQ(a.response.cdi_devices_size(), 0);
}

TEST_F(AllocateTest, AnUnknownDeviceIsRefusedAndTheNextRequestServed) {
  Start(testing::kDgxH100Sample, testing::TestPluginOptions(dir_.path()));
  const Allocated bad = AskAllocate(*stub_, {"0", "GPU-unknown"});
  EXPECT_EQ(bad.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(bad.status.error_message(),
              HasSubstr("container_requests[0]: devicesIDs[1]: unknown device id \"GPU-unknown\""));
  const Allocated good = AskAllocate(*stub_, {"0"});
  EXPECT_TRUE(good.status.ok()) << good.status.error_message();
}

// Bytes that are no protobuf message (a field with number 0, then a varint cut short) sent as
// an Allocate request: gRPC refuses them before the plugin sees them, and the plugin serves on.
TEST_F(AllocateTest, AMalformedMessageIsRefusedAndTheNextRequestServed) {
  Start(testing::kDgxH100Sample, testing::TestPluginOptions(dir_.path()));
  auto channel =
      grpc::CreateChannel("unix://" + testing::TestPluginOptions(dir_.path()).socket_path(),
                          grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  const char garbage[] = {'\x00', '\xff', '\xff', '\xff'};
  grpc::Slice slice(garbage, sizeof garbage);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::ClientContext ctx;
  grpc::CompletionQueue cq;
  auto call = generic.PrepareUnaryCall(&ctx, "/v1beta1.DevicePlugin/Allocate", request, &cq);
  call->StartCall();
  grpc::Status status;
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  // gRPC's own refusal: the request does not parse, so the plugin's handler never runs (its
  // message is empty: gRPC gives no field or offset).
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL) << status.error_message();
  const Allocated good = AskAllocate(*stub_, {"0"});
  EXPECT_TRUE(good.status.ok()) << good.status.error_message();
}

TEST_F(AllocateTest, AnEmptyDeviceListIsRefused) {
  Start(testing::kDgxH100Sample, testing::TestPluginOptions(dir_.path()));
  const Allocated a = AskAllocate(*stub_, {});
  EXPECT_EQ(a.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(a.status.error_message(), HasSubstr("devicesIDs: empty"));
}

}  // namespace
}  // namespace toposched::deviceplugin
