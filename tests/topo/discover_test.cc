// Tests for live discovery: the running machine through hwloc (zero GPUs is a valid answer),
// and NIC rate / link layer from a fake sysfs tree in tests/topo/testdata/sysfs-ib.
#include "topo/io/discover.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/strings.h"
#include "testing/status_matchers.h"

namespace toposched::topo::io {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const std::string kFakeSysfs = std::string(TS_SOURCE_DIR) + "/tests/topo/testdata/sysfs-ib";

TEST(DiscoverLocal, ThisMachineHasNumaNodesWithCpus) {
  auto r = DiscoverLocal();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  EXPECT_TRUE(t.Validate().ok());
  EXPECT_TRUE(StartsWith(t.source, "discover:")) << t.source;
  ASSERT_GE(t.numa_nodes.size(), 1u);
  size_t cpus = 0;
  for (const NumaNode& n : t.numa_nodes) cpus += n.cpus.size();
  EXPECT_GE(cpus, 1u);
  // A machine with GPUs reports them with bus ids and a NUMA node that exists; one without
  // GPUs (the CI machine) reports none, which is no error.
  std::set<int> numa_ids;
  for (const NumaNode& n : t.numa_nodes) numa_ids.insert(n.id);
  for (const Gpu& g : t.gpus) {
    EXPECT_FALSE(g.pci_bus_id.empty()) << "GPU" << g.index;
    if (g.numa) {
      EXPECT_TRUE(numa_ids.count(*g.numa)) << "GPU" << g.index;
    }
  }
  for (size_t i = 0; i < t.nics.size(); ++i) EXPECT_EQ(t.nics[i].index, static_cast<int>(i));
}

TEST(DiscoverLocal, FakeSysfsGivesRdmaRateAndLinkLayer) {
  DiscoverOptions opts;
  opts.sysfs_root = kFakeSysfs;
  auto r = DiscoverLocal(opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;

  int ib = t.nic_pos("mlx5_0");
  ASSERT_GE(ib, 0);
  EXPECT_EQ(t.nics[ib].rate_gbps, 200.0);  // "200 Gb/sec (4X HDR)"
  EXPECT_EQ(t.nics[ib].link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(t.nics[ib].port, 1);

  int roce = t.nic_pos("mlx5_1");
  ASSERT_GE(roce, 0);
  EXPECT_EQ(t.nics[roce].rate_gbps, 100.0);
  EXPECT_EQ(t.nics[roce].link_layer, LinkLayer::kRoCE);  // Ethernet port of an RDMA device
  EXPECT_EQ(t.nics[roce].numa, 1);                       // device/numa_node
  EXPECT_TRUE(t.Validate().ok());

  // A netdev hwloc reports gets its speed (Mb/s) from class/net/<dev>/speed.
  int eth = t.nic_pos("eth0");
  if (eth >= 0) {
    EXPECT_EQ(t.nics[eth].rate_gbps, 25.0);
  }
}

TEST(DiscoverLocal, MissingSysfsTreeIsNoError) {
  DiscoverOptions opts;
  opts.sysfs_root = kFakeSysfs + "/does-not-exist";
  auto r = DiscoverLocal(opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST(DiscoverOptionsTest, EmptySysfsRootIsInvalid) {
  DiscoverOptions opts;
  EXPECT_TRUE(opts.Validate().ok());
  opts.sysfs_root = "";
  EXPECT_THAT(opts.Validate(), StatusIs(StatusCode::kInvalidArgument,
                                        HasSubstr("discover: sysfs_root must not be empty")));
  EXPECT_THAT(DiscoverLocal(opts), StatusIs(StatusCode::kInvalidArgument,
                                            HasSubstr("discover: sysfs_root must not be empty")));
}

}  // namespace
}  // namespace toposched::topo::io
