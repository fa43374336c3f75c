// Tests for the hwloc XML reader against every sample in data/samples/hwloc-xml (hwloc 3.0
// format) and a 2.0-format fixture. The facts in the tables were read by hand from the files.
#include "topo/io/hwloc_xml.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/strings.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"

namespace toposched::topo::io {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const std::string kSampleDir = std::string(TS_SOURCE_DIR) + "/data/samples/hwloc-xml/";
const std::string kTestData = std::string(TS_SOURCE_DIR) + "/tests/topo/testdata/";

struct PairFact {
  std::string a, b, path;
};

struct GpuFact {
  int index;
  std::string bus_id;
  std::optional<int> numa;
  std::string cpus;  // FormatIntList of the affinity
};

struct HwlocSample {
  std::string path;  // relative to the repository root
  int gpus = 0;
  std::vector<std::string> nic_names;  // in NIC order
  std::vector<int> numa_ids;
  std::string gpu_model;  // node-wide model ("" when mixed)
  bool nvswitch = false;
  int nvswitch_count = 0;
  std::vector<GpuFact> gpu_facts;
  std::vector<PairFact> pairs;
};

std::vector<HwlocSample> Samples() {
  return {
      {"data/samples/hwloc-xml/hwloc-nvidiaDGX2.xml",
       16,
       {},
       {0, 1},
       "Tesla V100-SXM3-32GB-H",
       true,
       12,
       {{0, "0000:34:00.0", 0, "0-1"},
        {7, "0000:5e:00.0", 0, "0-1"},
        {8, "0000:b7:00.0", 1, "24-25"},
        {15, "0000:e7:00.0", 1, "24-25"}},
       {{"GPU0", "GPU1", "NV6"}, {"GPU0", "GPU15", "NV6"}, {"GPU7", "GPU8", "NV6"}}},
      {"data/samples/hwloc-xml/hwloc-power8-4xP100-nvlink.xml",
       4,
       {},
       {0, 1},
       "Tesla P100-SXM2-16GB",
       false,
       0,
       {{0, "0002:01:00.0", 0, "0-1,8-9,16-17,24-25"},
        {3, "000b:01:00.0", 1, "80-81,88-89,96-97,104-105"}},
       {{"GPU0", "GPU1", "NV2"},
        {"GPU2", "GPU3", "NV2"},
        {"GPU0", "GPU2", "SYS"},
        {"GPU1", "GPU3", "SYS"}}},
      {"tests/topo/testdata/hwloc-v2-power8-4xP100.xml",
       4,
       {},
       {0, 1},
       "Tesla P100-SXM2-16GB",
       false,
       0,
       {{1, "0003:01:00.0", 0, "0-1,8-9,16-17,24-25"}},
       {{"GPU0", "GPU1", "NV2"}, {"GPU2", "GPU3", "NV2"}, {"GPU1", "GPU2", "SYS"}}},
      {"data/samples/hwloc-xml/hwloc-32em64t-2n-K40m-pci-normalio.xml",
       4,
       {"mlx5_0", "eth0", "eth1"},
       {0, 1},
       "",
       false,
       0,
       {{0, "0000:03:00.0", 0, "0-7,16-23"},
        {1, "0000:83:00.0", 1, "8-15,24-31"},
        {2, "0000:84:00.0", 1, "8-15,24-31"},
        {3, "0000:84:00.1", 1, "8-15,24-31"}},
       {{"GPU0", "GPU1", "SYS"},
        {"GPU1", "GPU2", "PHB"},
        {"GPU2", "GPU3", "PHB"},
        {"GPU2", "mlx5_0", "PHB"},
        {"GPU0", "mlx5_0", "SYS"},
        {"eth0", "eth1", "PHB"}}},
  };
}

TEST(HwlocXmlSamples, EverySampleFileIsInTheTable) {
  std::set<std::string> listed;
  for (const HwlocSample& s : Samples()) listed.insert(s.path);
  std::vector<std::string> files = testing::SampleFiles("hwloc-xml", ".xml");
  for (const std::string& f : files) {
    std::string rel = "data/samples/hwloc-xml/" + f;
    EXPECT_TRUE(listed.count(rel)) << rel << " has no row in the sample table";
  }
  EXPECT_EQ(files.size(), 3u);
}

TEST(HwlocXmlSamples, FactsReadByHand) {
  for (const HwlocSample& s : Samples()) {
    SCOPED_TRACE(s.path);
    auto r = ReadHwlocXmlFile(std::string(TS_SOURCE_DIR) + "/" + s.path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const NodeTopology& t = *r;
    EXPECT_TRUE(t.Validate().ok());
    EXPECT_TRUE(StartsWith(t.source, "hwloc:")) << t.source;
    EXPECT_EQ(static_cast<int>(t.gpus.size()), s.gpus);
    std::vector<std::string> names;
    for (const Nic& n : t.nics) names.push_back(n.name);
    EXPECT_EQ(names, s.nic_names);
    std::vector<int> numa_ids;
    for (const NumaNode& n : t.numa_nodes) {
      numa_ids.push_back(n.id);
      EXPECT_FALSE(n.cpus.empty()) << "NUMA " << n.id;
    }
    EXPECT_EQ(numa_ids, s.numa_ids);
    EXPECT_EQ(t.gpu_model, s.gpu_model);
    EXPECT_EQ(t.nvswitch, s.nvswitch);
    EXPECT_EQ(t.nvswitch_count, s.nvswitch_count);
    for (const GpuFact& f : s.gpu_facts) {
      int pos = t.gpu_pos(f.index);
      ASSERT_GE(pos, 0) << "GPU" << f.index;
      const Gpu& g = t.gpus[pos];
      EXPECT_EQ(g.pci_bus_id, f.bus_id) << "GPU" << f.index;
      EXPECT_EQ(g.numa, f.numa) << "GPU" << f.index;
      ASSERT_TRUE(g.cpus.has_value()) << "GPU" << f.index;
      EXPECT_EQ(FormatIntList(*g.cpus), f.cpus) << "GPU" << f.index;
    }
    for (const PairFact& p : s.pairs) {
      int a = t.FindDevice(p.a), b = t.FindDevice(p.b);
      ASSERT_GE(a, 0) << p.a;
      ASSERT_GE(b, 0) << p.b;
      EXPECT_EQ(PathName(t.path(a, b)), p.path) << p.a << "-" << p.b;
    }
  }
}

TEST(HwlocXmlDgx2, SixteenGpusOnTwelveNvSwitchesAllNv6) {
  auto r = ReadHwlocXmlFile(kSampleDir + "hwloc-nvidiaDGX2.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  ASSERT_EQ(t.gpus.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(t.gpus[i].index, i);  // nvml0..nvml15
    EXPECT_EQ(t.gpus[i].nvlink_ports, 6);
    EXPECT_FALSE(t.gpus[i].memory_mib.has_value());  // NVML gives no memory size
    for (int j = 0; j < 16; ++j) {
      if (i != j) {
        EXPECT_EQ(t.gpu_gpu(i, j), (Path{PathClass::kNV, 6})) << i << "-" << j;
      }
    }
  }
  EXPECT_TRUE(t.nics.empty());
  // Two levels of PLX switches under each root port: GPU0/GPU1 share the lower switch,
  // GPU0/GPU2 only the upper one; GPU4 hangs off another host bridge of socket 0.
  const PciePlacement& p0 = t.gpus[0].pcie;
  const PciePlacement& p1 = t.gpus[1].pcie;
  const PciePlacement& p2 = t.gpus[2].pcie;
  const PciePlacement& p4 = t.gpus[4].pcie;
  ASSERT_EQ(p0.switches.size(), 2u);
  EXPECT_EQ(p0.switches, p1.switches);
  EXPECT_EQ(p0.switches[0], p2.switches[0]);
  EXPECT_NE(p0.switches[1], p2.switches[1]);
  EXPECT_EQ(p0.host_bridge, p2.host_bridge);
  EXPECT_NE(p0.host_bridge, p4.host_bridge);
  EXPECT_EQ(t.host_bridges.size(), 4u);
  ASSERT_GE(p0.host_bridge, 0);
  EXPECT_EQ(t.host_bridges[p0.host_bridge].numa, 0);
  EXPECT_EQ(t.pcie_switches[p0.switches[1]].parent, p0.switches[0]);
  EXPECT_EQ(t.pcie_switches[p0.switches[0]].pci_bus_id, "0000:2c:00.0");
}

TEST(HwlocXmlPower8, GpuPairsShareTwoP100LinksCpuLinksAreNotPairs) {
  auto r = ReadHwlocXmlFile(kSampleDir + "hwloc-power8-4xP100-nvlink.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_FALSE(t.nvswitch);
  for (const Gpu& g : t.gpus) {
    // 40000 MB/s to the peer GPU and to the CPU at 20 GB/s per NVLink 1.0 link.
    EXPECT_EQ(g.nvlink_ports, 4) << g.index;
    EXPECT_EQ(g.memory_mib, 16280) << g.index;  // CUDAGlobalMemorySize 16671616 KiB
    EXPECT_EQ(g.model, "Tesla P100-SXM2-16GB");
    EXPECT_TRUE(g.pcie.switches.empty());  // directly below the root port
  }
  EXPECT_EQ(t.NvlinkIslands(), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(HwlocXml32em64t, NvidiaAndOpenClGpusAndRdmaNicCollapse) {
  auto r = ReadHwlocXmlFile(kSampleDir + "hwloc-32em64t-2n-K40m-pci-normalio.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  ASSERT_EQ(t.gpus.size(), 4u);
  // Only 84:00.0 has a CUDA device, so indices follow PCI bus order.
  EXPECT_EQ(t.gpus[0].model, "Tesla M2075 Dual-Slot Computing Processor Module");  // PCI name
  EXPECT_EQ(t.gpus[2].model, "Tesla K40m");                                        // GPUModel
  EXPECT_EQ(t.gpus[2].memory_mib, 11519);                                          // 11796032 KiB
  EXPECT_EQ(t.gpus[3].model, "AMD Radeon R9 200 / HD 7900 Series");                // AMD via OpenCL
  EXPECT_EQ(t.gpus[3].memory_mib, 3015);
  EXPECT_FALSE(t.gpus[0].memory_mib.has_value());
  // The Matrox VGA chip (05:03.0) is no GPU.
  for (const Gpu& g : t.gpus) EXPECT_NE(g.pci_bus_id, "0000:05:03.0");

  // ib0 + mlx5_0 on one PCI device are one NIC named after the OpenFabrics device.
  ASSERT_EQ(t.nics.size(), 3u);
  const Nic& ib = t.nics[0];
  EXPECT_EQ(ib.name, "mlx5_0");
  EXPECT_EQ(ib.pci_bus_id, "0000:04:00.0");
  EXPECT_EQ(ib.link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(ib.port, 1);
  EXPECT_EQ(ib.numa, 1);
  EXPECT_FALSE(ib.rate_gbps.has_value());
  EXPECT_EQ(t.nics[1].link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(t.nics[1].index, 1);
  EXPECT_EQ(t.NearestNic(2), 0);
  EXPECT_EQ(t.host_bridges.size(), 2u);
  EXPECT_TRUE(t.pcie_switches.empty());  // only root ports
}

struct BadInput {
  std::string name;
  std::string text;
};

TEST(HwlocXmlMalformed, InvalidArgumentWithoutCrash) {
  std::string dgx2 = testing::ReadFileText(kSampleDir + "hwloc-nvidiaDGX2.xml");
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 7919 + 13) % 256));
  // Well-formed XML that libhwloc would trust and crash or allocate gigabytes on.
  std::string v2 = testing::ReadFileText(kTestData + "hwloc-v2-power8-4xP100.xml");
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string out = v2;
    size_t pos = out.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    if (pos != std::string::npos) out.replace(pos, from.size(), to);
    return out;
  };
  std::vector<BadInput> cases = {
      {"no-complete-cpuset", replace("complete_cpuset=", "incomplete_cpuset=")},
      {"bad-bitmap", replace("nodeset=\"0x00000003\"", "nodeset=\"0c00000003\"")},
      {"huge-nbobjs", replace("nbobjs=\"6\"", "nbobjs=\"-1\"")},
      {"bad-osdev-type", replace("osdev_type=\"5\"", "osdev_type=\"16\"")},
      {"truncated", dgx2.substr(0, dgx2.size() / 2)},
      {"truncated-at-start", dgx2.substr(0, 200)},
      {"not-xml", "GPU0 GPU1 CPU Affinity\nGPU0 X NV1\n"},
      {"binary", garbage},
      {"empty", ""},
      {"wrong-root", "<?xml version=\"1.0\"?><system version=\"1\"><cpu/></system>"},
      {"unclosed", "<topology version=\"2.0\"><object type=\"Machine\">"},
      {"no-machine", "<topology version=\"2.0\"><object type=\"Foo\"/></topology>"},
      // hwloc's bitmap reader aborts on a set that starts with a comma (found by CI's fuzzing).
      {"leading-comma", replace("nodeset=\"0x00000003\"", "nodeset=\",0x00000003\"")},
  };
  for (const BadInput& c : cases) {
    auto r = ParseHwlocXml(c.text, c.name + ".xml");
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, ::testing::StartsWith(c.name + ".xml")))
        << c.name;
  }
}

TEST(HwlocXmlMalformed, SyntaxErrorsCarryTheLine) {
  auto r = ParseHwlocXml("<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object </topology>",
                         "x.xml");
  ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, ::testing::StartsWith("x.xml:3: ")));
}

