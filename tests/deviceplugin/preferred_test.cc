// GetPreferredAllocation over gRPC against the node-level choice: equal to `place-node`'s answer
// (the same NodeSelector, and the command itself on two samples) for every node topology of
// data/samples, every size 1..n, random available sets; must-include devices honoured; bad
// requests refused with the field named while the plugin keeps serving.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "select/node_select.h"
#include "testing/device_plugin.h"
#include "testing/status_matchers.h"

namespace toposched::deviceplugin {
namespace {

using testing::PluginClient;
using testing::SocketDir;

// Random available sets per (sample, size): two keep the sweep over every sample within a few
// seconds while covering both a tight and a loose set.
constexpr int kAvailableSetsPerSize = 2;

struct Preferred {
  grpc::Status status;
  std::vector<std::string> ids;
};

Preferred AskPreferred(v1beta1::DevicePlugin::Stub& stub, const std::vector<std::string>& available,
                       const std::vector<std::string>& must, int size) {
  v1beta1::PreferredAllocationRequest req;
  v1beta1::ContainerPreferredAllocationRequest* c = req.add_container_requests();
  for (const std::string& id : available) c->add_available_deviceids(id);
  for (const std::string& id : must) c->add_must_include_deviceids(id);
  c->set_allocation_size(size);
  v1beta1::PreferredAllocationResponse resp;
  grpc::ClientContext ctx;
  Preferred out;
  out.status = stub.GetPreferredAllocation(&ctx, req, &resp);
  if (out.status.ok() && resp.container_responses_size() == 1) {
    for (const std::string& id : resp.container_responses(0).deviceids()) out.ids.push_back(id);
  }
  return out;
}

std::vector<std::string> IndexIds(const topo::NodeTopology& t, const std::vector<int>& positions) {
  std::vector<std::string> out;
  for (int pos : positions) out.push_back(std::to_string(t.gpus[pos].index));
  return out;
}

// `k` or more healthy positions, chosen at random.
std::vector<int> RandomAvailable(const sched::GpuMask& healthy, int k, std::mt19937_64& rng) {
  std::vector<int> pool = healthy.Positions();
  std::shuffle(pool.begin(), pool.end(), rng);
  std::uniform_int_distribution<size_t> extra(0, pool.size() - static_cast<size_t>(k));
  pool.resize(static_cast<size_t>(k) + extra(rng));
  std::sort(pool.begin(), pool.end());
  return pool;
}

TEST(PreferredAllocationTest, EqualsPlaceNodesChoiceOnEverySampleAndSize) {
  std::mt19937_64 rng(20261207);
  int samples = 0;
  for (const std::string& path : testing::TopologySamples()) {
    auto t = topo::io::ImportTopologyFile(path, topo::io::TopoFormat::kAuto);
    if (!t.ok() || t->gpus.empty()) continue;  // the readers' own tests cover what fails here
    ++samples;
    SocketDir dir;
    auto plugin = testing::StartPlugin(*t, testing::TestPluginOptions(dir.path()));
    ASSERT_NE(plugin, nullptr) << path;
    auto stub = PluginClient(testing::TestPluginOptions(dir.path()).socket_path());
    auto selector = sched::NodeSelector::Create(*t, sched::CostModelObjective(*t));
    ASSERT_TRUE(selector.ok()) << path;
    const sched::GpuMask healthy = (*selector)->healthy();
    for (int k = 1; k <= healthy.count(); ++k) {
      for (int round = 0; round < kAvailableSetsPerSize; ++round) {
        const std::vector<int> avail = RandomAvailable(healthy, k, rng);
        sched::NodeRequest req;
        req.gpus = k;
        auto want = (*selector)->SelectUncached(sched::GpuMask::FromPositions(avail), req);
        ASSERT_TRUE(want.ok()) << path;
        const Preferred got = AskPreferred(*stub, IndexIds(*t, avail), {}, k);
        ASSERT_TRUE(got.status.ok()) << path << " k=" << k << ": " << got.status.error_message();
        ASSERT_EQ(got.ids, IndexIds(*t, want->order)) << path << " k=" << k;
      }
    }
  }
  EXPECT_GE(samples, 20);
}

#ifdef TS_CLI
// `toposched place-node --json`'s GPUs for k GPUs among `free`.
std::vector<std::string> PlaceNodeGpus(const std::string& topo, int k, const std::string& free) {
  const std::string cmd = std::string(TS_CLI) + " place-node --json --topo " + topo + " --gpus " +
                          std::to_string(k) + " --free " + free + " 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
  }
  std::vector<std::string> gpus;
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_object() && j.contains("gpus")) {
    for (const auto& g : j["gpus"]) gpus.push_back(std::to_string(g.get<int>()));
  }
  return gpus;
}

