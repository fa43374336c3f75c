#include "slurm/place.h"

#include <gtest/gtest.h>

#include <map>

#include "slurm/fake_runner.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::slurm {
namespace {

using ::testing::Not;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using testing_util::Data;
using testing_util::FakeRunner;

topo::Cluster Cluster4() {
  auto c = topo::io::ReadClusterYamlFile(testing::SourceDir() +
                                         "/tests/slurm/testdata/loopback-4node.yaml");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

FakeRunner CapturedExec(const std::string& script_of_job4) {
  FakeRunner r;
  r.answers["scontrol -d -o show node"] = {0, Data("show-node-4node-mixed.txt"), ""};
  r.answers["scontrol -d -o show job"] = {0, Data("show-job-4node.txt"), ""};
  r.answers["scontrol write batch_script 4 -"] = {0, script_of_job4, ""};
  r.answers["scontrol write batch_script 5 -"] = {0, "#!/bin/sh\nsleep 1\n", ""};
  r.answers["scontrol write batch_script 6 -"] = {0, "#!/bin/sh\n# wrap\nsleep 1\n", ""};
  return r;
}

TEST(StateFromNodes, CapturedOccupancy) {
  topo::Cluster c = Cluster4();
  auto nodes = ParseNodes(Data("show-node-4node-mixed.txt"), "n");
  ASSERT_TRUE(nodes.ok());
  auto s = StateFromNodes(c, *nodes);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->FreeMask(0).count(), 4);
  EXPECT_EQ(s->FreeMask(2).count(), 6);
  EXPECT_FALSE(s->FreeMask(2).test(c.topology(2).gpu_pos(3)));
  EXPECT_EQ(s->FreeMask(3).count(), 8);
  EXPECT_TRUE(s->CheckInvariants().ok());
  // A GPU count that disagrees with the model is refused.
  (*nodes)[0].gpus = 4;
  EXPECT_THAT(StateFromNodes(c, *nodes),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("node \"gpu01\": Slurm reports 4 GPUs, the cluster model has 8")));
}

TEST(PlaceOnce, PlacesTheCommentJobInOneLeafAndLeavesOthersHeld) {
  topo::Cluster c = Cluster4();
  // Job 4's script without a directive: its comment "toposched tp=4" gives the layout.
  FakeRunner r = CapturedExec("#!/bin/bash\nsrun hostname\n");
  auto rep = PlaceOnce(c, r, PlaceOptions{});
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  ASSERT_EQ(rep->decisions.size(), 2u);  // jobs 4 and 6; job 5 is not marked
  EXPECT_EQ(rep->unmarked_held, 1);
  const PlaceDecision& d4 = rep->decisions[0];
  EXPECT_EQ(d4.job_id, "4");
  ASSERT_EQ(d4.action, PlaceDecision::Action::kPlaced) << d4.detail;
  EXPECT_EQ(d4.marked_by, "comment");
  EXPECT_EQ(d4.layout, "tp=4 pp=1 dp=2");
  ASSERT_EQ(d4.nodes.size(), 2u);
  // Both nodes under one leaf (leaf0: gpu01-02 with 4 free each, or leaf1: gpu03-04).
  EXPECT_EQ(c.nodes[c.FindNode(d4.nodes[0])].domain, c.nodes[c.FindNode(d4.nodes[1])].domain);
  for (const auto& g : d4.slurm_gpus) EXPECT_EQ(g.size(), 4u);
  EXPECT_GT(d4.predicted_ms, 0);
  EXPECT_TRUE(r.Called("scontrol update JobId=4 ReqNodeList=" + d4.nodes[0] + "," + d4.nodes[1]));
  EXPECT_TRUE(r.Called("scontrol release 4"));
  // Job 6 (two whole nodes, partition mark): only gpu04 is whole-free: waits, stays held.
  const PlaceDecision& d6 = rep->decisions[1];
  EXPECT_EQ(d6.job_id, "6");
  EXPECT_EQ(d6.marked_by, "partition");
  EXPECT_EQ(d6.action, PlaceDecision::Action::kWaiting);
  EXPECT_FALSE(d6.detail.empty());
  EXPECT_FALSE(r.Called("scontrol release 6"));
  // The unmarked job is never touched.
  for (const std::string& call : r.calls) {
    EXPECT_THAT(call, Not(HasSubstr("JobId=5"))) << call;
    EXPECT_NE(call, "scontrol release 5");
  }
}

TEST(PlaceOnce, DirectiveWinsAndABadLayoutIsRejectedNotReleased) {
  topo::Cluster c = Cluster4();
  FakeRunner r = CapturedExec(Data("batch-script-directive.sh"));  // tp=8,pp=2 on 8 GPUs
  auto rep = PlaceOnce(c, r, PlaceOptions{});
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  const PlaceDecision& d4 = rep->decisions[0];
  EXPECT_EQ(d4.marked_by, "directive");
  EXPECT_EQ(d4.action, PlaceDecision::Action::kRejected);
  EXPECT_THAT(d4.detail, HasSubstr("job 4")) << d4.detail;
  EXPECT_FALSE(r.Called("scontrol release 4"));
}

TEST(PlaceOnce, DryRunChangesNothing) {
  topo::Cluster c = Cluster4();
  FakeRunner r = CapturedExec("#!/bin/bash\n");
  PlaceOptions o;
  o.dry_run = true;
  auto rep = PlaceOnce(c, r, o);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_EQ(rep->decisions[0].action, PlaceDecision::Action::kPlaced);
  for (const std::string& call : r.calls) {
    EXPECT_THAT(call, Not(HasSubstr("update"))) << call;
    EXPECT_THAT(call, Not(HasSubstr("release"))) << call;
  }
}