// Found by fuzzing (fuzz/regressions/hwloc_xml): an <info> whose `value` attribute was mangled
// made hwloc fail the load and leak the objects it had built (LeakSanitizer). It is refused
// before hwloc sees it, naming the line and the attribute.
TEST(HwlocXmlMalformed, InfoWithAnUnknownAttributeIsRefusedAtItsLine) {
  const std::string file =
      testing::SourceDir() + "/fuzz/regressions/hwloc_xml/leak-info-attribute-e8fe6603";
  auto t = ParseHwlocXml(testing::ReadFileText(file), "dgx2");
  ASSERT_THAT(
      t, StatusIs(StatusCode::kInvalidArgument, HasSubstr("dgx2:144: <info>: attribute \"ue\"")));
  auto nameless = ParseHwlocXml(
      "<topology version=\"2.0\"><object type=\"Machine\" cpuset=\"0x1\" "
      "complete_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\">\n"
      "<info value=\"x\"/></object></topology>",
      "m");
  ASSERT_THAT(nameless,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("m:2: <info>: info without name")));
}

// Found by fuzzing (fuzz/regressions/hwloc_xml/segv-v1-*): libhwloc's importer of the 1.x layout
// (no version attribute) dereferences the sets an object lacks. 1.x files are refused with the
// line of <topology>, naming the version and what to do; 2.x and 3.x still load.
TEST(HwlocXmlMalformed, HwlocOneXmlIsRefusedNamingTheVersion) {
  const std::string sets =
      " cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\"";
  const std::string machine = "<object type=\"Machine\"" + sets + "><object type=\"NUMANode\" " +
                              "os_index=\"0\"" + sets + "/><object type=\"PU\" os_index=\"0\"" +
                              sets + "/></object></topology>";
  auto none = ParseHwlocXml("<?xml version=\"1.0\"?>\n<topology>" + machine, "old.xml");
  ASSERT_THAT(
      none,
      StatusIs(
          StatusCode::kInvalidArgument,
          HasSubstr("old.xml:2: <topology> version=\"\": only hwloc XML 2.x and 3.x are read")));
  EXPECT_EQ(none.status().message(),
            "old.xml:2: <topology> version=\"\": only hwloc XML 2.x and 3.x are read (hwloc 1.x "
            "files are not: export again with lstopo from hwloc 2.0 or later)");
  auto one = ParseHwlocXml("<topology version=\"1.0\">" + machine, "one.xml");
  ASSERT_THAT(one, StatusIs(StatusCode::kInvalidArgument,
                            ::testing::StartsWith("one.xml:1: <topology> version=\"1.0\": ")));
  for (const char* file :
       {"segv-v1-machine-without-sets", "segv-v1-numanode-without-complete-cpuset"}) {
    auto r = ParseHwlocXml(
        testing::ReadFileText(testing::SourceDir() + "/fuzz/regressions/hwloc_xml/" + file), file);
    ASSERT_THAT(
        r, StatusIs(StatusCode::kInvalidArgument, HasSubstr("only hwloc XML 2.x and 3.x are read")))
        << file;
  }
  EXPECT_TRUE(ParseHwlocXml("<topology version=\"2.0\">" + machine, "two.xml").ok());
}

