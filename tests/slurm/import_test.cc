#include "slurm/import.h"

#include <gtest/gtest.h>

#include "slurm/fake_runner.h"
#include "testing/status_matchers.h"

namespace toposched::slurm {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using testing_util::Data;
using testing_util::FakeRunner;

const char* kSample =
    "/data/samples/nvidia-smi/02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt";

FakeRunner Captured() {
  FakeRunner r;
  r.answers["scontrol -o show node"] = {0, Data("show-node-4node-mixed.txt"), ""};
  r.answers["scontrol show topology"] = {0, Data("show-topology-4node-tree.txt"), ""};
  return r;
}

TEST(ImportCluster, CapturedClusterWithOneTopologyFile) {
  FakeRunner r = Captured();
  ImportOptions o;
  o.default_topology = testing::SourceDir() + kSample;
  o.gpu_model = "V100-SXM2-16GB";
  auto c = ImportCluster(r, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->nodes.size(), 4u);
  EXPECT_EQ(c->profiles.size(), 1u);
  EXPECT_EQ(c->TotalGpus(), 32);
  EXPECT_EQ(c->topology(0).gpus[0].model, "V100-SXM2-16GB");
  // The tree: spine0 over leaf0 (gpu01-02) and leaf1 (gpu03-04).
  ASSERT_EQ(c->domains.size(), 3u);
  int leaf0 = c->FindDomain("leaf0"), spine = c->FindDomain("spine0");
  ASSERT_GE(leaf0, 0);
  ASSERT_GE(spine, 0);
  EXPECT_EQ(c->domains[leaf0].parent, spine);
  EXPECT_EQ(c->NodesUnder(leaf0), (std::vector<int>{c->FindNode("gpu01"), c->FindNode("gpu02")}));
  EXPECT_EQ(c->MeetLevel(c->FindNode("gpu01"), c->FindNode("gpu03")), c->domains[spine].level);
}

TEST(ImportCluster, PerNodeFilesMakeProfilesAndMismatchesAreErrors) {
  FakeRunner r = Captured();
  ImportOptions o;
  o.default_topology = testing::SourceDir() + kSample;
  o.per_node["gpu04"] = testing::SourceDir() +
                        "/data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt";
  auto c = ImportCluster(r, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->profiles.size(), 2u);
  EXPECT_EQ(c->nodes[3].profile, 1);
  // A 4-GPU file for an 8-GPU node names the node.
  o.per_node["gpu04"] =
      testing::SourceDir() +
      "/data/samples/nvidia-smi/17-h100-4gpu-nv6-4nic-pix-scattered-cpu-affinity-nccl1617.txt";
  auto bad = ImportCluster(r, o);
  ASSERT_THAT(
      bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("node \"gpu04\": Slurm has 8 GPUs")));
  // no topology file at all
  EXPECT_THAT(ImportCluster(r, ImportOptions{}),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("give a topology file for the nodes (--topo or --node-topo)")));
}

TEST(ImportCluster, NoTopologyPluginMeansNoNetwork) {
  FakeRunner r = Captured();
  r.answers["scontrol show topology"] = {0, "", ""};
  ImportOptions o;
  o.default_topology = testing::SourceDir() + kSample;
  auto c = ImportCluster(r, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->domains.empty());
  r.answers["scontrol show topology"] = {1, "", "No topology information available"};
  auto d = ImportCluster(r, o);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_TRUE(d->domains.empty());
  r.answers["scontrol -o show node"] = {1, "", "Unable to contact slurm controller"};
  EXPECT_THAT(
      ImportCluster(r, o),
      StatusIs(StatusCode::kUnavailable,
               HasSubstr("scontrol -o show node: exit 1: Unable to contact slurm controller")));
}

}  // namespace
}  // namespace toposched::slurm
