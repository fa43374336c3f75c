// `toposched cluster import --slurm-topology` end to end: the topology.conf that `export slurm`
// writes comes back as a spec that `cluster check` accepts and `simulate` runs on; the
// hand-written 116-switch topology.conf imports with names and ratios; a broken line exits 1
// with file:line:column and leaves --out untouched.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_util.h"
#include "testing/status_matchers.h"

namespace toposched::cli_testing {
namespace {

using ::toposched::testing::HasSubstr;

namespace fs = std::filesystem;

const std::string kH100 =
    kSrc + "/data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt";

std::string FreshDir(const std::string& name) {
  const std::string dir = TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Files in `dir` other than `keep` (a temporary left behind by a failed write).
int StrayFiles(const std::string& dir, const std::string& keep) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename() != keep;
  return n;
}

TEST(ClusterImportCliTest, ExportedTopologyConfImportsChecksAndSimulates) {
  const std::string dir = FreshDir("import-roundtrip");
  ASSERT_EQ(RunCli("export slurm " + kSrc + "/data/clusters/h100-2rack.yaml --dir " + dir).code, 0);
  const std::string spec = dir + "/h100.yaml";
  Result r = RunCli("cluster import --slurm-topology " + dir + "/topology.conf --topo " + kH100 +
                    " --level-names spine,leaf --oversubscription leaf=2 --out " + spec);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("32 nodes, 256 GPUs, 1 profiles; domains per level: spine 1, leaf 2"))
      << r.out;

  Result check = RunCli("cluster check " + spec);
  ASSERT_EQ(check.code, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("cluster h100: 32 nodes, 256 GPUs")) << check.out;
  EXPECT_THAT(check.out, HasSubstr("leaf: 2 domains, uplink 51200 Gb/s, oversubscription 2:1"))
      << check.out;
  EXPECT_THAT(check.out, HasSubstr("leaf leaf1 (16 nodes: gpu[017-032])")) << check.out;

