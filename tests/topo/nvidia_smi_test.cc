// Tests for the nvidia-smi readers against every real sample in data/samples/nvidia-smi. The
// facts in the tables were read by hand from the sample files.
#include "topo/io/nvidia_smi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/strings.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"

namespace toposched::topo::io {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const std::string kSmiSampleDir = std::string(TS_SOURCE_DIR) + "/data/samples/nvidia-smi/";

const Gpu* FindGpu(const NodeTopology& t, int index) {
  int pos = t.gpu_pos(index);
  return pos < 0 ? nullptr : &t.gpus[pos];
}

struct PairFact {
  std::string a, b, path;
};

struct SampleFacts {
  std::string file;
  int gpus = 0;
  int nics = 0;
  std::vector<std::string> nic_names;  // all NIC names in order
  std::vector<PairFact> pairs;
  std::vector<std::pair<int, std::optional<int>>> numa;          // GPU index -> NUMA node
  std::vector<std::pair<int, std::optional<std::string>>> cpus;  // GPU index -> CPU list
  std::vector<int> numa_ids;                                     // NodeTopology::numa_nodes ids
  bool nvswitch = false;
};

std::vector<std::string> Names(const std::string& prefix, int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// One sample per entry reads better than one field per line.
// clang-format off
const std::vector<SampleFacts>& TopoSamples() {
  static const auto* kFacts = new std::vector<SampleFacts>{
      {"01-v100-sxm2-8gpu-hybrid-cubemesh-paddle-fleetx.txt", 8, 1, {"mlx5_0"},
       {{"GPU0", "GPU4", "NV1"}, {"GPU0", "GPU5", "NODE"}, {"GPU0", "GPU1", "NV2"},
        {"GPU7", "mlx5_0", "NODE"}},
       {{0, std::nullopt}}, {{3, "0-23"}}, {}, false},
      {"02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt", 8, 1, {"mlx5_0"},
       {{"GPU0", "GPU5", "SYS"}, {"GPU0", "GPU4", "NV2"}, {"mlx5_0", "GPU2", "PIX"},
        {"mlx5_0", "GPU0", "NODE"}, {"GPU4", "mlx5_0", "SYS"}},
       {{4, std::nullopt}}, {{4, "12-23,36-47"}}, {}, false},
      {"04-h100-sxm-8gpu-nv18-no-nic-stas00.txt", 8, 0, {},
       {{"GPU0", "GPU7", "NV18"}, {"GPU3", "GPU4", "NV18"}},
       {{3, 0}, {4, 1}}, {{4, "52-103,156-207"}}, {0, 1}, true},
      {"07a-2gpu-nv2-workstation-stas00.txt", 2, 0, {},
       {{"GPU0", "GPU1", "NV2"}}, {{0, std::nullopt}}, {{1, "0-23"}}, {}, false},
      {"07b-2gpu-phb-workstation-stas00.txt", 2, 0, {},
       {{"GPU0", "GPU1", "PHB"}}, {{1, std::nullopt}}, {{0, "0-11"}}, {}, false},
      {"08-a100-8gpu-nv12-condensed-spacing-stas00.txt", 8, 0, {},
       {{"GPU0", "GPU7", "NV12"}, {"GPU2", "GPU5", "NV12"}},
       {{3, 0}, {4, 1}}, {{4, "24-47"}}, {0, 1}, true},
      {"09-8gpu-pcie-all-sys-2numa-mlsys-tutorial.txt", 8, 0, {},
       {{"GPU0", "GPU1", "SYS"}, {"GPU3", "GPU4", "SYS"}},
       {{0, 0}, {7, 1}}, {{7, "16-31,48-63"}}, {0, 1}, false},
      {"10-h100-8gpu-nv18-2numa-mlsys-tutorial.txt", 8, 0, {},
       {{"GPU1", "GPU6", "NV18"}}, {{4, 1}, {3, 0}}, {{0, "0-47,96-143"}}, {0, 1}, true},
      {"12-rtx4090-8gpu-2nic-all-sys-go-gpuallocator17.txt", 8, 2, {"NIC0", "NIC1"},
       {{"GPU0", "GPU7", "SYS"}, {"GPU6", "NIC0", "PHB"}, {"GPU6", "NIC1", "PHB"},
        {"NIC0", "NIC1", "PIX"}, {"GPU0", "NIC0", "SYS"}},
       {{6, 1}, {0, 0}}, {{6, "56-111,168-223"}}, {0, 1}, false},
      {"14-rtx5090-2gpu-phb-plus-topo-p2p-rw-gns-club3090-1229.txt", 2, 0, {},
       {{"GPU0", "GPU1", "PHB"}}, {{0, 0}}, {{1, "0-63"}}, {0}, false},
      {"15-2gpu-node-indented-wrapped-legend-plus-p2p-ns-club3090-1125.txt", 2, 0, {},
       {{"GPU0", "GPU1", "NODE"}}, {{1, 0}}, {{0, "0-15"}}, {0}, false},
      {"17-h100-4gpu-nv6-4nic-pix-scattered-cpu-affinity-nccl1617.txt", 4, 4, Names("NIC", 0, 3),
       {{"GPU0", "GPU3", "NV6"}, {"GPU0", "NIC0", "PIX"}, {"GPU1", "NIC0", "SYS"},
        {"GPU3", "NIC3", "PIX"}},
       {{0, 3}, {1, 1}, {2, 7}, {3, 5}}, {{0, "6,14,22,30"}, {3, "5,13,21,29"}}, {1, 3, 5, 7},
       false},
      {"18-2gpu-nv12-8nic-blank-affinity-columns-vllm19607.txt", 2, 8, Names("NIC", 0, 7),
       {{"GPU0", "GPU1", "NV12"}, {"GPU0", "NIC6", "PXB"}, {"GPU1", "NIC0", "SYS"},
        {"NIC6", "NIC7", "PIX"}},
       {{0, std::nullopt}, {1, std::nullopt}}, {{0, std::nullopt}}, {}, false},
      {"19-b300-8gpu-nv18-9nic-bond-ansi-escapes-sglang26039.txt", 8, 9,
       {"mlx5_10", "mlx5_11", "mlx5_12", "mlx5_13", "mlx5_14", "mlx5_15", "mlx5_16", "mlx5_17",
        "mlx5_bond_0"},
       {{"GPU0", "GPU7", "NV18"}, {"GPU0", "mlx5_10", "PXB"}, {"GPU4", "mlx5_14", "PXB"},
        {"GPU0", "mlx5_bond_0", "SYS"}, {"GPU4", "mlx5_bond_0", "NODE"}},
       {{3, 0}, {4, 1}}, {{4, "64-127,192-255"}}, {0, 1}, true},
      {"20-h100-4gpu-vm-nv18-8nic-all-phb-single-numa.txt", 4, 8, Names("mlx5_", 0, 7),
       {{"GPU0", "GPU3", "NV18"}, {"GPU2", "mlx5_5", "PHB"}, {"mlx5_0", "mlx5_7", "PHB"}},
       {{3, 0}}, {{2, "0-79"}}, {0}, true},
      {"22-a100-sxm4-80gb-4gpu-nv12-roce-nic-plus-nvlink-s.txt", 4, 1, {"rocep49s0"},
       {{"GPU0", "GPU3", "NV12"}, {"GPU2", "rocep49s0", "SYS"}},
       {{0, 1}, {3, 1}}, {{1, "32-63,96-127"}}, {1}, true},
      {"24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt", 8, 8, Names("mlx5_", 0, 7),
       {{"GPU0", "mlx5_0", "PIX"}, {"GPU0", "mlx5_1", "NODE"}, {"GPU0", "mlx5_4", "SYS"},
        {"GPU7", "mlx5_7", "PIX"}, {"GPU2", "GPU6", "NV18"}},
       {{7, 1}, {0, 0}}, {{0, "0-47,96-143"}}, {0, 1}, true},
      {"25-h20-3e-8gpu-nv18-4x-dualport-nic-only-even-gpus-sglang31046.txt", 8, 8,
       Names("mlx5_", 0, 7),
       {{"GPU0", "mlx5_1", "PIX"}, {"GPU1", "mlx5_0", "NODE"}, {"GPU6", "mlx5_7", "PIX"},
        {"GPU7", "mlx5_7", "NODE"}},
       {{5, 1}}, {{5, "48-95,144-191"}}, {0, 1}, true},
      {"27-gb200-4gpu-nv18-8nic-all-sys-numeric-gpu-numa-id.txt", 4, 8, Names("mlx5_", 0, 7),
       {{"GPU0", "GPU3", "NV18"}, {"GPU0", "mlx5_0", "SYS"}, {"mlx5_2", "mlx5_3", "PIX"},
        {"mlx5_6", "mlx5_7", "PIX"}, {"mlx5_0", "mlx5_1", "SYS"}},
       // NUMA Affinity "0,3-9,11-17" / "1,19-25,27-33": the CPU node is the smallest.
       {{0, 0}, {3, 1}}, {{2, "72-143"}}, {0, 1}, true},
      // partial/: rows cut off; missing pairs from symmetry, unknowable ones SYS.
      {"partial/P01-gb200-4gpu-nv18-6nic-gpu-numa-id-values-sglang11208.txt", 4, 6,
       Names("NIC", 0, 5),
       {{"GPU0", "GPU3", "NV18"}, {"GPU2", "GPU3", "NV18"}, {"GPU3", "NIC0", "SYS"}},
       {{2, 1}, {3, std::nullopt}}, {{3, std::nullopt}, {1, "0-71"}}, {0, 1}, true},
      {"partial/P02-nv8-8gpu-9nic-a800-h800-class-nccl933.txt", 8, 9, Names("NIC", 0, 8),
       {{"GPU7", "GPU0", "NV8"}, {"GPU0", "NIC2", "PIX"}, {"GPU4", "NIC1", "PIX"},
        {"GPU7", "NIC8", "SYS"}},
       {{6, 1}, {7, std::nullopt}}, {{0, "0-47,96-143"}}, {0, 1}, true},
      {"partial/P03-dgx2-16gpu-nv6-10nic-nccltests78.txt", 16, 10, Names("mlx5_", 0, 9),
       {{"GPU0", "GPU15", "NV6"}, {"GPU2", "mlx5_1", "PIX"}, {"GPU0", "mlx5_1", "PXB"},
        {"GPU4", "GPU5", "SYS"}},
       {{0, std::nullopt}}, {{0, "0-23,48-71"}, {5, std::nullopt}}, {}, true},
      {"partial/P04-dgx-a100-40gb-8gpu-nv12-12nic-multi-numa-nccl1505.txt", 8, 12,
       Names("NIC", 0, 11),
       {{"GPU0", "NIC0", "PXB"}, {"GPU2", "NIC3", "PXB"}, {"GPU0", "GPU7", "NV12"}},
       {{0, 3}, {2, 1}}, {{2, "16-31,144-159"}}, {1, 3}, true},
      {"partial/P05-dgx-a100-container-pxb-no-nvlink-numa-range-ucxpy749.txt", 8, 12,
       Names("mlx5_", 0, 11),
       {{"GPU0", "GPU1", "PXB"}, {"GPU0", "GPU2", "SYS"}, {"GPU0", "mlx5_0", "PXB"},
        {"mlx5_0", "mlx5_1", "PXB"}, {"GPU6", "mlx5_9", "PXB"}},
       // NUMA Affinity "6-7" (a range): the smallest node.
       {{0, 6}, {7, 6}}, {{7, "112-127,240-255"}}, {6}, false},
      {"partial/P06-b200-8gpu-nv18-13nic-glued-header-nic11nic12-vllm31594.txt", 8, 13,
       Names("NIC", 0, 12),
       {{"GPU0", "NIC11", "PIX"}, {"GPU0", "NIC12", "NODE"}, {"GPU3", "NIC8", "PIX"},
        {"GPU1", "GPU7", "NV18"}},
       {{0, 0}}, {{0, "0-15"}}, {0}, true},
      {"partial/P07-h100-8gpu-nv18-9nic-3-numa-nodes-sglang13973.txt", 8, 9, Names("NIC", 0, 8),
       {{"GPU0", "NIC0", "PIX"}, {"GPU3", "NIC4", "PIX"}, {"GPU5", "NIC6", "PIX"}},
       {{0, 0}, {3, 1}, {4, 2}}, {{4, "48-71,144-167"}}, {0, 1, 2}, true},
      {"partial/P08-8gpu-all-sys-10nic-pix-per-gpu-deepep128.txt", 8, 10, Names("NIC", 0, 9),
       {{"GPU0", "GPU1", "SYS"}, {"GPU5", "NIC5", "PIX"}, {"GPU0", "NIC0", "PIX"}},
       {{5, 1}}, {{5, "56-111,168-223"}}, {0, 1}, false},
      {"partial/P09-a100-2gpu-slice-nv12-10nic-nic-rows-no-affinity-daskcuda1358.txt", 2, 10,
       Names("NIC", 0, 9),
       {{"GPU0", "GPU1", "NV12"}, {"GPU0", "NIC0", "PXB"}, {"NIC2", "NIC3", "PXB"},
        {"NIC4", "NIC5", "SYS"}},
       {{1, 3}}, {{1, "48-63,176-191"}}, {3}, false},
      {"partial/P10-h100-8gpu-nv18-10nic-header-not-indented-vllm8257.txt", 8, 10,
       Names("NIC", 0, 9),
       {{"GPU0", "NIC0", "PIX"}, {"GPU0", "NIC1", "PIX"}, {"GPU1", "NIC2", "PIX"},
        {"GPU0", "GPU1", "NV18"}},
       {{0, 0}}, {{0, "0-47"}}, {0}, true},
      {"partial/P11-8gpu-mlx4-pix-phb-2017-kubernetes53497.txt", 8, 1, {"mlx4_0"},
       {{"GPU0", "GPU1", "PIX"}, {"GPU0", "GPU2", "PHB"}, {"GPU0", "GPU4", "SYS"},
        {"GPU3", "mlx4_0", "PHB"}},
       {{0, std::nullopt}}, {{0, "0-9,20-29"}}, {}, false},
  };
  return *kFacts;
}
// clang-format on

class NvidiaSmiTopoSample : public ::testing::TestWithParam<SampleFacts> {};

TEST_P(NvidiaSmiTopoSample, MatchesFactsReadByHand) {
  const SampleFacts& f = GetParam();
  std::string text = testing::ReadFileText(kSmiSampleDir + f.file);
  ASSERT_FALSE(text.empty()) << f.file;
  EXPECT_TRUE(LooksLikeNvidiaSmiTopo(text));
  EXPECT_FALSE(LooksLikeNvidiaSmiP2p(text));
  EXPECT_FALSE(LooksLikeNvidiaSmiNvlinkStatus(text));
  auto parsed = ParseNvidiaSmiTopo(text, f.file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const NodeTopology& t = *parsed;
  EXPECT_TRUE(t.Validate().ok());
  EXPECT_EQ(t.source, f.file);
  ASSERT_EQ(static_cast<int>(t.gpus.size()), f.gpus);
  ASSERT_EQ(static_cast<int>(t.nics.size()), f.nics);
  for (int i = 0; i < f.gpus; ++i) EXPECT_EQ(t.gpus[i].index, i);
  std::vector<std::string> names;
  for (const Nic& n : t.nics) names.push_back(n.name);
  EXPECT_EQ(names, f.nic_names);
  for (const PairFact& p : f.pairs) {
    int a = t.FindDevice(p.a), b = t.FindDevice(p.b);
    ASSERT_GE(a, 0) << p.a;
    ASSERT_GE(b, 0) << p.b;
    EXPECT_EQ(PathName(t.path(a, b)), p.path) << p.a << "-" << p.b;
    EXPECT_EQ(t.path(a, b), t.path(b, a)) << p.a << "-" << p.b;
    if (StartsWith(p.path, "NV")) {
      EXPECT_EQ(t.path(a, b).cls, PathClass::kNV);
      EXPECT_EQ(t.path(a, b).nvlinks, std::stoi(p.path.substr(2))) << p.a << "-" << p.b;
    }
  }
  for (const auto& [index, numa] : f.numa) {
    const Gpu* g = FindGpu(t, index);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->numa, numa) << "GPU" << index;
  }
  for (const auto& [index, cpus] : f.cpus) {
    const Gpu* g = FindGpu(t, index);
    ASSERT_NE(g, nullptr);
    ASSERT_EQ(g->cpus.has_value(), cpus.has_value()) << "GPU" << index;
    if (cpus) {
      EXPECT_EQ(FormatIntList(*g->cpus), *cpus) << "GPU" << index;
    }
  }
  std::vector<int> ids;
  for (const NumaNode& n : t.numa_nodes) ids.push_back(n.id);
  EXPECT_EQ(ids, f.numa_ids);
  // Each NUMA node holds the CPUs of the GPUs on it.
  for (const Gpu& g : t.gpus) {
    if (!g.numa || !g.cpus) continue;
    auto node = std::find_if(t.numa_nodes.begin(), t.numa_nodes.end(),
                             [&](const NumaNode& n) { return n.id == *g.numa; });
    ASSERT_NE(node, t.numa_nodes.end());
    for (int cpu : *g.cpus) {
      EXPECT_TRUE(std::binary_search(node->cpus.begin(), node->cpus.end(), cpu));
    }
  }
  EXPECT_EQ(t.nvswitch, f.nvswitch);
}

std::string SampleName(const ::testing::TestParamInfo<SampleFacts>& info) {
  std::string name = info.param.file.substr(info.param.file.rfind('/') + 1);
  name = name.substr(0, name.find('-', name.find('-') + 1));  // "01-v100", "P03-dgx2"
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(NvidiaSmiSamples, NvidiaSmiTopoSample, ::testing::ValuesIn(TopoSamples()),
                         SampleName);

// Every sample file is claimed by one or more readers; a new file must be added here.
enum Reader : unsigned { kTopo = 1, kP2p = 2, kNvlink = 4 };

TEST(NvidiaSmiInventory, EverySampleFileIsReadByItsReader) {
  const std::map<std::string, unsigned> kInventory = {
      {"01-v100-sxm2-8gpu-hybrid-cubemesh-paddle-fleetx.txt", kTopo},
      {"02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt", kTopo},
      {"04-h100-sxm-8gpu-nv18-no-nic-stas00.txt", kTopo},
      {"05-h100-8gpu-topo-p2p-r-stas00.txt", kP2p},
      {"06-l4-2gpu-topo-p2p-r-cns-stas00.txt", kP2p},
      {"07a-2gpu-nv2-workstation-stas00.txt", kTopo},
      {"07b-2gpu-phb-workstation-stas00.txt", kTopo},
      {"08-a100-8gpu-nv12-condensed-spacing-stas00.txt", kTopo},
      {"09-8gpu-pcie-all-sys-2numa-mlsys-tutorial.txt", kTopo},
      {"10-h100-8gpu-nv18-2numa-mlsys-tutorial.txt", kTopo},
      {"11-h100-nvlink-status-gpu0-18links-mlsys-tutorial.txt", kNvlink},
      {"12-rtx4090-8gpu-2nic-all-sys-go-gpuallocator17.txt", kTopo},
      {"14-rtx5090-2gpu-phb-plus-topo-p2p-rw-gns-club3090-1229.txt", kTopo | kP2p},
      {"15-2gpu-node-indented-wrapped-legend-plus-p2p-ns-club3090-1125.txt", kTopo | kP2p},
      {"17-h100-4gpu-nv6-4nic-pix-scattered-cpu-affinity-nccl1617.txt", kTopo},
      {"18-2gpu-nv12-8nic-blank-affinity-columns-vllm19607.txt", kTopo},
      {"19-b300-8gpu-nv18-9nic-bond-ansi-escapes-sglang26039.txt", kTopo},
      {"20-h100-4gpu-vm-nv18-8nic-all-phb-single-numa.txt", kTopo},
      {"22-a100-sxm4-80gb-4gpu-nv12-roce-nic-plus-nvlink-s.txt", kTopo | kNvlink},
      {"24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt", kTopo},
      {"25-h20-3e-8gpu-nv18-4x-dualport-nic-only-even-gpus-sglang31046.txt", kTopo},
      {"27-gb200-4gpu-nv18-8nic-all-sys-numeric-gpu-numa-id.txt", kTopo},
      {"28-gb200-nvlink-s-18links-53gbps-k8stestinfra371.txt", kNvlink},
      {"29-v100-sxm2-nvlink-s-inactive-links-azhpcdiag73.txt", kNvlink},
      {"partial/P01-gb200-4gpu-nv18-6nic-gpu-numa-id-values-sglang11208.txt", kTopo},
      {"partial/P02-nv8-8gpu-9nic-a800-h800-class-nccl933.txt", kTopo},
      {"partial/P03-dgx2-16gpu-nv6-10nic-nccltests78.txt", kTopo},
      {"partial/P04-dgx-a100-40gb-8gpu-nv12-12nic-multi-numa-nccl1505.txt", kTopo},
      {"partial/P05-dgx-a100-container-pxb-no-nvlink-numa-range-ucxpy749.txt", kTopo},
      {"partial/P06-b200-8gpu-nv18-13nic-glued-header-nic11nic12-vllm31594.txt", kTopo},
      {"partial/P07-h100-8gpu-nv18-9nic-3-numa-nodes-sglang13973.txt", kTopo},
      {"partial/P08-8gpu-all-sys-10nic-pix-per-gpu-deepep128.txt", kTopo},
      {"partial/P09-a100-2gpu-slice-nv12-10nic-nic-rows-no-affinity-daskcuda1358.txt", kTopo},
      {"partial/P10-h100-8gpu-nv18-10nic-header-not-indented-vllm8257.txt", kTopo},
      {"partial/P11-8gpu-mlx4-pix-phb-2017-kubernetes53497.txt", kTopo},
  };
  std::vector<std::string> files = testing::SampleFiles("nvidia-smi", ".txt");
  std::set<std::string> on_disk(files.begin(), files.end());
  std::set<std::string> listed;
  for (const auto& [file, readers] : kInventory) listed.insert(file);
  EXPECT_EQ(on_disk, listed) << "add new sample files to this table deliberately";

  std::set<std::string> with_facts;
  for (const SampleFacts& f : TopoSamples()) with_facts.insert(f.file);
  for (const auto& [file, readers] : kInventory) {
    SCOPED_TRACE(file);
    std::string text = testing::ReadFileText(kSmiSampleDir + file);
    auto topo = ParseNvidiaSmiTopo(text, file);
    auto p2p = ParseNvidiaSmiP2p(text, file);
    auto nvlink = ParseNvidiaSmiNvlinkStatus(text, file);
    EXPECT_EQ(topo.ok(), (readers & kTopo) != 0) << topo.status().ToString();
    EXPECT_EQ(p2p.ok(), (readers & kP2p) != 0) << p2p.status().ToString();
    EXPECT_EQ(nvlink.ok(), (readers & kNvlink) != 0) << nvlink.status().ToString();
    // Auto-detection: a topo -m matrix wins over the side outputs in the same file.
    EXPECT_EQ(LooksLikeNvidiaSmiTopo(text), (readers & kTopo) != 0);
    EXPECT_EQ(LooksLikeNvidiaSmiP2p(text), readers == kP2p);
    EXPECT_EQ(LooksLikeNvidiaSmiNvlinkStatus(text), readers == kNvlink);
    if (readers & kTopo) {
      EXPECT_TRUE(with_facts.count(file)) << "topo sample without facts";
    }
  }
}

TEST(NvidiaSmiP2p, ReadsEverySample) {
  struct Case {
    std::string file;
    std::string mode;
    int gpus;
    std::string off_diagonal;  // every off-diagonal cell
  } cases[] = {
      {"05-h100-8gpu-topo-p2p-r-stas00.txt", "read", 8, "OK"},
      {"06-l4-2gpu-topo-p2p-r-cns-stas00.txt", "read", 2, "CNS"},
      {"14-rtx5090-2gpu-phb-plus-topo-p2p-rw-gns-club3090-1229.txt", "", 2, "GNS"},
      {"15-2gpu-node-indented-wrapped-legend-plus-p2p-ns-club3090-1125.txt", "", 2, "NS"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto m = ParseNvidiaSmiP2p(testing::ReadFileText(kSmiSampleDir + c.file), c.file);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->mode, c.mode);
    ASSERT_EQ(static_cast<int>(m->gpus.size()), c.gpus);
    ASSERT_EQ(static_cast<int>(m->status.size()), c.gpus);
    for (int i = 0; i < c.gpus; ++i) {
      EXPECT_EQ(m->gpus[i], i);
      ASSERT_EQ(static_cast<int>(m->status[i].size()), c.gpus);
      for (int j = 0; j < c.gpus; ++j) {
        EXPECT_EQ(m->status[i][j], i == j ? "X" : c.off_diagonal) << i << "," << j;
      }
    }
  }
}

TEST(NvidiaSmiP2p, TopoReaderRejectsPureP2pOutput) {
  auto t = ParseNvidiaSmiTopo(
      testing::ReadFileText(kSmiSampleDir + "05-h100-8gpu-topo-p2p-r-stas00.txt"), "p2p.txt");
  ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument,
                          AllOf(HasSubstr("p2p.txt:4:"), HasSubstr("topo -p2p"))));
}

TEST(NvidiaSmiNvlink, ReadsEverySample) {
  struct GpuFact {
    int index;
    std::string name;
    int active;
    double gbps;
    int inactive;
  };
  struct Case {
    std::string file;
    std::vector<GpuFact> gpus;
  } cases[] = {
      {"11-h100-nvlink-status-gpu0-18links-mlsys-tutorial.txt",
       {{0, "NVIDIA H100 80GB HBM3", 18, 26.562, 0}}},
      {"22-a100-sxm4-80gb-4gpu-nv12-roce-nic-plus-nvlink-s.txt",
       {{0, "NVIDIA A100-SXM4-80GB", 12, 25.0, 0},
        {1, "NVIDIA A100-SXM4-80GB", 12, 25.0, 0},
        {2, "NVIDIA A100-SXM4-80GB", 12, 25.0, 0},
        {3, "NVIDIA A100-SXM4-80GB", 12, 25.0, 0}}},
      // The author elided the rest of GPU 1 with "...".
      {"28-gb200-nvlink-s-18links-53gbps-k8stestinfra371.txt",
       {{0, "NVIDIA GB200", 18, 53.125, 0}, {1, "NVIDIA GB200", 2, 53.125, 0}}},
      {"29-v100-sxm2-nvlink-s-inactive-links-azhpcdiag73.txt",
       {{3, "Tesla V100-SXM2-32GB", 4, 25.781, 2}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto s = ParseNvidiaSmiNvlinkStatus(testing::ReadFileText(kSmiSampleDir + c.file), c.file);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_EQ(s->gpus.size(), c.gpus.size());
    for (size_t i = 0; i < c.gpus.size(); ++i) {
      const auto& got = s->gpus[i];
      const GpuFact& want = c.gpus[i];
      EXPECT_EQ(got.index, want.index);
      EXPECT_EQ(got.name, want.name);
      ASSERT_EQ(static_cast<int>(got.link_gbps.size()), want.active);
      for (double r : got.link_gbps) EXPECT_DOUBLE_EQ(r, want.gbps);
      EXPECT_EQ(got.inactive, want.inactive);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Variants built inline, one quirk each.

StatusOr<NodeTopology> Parse(const std::string& text) { return ParseNvidiaSmiTopo(text, "t.txt"); }

TEST(NvidiaSmiTopo, HeaderWrappedOverTwoLines) {
  auto t = Parse(
      "        GPU0    GPU1    NIC0    NIC1\n"
      "        CPU Affinity    NUMA Affinity\n"
      "GPU0     X      NV4     PIX     SYS     0-7     0\n"
      "GPU1    NV4      X      SYS     PIX     8-15    1\n"
      "NIC0    PIX     SYS      X      SYS\n"
      "NIC1    SYS     PIX     SYS      X\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->gpus.size(), 2u);
  EXPECT_EQ(t->nics.size(), 2u);
  EXPECT_EQ(t->gpus[1].numa, 1);
  EXPECT_EQ(PathName(t->gpu_nic(1, 1)), "PIX");
}

TEST(NvidiaSmiTopo, AnsiCodesWithEscByteAndCrLf) {
  auto t = Parse(
      "\x1b[4m\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\r\n"
      "GPU0\t X \tSOC\t0-3\t0\t\tN/A\r\n"
      "GPU1\tSOC\t X \t4-7\t1\t\tN/A\r\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->gpu_gpu(0, 1).cls, PathClass::kSYS);  // SOC is the old name of SYS
  EXPECT_EQ(FormatIntList(*t->gpus[1].cpus), "4-7");
}

TEST(NvidiaSmiTopo, TabSeparatedBlankAffinityCellsKeepTheirColumn) {
  // Blank CPU Affinity, NUMA Affinity present.
  auto t = Parse(
      "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tNV2\t\t3\t\tN/A\n"
      "GPU1\tNV2\t X \t0-3\t\t\tN/A\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->gpus[0].cpus.has_value());
  EXPECT_EQ(t->gpus[0].numa, 3);
  EXPECT_EQ(FormatIntList(*t->gpus[1].cpus), "0-3");
  EXPECT_FALSE(t->gpus[1].numa.has_value());
}

TEST(NvidiaSmiTopo, SpaceSeparatedBlankCellsOffTheTabGridGoToTheNearestColumn) {
  auto t = Parse(
      "      GPU0  GPU1  CPU Affinity  NUMA Affinity  GPU NUMA ID\n"
      "GPU0   X    NV2                 1              N/A\n"
      "GPU1  NV2    X    0-7\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->gpus[0].cpus.has_value());
  EXPECT_EQ(t->gpus[0].numa, 1);
  EXPECT_EQ(FormatIntList(*t->gpus[1].cpus), "0-7");
  EXPECT_FALSE(t->gpus[1].numa.has_value());
}

TEST(NvidiaSmiTopo, SingleGpu) {
  auto t = Parse("        GPU0    CPU Affinity    NUMA Affinity\nGPU0     X      0-15    0\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->gpus.size(), 1u);
  EXPECT_FALSE(t->nvswitch);
}

TEST(NvidiaSmiTopo, NicLegendCutShortLeavesDefaultNames) {
  auto t = Parse(
      "\tGPU0\tNIC0\tNIC1\tNIC2\n"
      "GPU0\t X \tPIX\tNODE\tSYS\n"
      "NIC0\tPIX\t X \tNODE\tSYS\n"
      "NIC1\tNODE\tNODE\t X \tSYS\n"
      "NIC2\tSYS\tSYS\tSYS\t X \n"
      "\n"
      "NIC Legend:\n"
      "\n"
      "  NIC0: mlx5_4\n"
      "  NIC1: ibp3s0\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->nics.size(), 3u);
  EXPECT_EQ(t->nics[0].name, "mlx5_4");
  EXPECT_EQ(t->nics[1].name, "ibp3s0");
  EXPECT_EQ(t->nics[2].name, "NIC2");
  EXPECT_EQ(t->nics[2].index, 2);
}

TEST(NvidiaSmiTopo, TruncatedInputFillsFromSymmetryAndUnknownPairsAreSys) {
  const std::string body =
      "\tGPU0\tGPU1\tGPU2\tNIC0\n"
      "GPU0\t X \tNV4\tNV2\tPIX\n"
      "GPU1\tNV4\t X \tNV1\tNODE\n";
  auto strict = Parse(body);
  ASSERT_THAT(strict, StatusIs(StatusCode::kInvalidArgument,
                               AllOf(HasSubstr("t.txt:4:1: expected a row for GPU2"),
                                     HasSubstr("# TRUNCATED"))));

  auto t = Parse("# TRUNCATED: cut off\n" + body);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(PathName(t->gpu_gpu(2, 0)), "NV2");  // GPU2 row missing: from GPU0's row
  EXPECT_EQ(PathName(t->gpu_gpu(2, 1)), "NV1");
  EXPECT_EQ(PathName(t->gpu_nic(1, 0)), "NODE");  // NIC0 row missing: from GPU1's row
  EXPECT_EQ(PathName(t->gpu_nic(2, 0)), "SYS");   // both rows missing: unknowable
  EXPECT_FALSE(t->gpus[2].cpus.has_value());
  EXPECT_TRUE(t->Validate().ok());
}

TEST(NvidiaSmiTopo, MatrixEndsAtLegendAndTrailingProse) {
  auto t = Parse(
      "GPU Topology:\n"
      "\tGPU0\tGPU1\n"
      "GPU0\t X \tPHB\n"
      "GPU1\tPHB\t X \n"
      "Legend:\n"
      "  X    = Self\n"
      "ulimit soft: 1024\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(PathName(t->gpu_gpu(0, 1)), "PHB");
}

TEST(NvidiaSmiTopo, ProseMentioningGpusBeforeTheMatrixIsSkipped) {
  auto t = Parse(
      "GPU0 is slow today, GPU3 too\n"
      "GPU0 GPU1 look fine\n"
      "\tGPU0\tGPU1\n"
      "GPU0\t X \tNV2\n"
      "GPU1\tNV2\t X \n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(PathName(t->gpu_gpu(0, 1)), "NV2");
}

// Our own capture on the lent H200 VM (data/samples/measured): one GPU, a header underlined by
// ANSI escapes as nvidia-smi writes it to a terminal, GPU NUMA ID N/A.
TEST(NvidiaSmiMeasured, SingleH200VmWithAnsiHeaderReads) {
  const std::string file =
      std::string(TS_SOURCE_DIR) + "/data/samples/measured/h200-1gpu-vm-topo-m.txt";
  const std::string text = testing::ReadFileText(file);
  ASSERT_THAT(text, HasSubstr("\x1b[4m"));  // the escapes are really there
  auto t = ParseNvidiaSmiTopo(text, "h200-1gpu-vm-topo-m.txt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->gpus.size(), 1u);
  EXPECT_TRUE(t->nics.empty());
  EXPECT_EQ(t->gpus[0].numa, 0);
  ASSERT_TRUE(t->gpus[0].cpus.has_value());
  EXPECT_EQ(t->gpus[0].cpus->size(), 16u);  // CPU Affinity 0-15
}

}  // namespace
}  // namespace toposched::topo::io
