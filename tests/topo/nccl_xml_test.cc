// Tests for the NCCL/RCCL topology XML reader against every sample in data/samples/nccl-xml,
// plus small inline documents for NVSwitch links and malformed input. The facts in the tables
// were read by hand from the sample files.
#include "topo/io/nccl_xml.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/strings.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/json_io.h"
#include "topo/summary.h"

namespace toposched::topo::io {
namespace {

using ::testing::AllOf;
using ::testing::Not;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const std::string kNcclSampleDir = std::string(TS_SOURCE_DIR) + "/data/samples/nccl-xml/";

StatusOr<NodeTopology> ParseSample(const std::string& name) {
  return ParseNcclXml(testing::ReadFileText(kNcclSampleDir + name), name);
}

std::string P(const NodeTopology& t, const std::string& a, const std::string& b) {
  int da = t.FindDevice(a), db = t.FindDevice(b);
  if (da < 0 || db < 0) return "missing " + (da < 0 ? a : b);
  return PathName(t.path(da, db));
}

struct NcclPairFact {
  std::string a, b, path;
};

struct NcclSample {
  std::string file;
  std::string error;  // non-empty: expected error substring
  int gpus = 0;
  int nics = 0;
  std::vector<std::string> first_nics;  // leading NIC names in order
  std::vector<int> numa_ids;
  int switches = 0;
  std::string gpu_model;
  std::vector<std::pair<int, std::optional<int>>> gpu_numa;  // GPU index -> NUMA
  std::vector<NcclPairFact> pairs;
};

std::vector<NcclSample> NcclSamples() {
  return {
      // PCI root bus ids only, no classes: nothing is known to be a GPU or NIC.
      {"aws-ofi-nccl-g5.48xl-topo.xml", "", 0, 0, {}, {0, 1}, 0, "", {}, {}},
      {"aws-ofi-nccl-p4d-24xl-topo.xml",
       "",
       8,
       4,
       {"NIC0", "NIC1", "NIC2", "NIC3"},
       {0, 1},
       4,
       "A100-SXM4-40GB",
       {{0, 0}, {3, 0}, {4, 1}, {7, 1}},
       {{"GPU0", "GPU1", "PIX"},
        {"GPU0", "GPU2", "PHB"},
        {"GPU0", "GPU4", "SYS"},
        {"GPU0", "NIC0", "PIX"},
        {"GPU2", "NIC1", "PIX"},
        {"GPU6", "NIC3", "PIX"},
        {"GPU0", "NIC3", "SYS"}}},
      {"aws-ofi-nccl-p4de-24xl-topo.xml",
       "",
       8,
       4,
       {"NIC0"},
       {0, 1},
       4,
       "A100-SXM4-80GB",
       {{5, 1}},
       {{"GPU4", "GPU5", "PIX"}, {"GPU5", "NIC2", "PIX"}, {"GPU5", "NIC3", "PHB"}}},
      // Switches with class-less children: the file does not say which are GPUs or NICs.
      {"aws-ofi-nccl-p5.48xl-topo-v2023.xml", "", 0, 0, {}, {0, 1}, 8, "", {}, {}},
      {"aws-ofi-nccl-pr1226-p5.48xl-topo.xml",
       "",
       8,
       32,
       {"rdmap79s0", "rdmap80s0", "rdmap81s0", "rdmap82s0", "rdmap96s0"},
       {0},
       8,
       "sm_90",
       {{0, 0}, {7, 0}},
       {{"GPU0", "rdmap79s0", "PIX"},
        {"GPU0", "rdmap82s0", "PIX"},
        {"GPU0", "rdmap96s0", "PHB"},
        {"GPU7", "rdmap201s0", "PIX"},
        {"GPU0", "GPU1", "PHB"}}},
      {"azhpc-ncv4-graph.xml",
       "is an NCCL graph file (<graphs>), not a topology (<system>)",
       0,
       0,
       {},
       {},
       0,
       "",
       {},
       {}},
      {"azhpc-ncv4-topo.xml",
       "",
       4,
       1,
       {"eth0"},
       {0, 1, 2, 3},
       0,
       "A100 80GB PCIe",
       {{0, 0}, {1, 1}, {2, 2}, {3, 3}},
       {{"GPU0", "GPU1", "SYS"}, {"GPU0", "eth0", "PHB"}, {"GPU3", "eth0", "SYS"}}},
      {"azhpc-ndv2-topo.xml",
       "",
       8,
       1,
       {"NIC0"},
       {0, 1},
       0,
       "",
       {{0, 0}, {4, 1}},
       {{"GPU0", "GPU3", "PHB"},
        {"GPU0", "GPU4", "SYS"},
        {"GPU1", "NIC0", "PHB"},
        {"GPU5", "NIC0", "SYS"}}},
      // Bus-id order puts 0001:/0002: (socket 1) first.
      {"azhpc-ndv4-topo.xml",
       "",
       8,
       8,
       {"NIC0", "NIC1", "NIC2"},
       {0, 1, 2, 3},
       4,
       "",
       {{0, 1}, {1, 1}, {2, 0}, {3, 0}, {4, 3}, {6, 2}},
       {{"GPU0", "GPU1", "PIX"},
        {"GPU0", "NIC0", "PIX"},
        {"GPU2", "NIC2", "PIX"},
        {"GPU0", "GPU2", "SYS"},
        {"GPU6", "NIC6", "PIX"}}},
      {"rccl-topo_16p1h.xml",
       "",
       16,
       8,
       {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_7", "mlx5_8"},
       {0, 1, 2, 3},
       28,
       "AMD Instinct MI250X/MI250",
       {{0, 0}, {4, 1}, {8, 2}, {12, 3}},
       {{"GPU0", "GPU1", "NV4"},
        {"GPU0", "GPU2", "NV1"},
        {"GPU0", "GPU4", "NV2"},
        {"GPU0", "GPU3", "PXB"},
        {"GPU0", "mlx5_0", "PXB"},
        {"GPU0", "GPU8", "SYS"}}},
      {"rccl-topo_8p_940.xml",
       "",
       8,
       8,
       {"mlx5_0", "mlx5_1"},
       {0, 1},
       24,
       "AMD Instinct MI300X",
       {{0, 0}, {4, 1}},
       {{"GPU0", "GPU7", "NV1"},
        {"GPU3", "GPU4", "NV1"},
        {"GPU0", "mlx5_0", "PXB"},
        {"GPU0", "mlx5_1", "PHB"},
        {"GPU0", "mlx5_4", "SYS"}}},
      {"rccl-topo_8p_940vm.xml",
       "",
       8,
       8,
       {"mlx5_0"},
       {0, 1},
       0,
       "AMD Instinct MI300X VF",
       {{0, 0}, {7, 1}},
       {{"GPU0", "GPU1", "NV1"}, {"GPU0", "mlx5_2", "PHB"}, {"GPU0", "mlx5_4", "SYS"}}},
      {"rccl-topo_8p_pcie.xml",
       "",
       8,
       1,
       {"mlx5_0"},
       {0},
       10,
       "AMD gfx906",
       {{0, 0}},
       {{"GPU0", "GPU1", "PXB"},
        {"GPU0", "GPU4", "PHB"},
        {"GPU0", "mlx5_0", "PXB"},
        {"GPU4", "mlx5_0", "PHB"}}},
  };
}

TEST(NcclXmlSamples, EverySampleFileIsInTheTable) {
  std::set<std::string> listed;
  for (const NcclSample& s : NcclSamples()) listed.insert(s.file);
  std::vector<std::string> files = testing::SampleFiles("nccl-xml", ".xml");
  for (const std::string& f : files) {
    EXPECT_TRUE(listed.count(f)) << f << " has no row in the sample table";
  }
  EXPECT_EQ(files.size(), 13u);
}

TEST(NcclXmlSamples, FactsReadByHand) {
  for (const NcclSample& s : NcclSamples()) {
    SCOPED_TRACE(s.file);
    auto r = ParseSample(s.file);
    if (!s.error.empty()) {
      ASSERT_THAT(
          r, StatusIs(StatusCode::kInvalidArgument, AllOf(HasSubstr(s.error), HasSubstr(s.file))));
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const NodeTopology& t = *r;
    EXPECT_TRUE(t.Validate().ok());
    EXPECT_EQ(static_cast<int>(t.gpus.size()), s.gpus);
    EXPECT_EQ(static_cast<int>(t.nics.size()), s.nics);
    for (size_t i = 0; i < s.first_nics.size() && i < t.nics.size(); ++i) {
      EXPECT_EQ(t.nics[i].name, s.first_nics[i]) << "NIC " << i;
      EXPECT_EQ(t.nics[i].index, static_cast<int>(i));
    }
    std::vector<int> numa_ids;
    for (const NumaNode& n : t.numa_nodes) numa_ids.push_back(n.id);
    EXPECT_EQ(numa_ids, s.numa_ids);
    EXPECT_EQ(static_cast<int>(t.pcie_switches.size()), s.switches);
    EXPECT_EQ(t.gpu_model, s.gpu_model);
    for (const auto& [index, numa] : s.gpu_numa) {
      int pos = t.gpu_pos(index);
      ASSERT_GE(pos, 0) << "GPU" << index;
      EXPECT_EQ(t.gpus[pos].numa, numa) << "GPU" << index;
    }
    for (const NcclPairFact& p : s.pairs) EXPECT_EQ(P(t, p.a, p.b), p.path) << p.a << "-" << p.b;
  }
}

TEST(NcclXmlP4d, AffinityMasksBecomeCpuListsAndNearestNicIsOnTheSwitch) {
  auto r = ParseSample("aws-ofi-nccl-p4d-24xl-topo.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  // affinity="000000ff,ffff0000,00ffffff": words are most significant first.
  ASSERT_TRUE(t.gpus[0].cpus.has_value());
  EXPECT_EQ(FormatIntList(*t.gpus[0].cpus), "0-23,48-71");
  EXPECT_EQ(FormatIntList(t.numa_nodes[1].cpus), "24-47,72-95");
  EXPECT_EQ(t.gpus[0].pci_bus_id, "0000:10:1c.0");
  for (int g = 0; g < 8; ++g) EXPECT_EQ(t.NearestNic(g), g / 2) << "GPU" << g;
  EXPECT_EQ(t.nics[0].pci_bus_id, "0000:10:1b.0");
  EXPECT_EQ(t.nics[0].link_layer, LinkLayer::kUnknown);  // EFA, class 0x020000
  const PcieSwitch& sw = t.pcie_switches[0];
  EXPECT_EQ(sw.pci_bus_id, "ffff:ff:01.0");
  EXPECT_EQ(sw.gen, 3);  // 8 GT/s
  EXPECT_EQ(sw.width, 16);
  EXPECT_EQ(sw.host_bridge, 0);
  EXPECT_EQ(t.host_bridges[1].numa, 1);
}

TEST(NcclXmlNcv4, SelfLoopNvlinkIgnoredEthUnderCpu) {
  auto r = ParseSample("azhpc-ncv4-topo.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  for (const Gpu& g : t.gpus) EXPECT_EQ(g.nvlink_ports, 0) << g.index;
  EXPECT_TRUE(t.NvlinkIslands().size() == 4u);
  ASSERT_EQ(t.nics.size(), 1u);
  const Nic& eth = t.nics[0];
  EXPECT_EQ(eth.rate_gbps, 100.0);  // speed="100000" Mb/s
  EXPECT_EQ(eth.link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(eth.port, 0);
  EXPECT_EQ(eth.numa, 0);
  EXPECT_TRUE(eth.pci_bus_id.empty());
  EXPECT_EQ(eth.pcie.host_bridge, 0);
}

TEST(NcclXmlRccl, XgmiCountsAreNvClassLinks) {
  auto r = ParseSample("rccl-topo_8p_940.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  EXPECT_FALSE(t.nvswitch);
  for (const Gpu& g : t.gpus) EXPECT_EQ(g.nvlink_ports, 7) << g.index;
  EXPECT_EQ(t.nics[0].rate_gbps, 400.0);
  EXPECT_EQ(t.nics[0].link_layer, LinkLayer::kInfiniBand);

  // dev (not rank) numbers the GPUs: dev=1 rank=0 is 0021:00:00.0.
  auto vm = ParseSample("rccl-topo_8p_940vm.xml");
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  EXPECT_EQ(vm->gpus[vm->gpu_pos(0)].pci_bus_id, "0011:00:00.0");
  EXPECT_EQ(vm->gpus[vm->gpu_pos(1)].pci_bus_id, "0021:00:00.0");

  auto mi250 = ParseSample("rccl-topo_16p1h.xml");
  ASSERT_TRUE(mi250.ok()) << mi250.status().ToString();
  EXPECT_EQ(mi250->gpus[0].nvlink_ports, 7);  // 4 + 1 + 2
}

const char* kSwitchedSystem = R"(<system version="1">
  <cpu numaid="0" affinity="0000000f">
    <pci busid="0000:07:00.0" class="0x030200" vendor="0x10de" device="0x2330">
      <gpu dev="0" sm="90" rank="0" gdr="1">
        <nvlink target="fffffff:ffff:ff" count="18" tclass="0x068000"/>
      </gpu>
    </pci>
    <pci busid="0000:0F:00.0" class="0x030200" vendor="0x10de" device="0x2330">
      <gpu dev="1" sm="90" rank="1" gdr="1">
        <nvlink target="fffffff:ffff:ff" count="18" tclass="0x068000"/>
      </gpu>
    </pci>
    <pci busid="0000:47:00.0" class="0x030200" vendor="0x10de" device="0x2330">
      <gpu dev="2" sm="90" rank="2" gdr="1">
        <nvlink target="fffffff:ffff:ff" count="18" tclass="0x068000"/>
      </gpu>
    </pci>
  </cpu>
</system>
)";

TEST(NcclXmlNvSwitch, SwitchLinksGiveEveryPairTheGpuLinkCount) {
  auto r = ParseNcclXml(kSwitchedSystem, "h100.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  EXPECT_TRUE(t.nvswitch);
  EXPECT_EQ(t.gpu_model, "H100 80GB HBM3");
  EXPECT_EQ(t.gpus[1].pci_bus_id, "0000:0f:00.0");  // normalised to lower case
  for (int a = 0; a < 3; ++a) {
    EXPECT_EQ(t.gpus[a].nvlink_ports, 18);
    for (int b = 0; b < 3; ++b) {
      if (a != b) {
        EXPECT_EQ(t.gpu_gpu(a, b), (Path{PathClass::kNV, 18}));
      }
    }
  }
}

TEST(NcclXmlNvlink, CpuTargetsCountAsPortsNotPairs) {
  const char* doc = R"(<system version="1">
  <cpu numaid="0">
    <pci busid="0004:04:00.0" class="0x030200">
      <gpu dev="0"><nvlink target="0004:05:00.0" count="2" tclass="0x030200"/>
        <nvlink target="0007:00:00.0" count="2" tclass="0x060400"/></gpu>
    </pci>
    <pci busid="0004:05:00.0" class="0x030200">
      <gpu dev="1"><nvlink target="0004:04:00.0" count="2" tclass="0x030200"/>
        <nvlink target="0007:00:00.0" count="2" tclass="0x060400"/></gpu>
    </pci>
  </cpu>
</system>)";
  auto r = ParseNcclXml(doc, "power9.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->nvswitch);
  EXPECT_EQ(r->gpu_gpu(0, 1), (Path{PathClass::kNV, 2}));
  EXPECT_EQ(r->gpus[0].nvlink_ports, 4);
}

struct BadDoc {
  std::string name;
  std::string text;
  std::string where;  // expected message prefix
};

TEST(NcclXmlMalformed, InvalidArgumentWithLine) {
  std::string p4d = testing::ReadFileText(kNcclSampleDir + "aws-ofi-nccl-p4d-24xl-topo.xml");
  std::string garbage;
  for (int i = 0; i < 2048; ++i) garbage.push_back(static_cast<char>((i * 131 + 7) % 256));
  std::vector<BadDoc> cases = {
      {"truncated", p4d.substr(0, p4d.size() * 2 / 3), "truncated:"},
      {"not-xml", "GPU0\tGPU1\nGPU0\t X \tNV12\n", "not-xml"},
      {"binary", garbage, "binary"},
      {"empty", "", "empty"},
      {"mismatched", "<system>\n<cpu>\n</pci>\n</system>", "mismatched:2: "},
      {"wrong-root", "<topology version=\"2.0\"/>", "wrong-root:1: "},
      {"bad-affinity", "<system>\n<cpu numaid=\"0\" affinity=\"zz,00\"/>\n</system>",
       "bad-affinity:2: "},
      {"bad-class",
       "<system>\n<cpu>\n<pci busid=\"0000:01:00.0\" class=\"0xgg\"/>\n</cpu></system>",
       "bad-class:3: "},
      {"bad-count",
       "<system><cpu>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\">\n"
       "<nvlink target=\"0000:02:00.0\" count=\"many\"/></gpu></pci></cpu></system>",
       "bad-count:3: "},
  };
  for (const BadDoc& c : cases) {
    auto r = ParseNcclXml(c.text, c.name);
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, ::testing::StartsWith(c.where)))
        << c.name;
  }
}

TEST(NcclXmlSniff, LooksLikeNcclXml) {
  EXPECT_TRUE(LooksLikeNcclXml(testing::ReadFileText(kNcclSampleDir + "azhpc-ndv4-topo.xml")));
  EXPECT_TRUE(LooksLikeNcclXml(testing::ReadFileText(
      kNcclSampleDir + "azhpc-ncv4-graph.xml")));  // routed here to be refused
  EXPECT_FALSE(LooksLikeNcclXml("<topology version=\"2.0\">"));
  EXPECT_FALSE(LooksLikeNcclXml("GPU0 GPU1"));
}

// Our own capture on the lent H200 VM (data/samples/measured): NCCL writes numaid="-1" when it
// cannot read the NUMA node, and link_width="0"; the file must read, with the NUMA node unknown.
TEST(NcclXmlMeasured, SingleH200VmWithUnknownNumaReads) {
  const std::string file =
      std::string(TS_SOURCE_DIR) + "/data/samples/measured/h200-1gpu-vm-nccl-topo.xml";
  auto r = ParseNcclXml(testing::ReadFileText(file), "h200-1gpu-vm-nccl-topo.xml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeTopology& t = *r;
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].model, "H200");  // PCI device 0x2335
  EXPECT_EQ(t.gpus[0].pci_bus_id, "0000:00:06.0");
  EXPECT_FALSE(t.gpus[0].numa.has_value());
  EXPECT_TRUE(t.numa_nodes.empty());
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "eth0");
  EXPECT_EQ(t.nics[0].rate_gbps, 10.0);  // speed="10000" Mb/s
  EXPECT_EQ(t.nics[0].link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(P(t, "GPU0", "eth0"), "PHB");
  // Any other negative id is still refused.
  std::string bad = testing::ReadFileText(file);
  bad.replace(bad.find("numaid=\"-1\""), 11, "numaid=\"-2\"");
  auto refused = ParseNcclXml(bad, "bad.xml");
  ASSERT_THAT(refused, StatusIs(StatusCode::kInvalidArgument, HasSubstr("bad numaid")));
}

// An NCCL_TOPO_FILE template lists GPUs without their links: whether they have NVLink is
// unknown (issue: "NVLink unknown", never "none"), in the model, its JSON and the summary.
TEST(NcclXmlTemplates, GpusWithoutAnyLinkMeanNvlinkUnknown) {
  auto ndv4 = ParseSample("azhpc-ndv4-topo.xml");  // 8 A100 as bare <pci>, NVSwitch in reality
  ASSERT_TRUE(ndv4.ok()) << ndv4.status().ToString();
  EXPECT_TRUE(ndv4->nvlink_unknown);
  EXPECT_THAT(FormatTopologySummary(*ndv4), HasSubstr("NVLink: unknown"))
      << FormatTopologySummary(*ndv4);
  EXPECT_THAT(FormatTopologySummary(*ndv4), Not(HasSubstr("NVLink: none")));
  // The JSON model keeps it.
  auto back = TopologyFromJson(TopologyToJson(*ndv4), "ndv4.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->nvlink_unknown);
  // A template of A100s: unknown too, and the summary adds what the model says.
  auto p4d = ParseSample("aws-ofi-nccl-p4d-24xl-topo.xml");
  ASSERT_TRUE(p4d.ok());
  EXPECT_TRUE(p4d->nvlink_unknown);
  EXPECT_THAT(FormatTopologySummary(*p4d), HasSubstr("; the GPU model has NVLink generation 3"));
  // A file with links (RCCL's xGMI), and a one-GPU dump, know.
  auto mi300 = ParseSample("rccl-topo_8p_940.xml");
  ASSERT_TRUE(mi300.ok());
  EXPECT_FALSE(mi300->nvlink_unknown);
  auto one =
      ParseNcclXml(testing::ReadFileText(std::string(TS_SOURCE_DIR) +
                                         "/data/samples/measured/h200-1gpu-vm-nccl-topo.xml"),
                   "h200.xml");
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->nvlink_unknown);
}

}  // namespace
}  // namespace toposched::topo::io