  Result sim = RunCli("simulate --cluster " + spec + " --trace " + kSrc +
                      "/data/traces/example-generic.csv --policy toposched --out " + dir + "/sim");
  ASSERT_EQ(sim.code, 0) << sim.err;
  auto report = nlohmann::json::parse(Slurp(dir + "/sim/report.json"));
  EXPECT_EQ(report["policies"]["toposched"]["jobs"], 15);
}

TEST(ClusterImportCliTest, HandWrittenThreeTierTopologyConf) {
  const std::string dir = FreshDir("import-3tier");
  const std::string spec = dir + "/fabric.yaml";
  Result r = RunCli("cluster import --slurm-topology " + kSrc +
                    "/tests/topo/testdata/slurm-3tier-116-switches.conf --topo " + kH100 +
                    " --node-topo 'gpu[0001-0004]=" + kV100 +
                    "' --level-names core,agg,leaf --oversubscription leaf=2"
                    " --oversubscription agg=4 --out " +
                    spec);
  ASSERT_EQ(r.code, 0) << r.err;
  Result check = RunCli("cluster check " + spec);
  ASSERT_EQ(check.code, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("cluster fabric: 372 nodes, 2976 GPUs")) << check.out;
  EXPECT_THAT(check.out, HasSubstr("profile p0: 4 nodes x 8 GPUs")) << check.out;
  EXPECT_THAT(check.out, HasSubstr("profile p1: 368 nodes x 8 GPUs")) << check.out;
  EXPECT_THAT(check.out, HasSubstr("core: 1 domains (top)")) << check.out;
  EXPECT_THAT(check.out, HasSubstr("agg: 16 domains, uplink 12800 Gb/s, oversubscription 4:1"))
      << check.out;
  EXPECT_THAT(check.out, HasSubstr("leaf: 96 domains, uplink 3200 Gb/s, oversubscription 2:1"))
      << check.out;
}

TEST(ClusterImportCliTest, BrokenLineExitsOneWithFileLineColumnAndWritesNothing) {
  struct Case {
    const char* name;
    const char* text;
    const char* expect;  // after "<path>:"
  } cases[] = {
      {"unknown-key", "SwitchName=s0 Nodes=a1 Bandwidth=9\n",
       "1:24: unknown key \"Bandwidth\" (expected one of: SwitchName, Switches, Nodes, LinkSpeed)"},
      {"bad-hostlist", "SwitchName=s0 Nodes=a[1-\n", "1:21: Nodes=: "},
      {"undefined-switch", "SwitchName=s0 Nodes=a1\nSwitchName=top Switches=s[0-1]\n",
       "2:25: switch \"top\": Switches= names undefined switch \"s1\""},
      {"cycle", "SwitchName=s0 Switches=s1\nSwitchName=s1 Switches=s0\n",
       "1:12: switch \"s0\" is part of a cycle, expected a tree"},
      {"two-leaves", "SwitchName=l0 Nodes=a[1-4]\nSwitchName=l1 Nodes=a[4-8]\n",
       "2:21: node \"a4\" is under switch \"l0\" and \"l1\", expected each node under one switch"},
  };
  for (const Case& k : cases) {
    const std::string dir = FreshDir(std::string("import-bad-") + k.name);
    const std::string conf = dir + "/topology.conf";
    std::ofstream(conf) << k.text;
    const std::string out = dir + "/cluster.yaml";
    Result r =
        RunCli("cluster import --slurm-topology " + conf + " --topo " + kH100 + " --out " + out);
    EXPECT_EQ(r.code, 1) << k.name;
    EXPECT_THAT(r.err, HasSubstr("toposched: " + conf + ":" + k.expect))
        << k.name << "\nwant: " << k.expect << "\ngot:  " << r.err;
    EXPECT_FALSE(fs::exists(out)) << k.name;
    EXPECT_EQ(StrayFiles(dir, "topology.conf"), 0) << k.name;
  }
}

TEST(ClusterImportCliTest, FailedImportLeavesAnExistingOutAsItWas) {
  const std::string dir = FreshDir("import-keep");
  const std::string conf = dir + "/topology.conf";
  std::ofstream(conf) << "SwitchName=s0 Nodes=a[1-2]\n";
  const std::string out = dir + "/cluster.yaml";
  std::ofstream(out) << "keep me\n";
  // A valid topology.conf, but a ratio for a level it does not have.
  Result r = RunCli("cluster import --slurm-topology " + conf + " --topo " + kH100 +
                    " --oversubscription leaf=2 --out " + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("oversubscription for unknown level \"leaf\" (levels: switch-0)"))
      << r.err;
  EXPECT_EQ(Slurp(out), "keep me\n");
  EXPECT_EQ(StrayFiles(dir, "topology.conf"), 1);  // cluster.yaml only
}

TEST(ClusterImportCliTest, BadFlagsAreBadInputOrUsage) {
  const std::string conf = kSrc + "/tests/topo/testdata/slurm-3tier-116-switches.conf";
  const std::string out = FreshDir("import-flags") + "/c.yaml";
  Result no_eq = RunCli("cluster import --slurm-topology " + conf + " --topo " + kH100 +
                        " --oversubscription leaf --out " + out);
  EXPECT_EQ(no_eq.code, 1);
  EXPECT_THAT(no_eq.err, HasSubstr("--oversubscription \"leaf\": expected LEVEL=RATIO"))
      << no_eq.err;
  Result not_number = RunCli("cluster import --slurm-topology " + conf + " --topo " + kH100 +
                             " --oversubscription switch-2=fast --out " + out);
  EXPECT_EQ(not_number.code, 1);
  Result no_topo = RunCli("cluster import --slurm-topology " + conf + " --out " + out);
  EXPECT_EQ(no_topo.code, 1);
  EXPECT_THAT(no_topo.err, HasSubstr("no node topology file")) << no_topo.err;
  Result no_out = RunCli("cluster import --slurm-topology " + conf + " --topo " + kH100);
  EXPECT_EQ(no_out.code, 2);
  EXPECT_FALSE(fs::exists(out));
}

// `--kube-nodes`: a node list with GFD and tier labels (written here: no recorded list with tier
// labels is at hand) becomes a spec that `cluster check` accepts and `simulate` runs on; the
// recorded list (tests/api/testdata/kube) is refused with its node and the reason; one source.
TEST(ClusterImportCliTest, KubernetesNodeListImportsChecksAndSimulates) {
  const std::string dir = FreshDir("import-kube");
  nlohmann::json list = {{"kind", "NodeList"}, {"items", nlohmann::json::array()}};
  for (int i = 0; i < 8; ++i) {
    list["items"].push_back(
        {{"metadata",
          {{"name", "gpu" + std::to_string(i)},
           {"labels",
            {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
             {"nvidia.com/gpu.count", "8"},
             {"network.topology.kubernetes.io/spine", "s0"},
             {"network.topology.kubernetes.io/block", i < 4 ? "b0" : "b1"}}}}}});
  }
  std::ofstream(dir + "/nodes.json") << list.dump();
  const std::string spec = dir + "/k8s.yaml";
  Result r = RunCli("cluster import --kube-nodes " + dir + "/nodes.json --product-topo " +
                    "NVIDIA-H100-80GB-HBM3=" + kH100 + " --oversubscription block=2 --out " + spec);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("8 nodes, 64 GPUs, 1 profiles; domains per level: spine 1, block 2"))
      << r.out;
  Result check = RunCli("cluster check " + spec);
  ASSERT_EQ(check.code, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("block block-b1 (4 nodes: gpu[4-7])")) << check.out;
  Result sim = RunCli("simulate --cluster " + spec + " --trace " + kSrc +
                      "/data/traces/example-generic.csv --policy toposched --out " + dir + "/sim");
  EXPECT_EQ(sim.code, 0) << sim.err;

  Result recorded = RunCli("cluster import --kube-nodes " + kSrc +
                           "/tests/api/testdata/kube/nodes-gfd.json --topo " + kH100 + " --out " +
                           dir + "/recorded.yaml");
  EXPECT_EQ(recorded.code, 1);
  EXPECT_THAT(recorded.err, HasSubstr("(nori): Kubernetes reports 1 GPUs, its topology file"))
      << recorded.err;
  EXPECT_FALSE(fs::exists(dir + "/recorded.yaml"));
  Result both = RunCli("cluster import --kube-nodes " + dir + "/nodes.json --slurm-topology x " +
                       "--out " + dir + "/x.yaml");
  EXPECT_NE(both.code, 0);
  EXPECT_THAT(both.err, HasSubstr("exactly one of --slurm-topology and --kube-nodes")) << both.err;
}

}  // namespace
}  // namespace toposched::cli_testing