TEST(PlaceOnce, ACommandFailureIsAnError) {
  topo::Cluster c = Cluster4();
  FakeRunner r;
  r.answers["scontrol -d -o show node"] = {1, "", "slurm_load_node error: Unable to contact"};
  auto rep = PlaceOnce(c, r, PlaceOptions{});
  ASSERT_THAT(rep, StatusIs(StatusCode::kUnavailable, HasSubstr("Unable to contact")));
}

TEST(PredictCommTime, RingOrderBeatsIndexOrderOnTheCubeMesh) {
  topo::Cluster c = Cluster4();
  cost::CostModel model(c);
  job::JobSpec s;
  s.name = "x";
  s.replicas = 1;
  s.gpus_per_replica = 8;
  s.layout.tp = 8;
  s.model_params = 7e9;
  ASSERT_TRUE(s.Normalize().ok());
  std::map<std::string, std::vector<int>> gpus = {{"gpu01", {0, 1, 2, 3, 4, 5, 6, 7}}};
  auto plain = RanksOf(c, {"gpu01"}, gpus, false);
  auto ring = RanksOf(c, {"gpu01"}, gpus, true);
  ASSERT_TRUE(plain.ok() && ring.ok());
  auto t_plain = PredictCommTime(model, s.layout, *plain);
  auto t_ring = PredictCommTime(model, s.layout, *ring);
  ASSERT_TRUE(t_plain.ok() && t_ring.ok()) << t_plain.status().message();
  EXPECT_GT(t_plain->tp_ms, 0);
  EXPECT_LE(t_ring->tp_ms, t_plain->tp_ms);
  EXPECT_THAT(PredictCommTime(model, s.layout, {{0, 0}}),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("layout tp=8 pp=1 dp=1 needs 8 ranks, got 1")));
}

TEST(MarkOf, Precedence) {
  SlurmJob j;
  j.id = "9";
  j.partition = "toposched";
  j.comment = "toposched tp=2";
  MarkOptions o;
  auto by_script = MarkOf(j, "#TOPOSCHED tp=4,pp=2\n", o);
  ASSERT_TRUE(by_script.ok() && by_script->has_value());
  EXPECT_EQ((*by_script)->by, "directive");
  EXPECT_EQ((*by_script)->layout.tp, 4);
  auto by_comment = MarkOf(j, "", o);
  EXPECT_EQ((*by_comment)->by, "comment");
  EXPECT_EQ((*by_comment)->layout.tp, 2);
  j.comment = "";
  EXPECT_EQ((*MarkOf(j, "", o))->by, "partition");
  j.partition = "gpu";
  EXPECT_FALSE(MarkOf(j, "", o)->has_value());
  j.comment = "toposched tp=x";
  EXPECT_THAT(
      MarkOf(j, "", o),
      StatusIs(StatusCode::kInvalidArgument,
               HasSubstr("job 9: comment: layout: tp=: expected a positive integer, got \"x\"")));
}

}  // namespace
}  // namespace toposched::slurm

namespace toposched::slurm {
namespace {

using ::testing::Not;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

sched::GpuMask Mask(std::initializer_list<int> positions) {
  sched::GpuMask m;
  for (int p : positions) m.set(p);
  return m;
}

// The choices the real slurmctld 22.05 made on the V100 cube-mesh (gres.conf Cores=, Links=):
// 2 GPUs of a free node → 0,3 (captured in show-node-4node-mixed.txt); 4 GPUs of a free node →
// 0-3; 4 GPUs with 0,3 taken → 4-7 (socket 1 holds them all); 4 GPUs with 0,3,4,7 taken →
// 1,2,5,6; 2 GPUs with 0-3 taken → 4,7; 2 GPUs with 0-5 taken → 6,7.
TEST(SlurmGpuPick, MatchesWhatSlurmChose) {
  topo::Cluster c = Cluster4();
  const topo::NodeTopology& t = c.topology(0);
  auto pos = [&](std::initializer_list<int> idx) {
    sched::GpuMask m;
    for (int i : idx) m.set(t.gpu_pos(i));
    return m;
  };
  EXPECT_EQ(SlurmGpuPick(t, pos({0, 1, 2, 3, 4, 5, 6, 7}), 2), pos({0, 3}));
  EXPECT_EQ(SlurmGpuPick(t, pos({0, 1, 2, 3, 4, 5, 6, 7}), 4), pos({0, 1, 2, 3}));
  EXPECT_EQ(SlurmGpuPick(t, pos({1, 2, 4, 5, 6, 7}), 4), pos({4, 5, 6, 7}));
  EXPECT_EQ(SlurmGpuPick(t, pos({1, 2, 5, 6}), 4), pos({1, 2, 5, 6}));
  EXPECT_EQ(SlurmGpuPick(t, pos({4, 5, 6, 7}), 2), pos({4, 7}));
  EXPECT_EQ(SlurmGpuPick(t, pos({6, 7}), 2), pos({6, 7}));
  EXPECT_TRUE(SlurmGpuPick(t, pos({6, 7}), 3).empty());
  EXPECT_EQ(SlurmGpuPick(t, Mask({}), 0), Mask({}));
}

}  // namespace
}  // namespace toposched::slurm