TEST(PreferredAllocationTest, EqualsThePlaceNodeCommandOnADgxAndAPcieSwitchNode) {
  struct Case {
    const char* sample;
    int k;
    std::vector<std::string> available;
    const char* free;
  };
  const std::vector<Case> cases = {
      {testing::kDgxH100Sample, 4, {"2", "3", "4", "5", "6", "7"}, "2-7"},
      {testing::kDgx1CubeMeshSample, 4, {"0", "1", "2", "3", "4", "5", "6", "7"}, "0-7"},
      {testing::kPcieSwitchSample, 2, {"1", "2", "3", "4", "5", "6"}, "1-6"},
      {testing::kPcieSwitchSample, 3, {"0", "2", "3", "6", "7"}, "0,2,3,6,7"},
  };
  for (const Case& c : cases) {
    const std::string path = testing::SamplePath(c.sample);
    SocketDir dir;
    auto plugin =
        testing::StartPlugin(testing::LoadSample(path), testing::TestPluginOptions(dir.path()));
    ASSERT_NE(plugin, nullptr);
    auto stub = PluginClient(testing::TestPluginOptions(dir.path()).socket_path());
    const Preferred got = AskPreferred(*stub, c.available, {}, c.k);
    ASSERT_TRUE(got.status.ok()) << got.status.error_message();
    EXPECT_EQ(got.ids, PlaceNodeGpus(path, c.k, c.free)) << c.sample << " k=" << c.k;
  }
}
#endif

class PreferredRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    topology_ = testing::LoadSample(testing::SamplePath(testing::kPcieSwitchSample));
    plugin_ = testing::StartPlugin(topology_, testing::TestPluginOptions(dir_.path()));
    ASSERT_NE(plugin_, nullptr);
    stub_ = PluginClient(testing::TestPluginOptions(dir_.path()).socket_path());
  }
  const std::vector<std::string> all_ = {"0", "1", "2", "3", "4", "5", "6", "7"};
  SocketDir dir_;
  topo::NodeTopology topology_;
  std::unique_ptr<DevicePlugin> plugin_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

TEST_F(PreferredRequestTest, MustIncludeGivesTheFastestSetContainingIt) {
  auto selector = sched::NodeSelector::Create(topology_, sched::CostModelObjective(topology_));
  ASSERT_TRUE(selector.ok());
  sched::NodeRequest req;
  req.gpus = 3;
  double best = 1e300;
  for (uint32_t s = 0; s < 256; ++s) {  // every 3-set holding GPU 5, priced
    if (std::popcount(s) != 3 || (s & (1u << 5)) == 0) continue;
    best = std::min(best, (*selector)->SetTimeMs(sched::GpuMask(s, 0), req));
  }
  const Preferred got = AskPreferred(*stub_, all_, {"5"}, 3);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  ASSERT_EQ(got.ids.size(), 3u);
  EXPECT_THAT(got.ids, ::testing::Contains("5"));
  std::vector<int> positions;
  for (const std::string& id : got.ids) positions.push_back(std::stoi(id));
  EXPECT_DOUBLE_EQ((*selector)->SetTimeMs(sched::GpuMask::FromPositions(positions), req), best);
}

TEST_F(PreferredRequestTest, MustIncludeOfTheWholeSizeIsAnsweredAsGiven) {
  const Preferred got = AskPreferred(*stub_, all_, {"0", "7"}, 2);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_THAT(got.ids, ::testing::UnorderedElementsAre("0", "7"));
}

TEST_F(PreferredRequestTest, MustIncludeLargerThanTheSizeIsRefused) {
  const Preferred got = AskPreferred(*stub_, all_, {"0", "1", "2"}, 2);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(got.status.error_message(),
              ::testing::HasSubstr("3 devices, more than the allocation size 2"));
}

TEST_F(PreferredRequestTest, AnUnknownDeviceIsRefusedWithItsField) {
  const Preferred got = AskPreferred(*stub_, {"0", "GPU-bogus"}, {}, 1);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(got.status.error_message(),
              ::testing::HasSubstr("available_deviceIDs[1]: unknown device id \"GPU-bogus\""));
}

TEST_F(PreferredRequestTest, ASizeOfZeroIsRefused) {
  const Preferred got = AskPreferred(*stub_, all_, {}, 0);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(got.status.error_message(), ::testing::HasSubstr("allocation_size: expected 1..8"));
}

TEST_F(PreferredRequestTest, ADeviceGivenTwiceIsRefused) {
  const Preferred got = AskPreferred(*stub_, {"1", "1"}, {}, 1);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(got.status.error_message(), ::testing::HasSubstr("given twice"));
}

TEST_F(PreferredRequestTest, MustIncludeOutsideTheAvailableIsRefused) {
  const Preferred got = AskPreferred(*stub_, {"0", "1"}, {"4"}, 2);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(got.status.error_message(), ::testing::HasSubstr("4 is not among the available"));
}

TEST_F(PreferredRequestTest, KeepsServingAfterBadRequests) {
  (void)AskPreferred(*stub_, {"GPU-bogus"}, {}, 1);
  (void)AskPreferred(*stub_, all_, {"0", "1", "2"}, 2);
  const Preferred got = AskPreferred(*stub_, all_, {}, 2);
  EXPECT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_EQ(got.ids.size(), 2u);
}

}  // namespace
}  // namespace toposched::deviceplugin