// An infinite set ("0xf...f", optionally followed by words) is an hwloc bitmap: accepted.
TEST(HwlocXmlMalformed, InfiniteSetIsABitmap) {
  std::string v2 = testing::ReadFileText(kTestData + "hwloc-v2-power8-4xP100.xml");
  const std::string from = "allowed_cpuset=\"";
  size_t pos = v2.find(from);
  ASSERT_NE(pos, std::string::npos);
  size_t end = v2.find('"', pos + from.size());
  v2.replace(pos, end + 1 - pos, "allowed_cpuset=\"0xf...f\"");
  auto t = ParseHwlocXml(v2, "infinite.xml");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->gpus.size(), 4u);
}

TEST(HwlocXmlFile, MissingFileNamesThePath) {
  auto r = ReadHwlocXmlFile(kTestData + "no-such-hwloc.xml");
  ASSERT_THAT(r, StatusIs(StatusCode::kNotFound, HasSubstr("no-such-hwloc.xml")));
}

TEST(HwlocXmlSniff, LooksLikeHwlocXml) {
  EXPECT_TRUE(
      LooksLikeHwlocXml(testing::ReadFileText(kSampleDir + "hwloc-power8-4xP100-nvlink.xml")));
  EXPECT_TRUE(LooksLikeHwlocXml("<topology version=\"2.0\">"));
  EXPECT_FALSE(LooksLikeHwlocXml("<system version=\"1\">"));
  EXPECT_FALSE(LooksLikeHwlocXml("\tGPU0\tGPU1\n"));
}

}  // namespace
}  // namespace toposched::topo::io
