#include "slurm/scontrol.h"

#include <gtest/gtest.h>

#include "slurm/fake_runner.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/slurm.h"

namespace toposched::slurm {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using testing_util::Data;

TEST(ParseRecords, KeepsBlanksInsideValuesAndRepeatedKeys) {
  auto r = ParseRecords(
      "NodeName=a OS=Linux 6.1 #1 SMP Comment=toposched tp=8,pp=2 Nodes=x GRES=g Nodes=y\n", "t");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(*Field((*r)[0], "OS"), "Linux 6.1 #1 SMP");
  EXPECT_EQ(*Field((*r)[0], "Comment"), "toposched tp=8,pp=2");
  int nodes = 0;
  for (const auto& [k, v] : (*r)[0]) nodes += k == "Nodes";
  EXPECT_EQ(nodes, 2);
  auto bad = ParseRecords("hello world\n", "out.txt");
  ASSERT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("out.txt:1:")));
}

TEST(ParseGres, CountsTypesAndIndices) {
  auto g = ParseGres("gpu:v100:2(IDX:0,3),shard:4");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].name, "gpu");
  EXPECT_EQ((*g)[0].type, "v100");
  EXPECT_EQ((*g)[0].count, 2);
  EXPECT_EQ((*g)[0].indices, (std::vector<int>{0, 3}));
  EXPECT_EQ((*g)[1].name, "shard");
  EXPECT_EQ((*g)[1].count, 4);
  auto none = ParseGres("gpu:v100:0(IDX:N/A)");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE((*none)[0].indices.empty());
  EXPECT_THAT(
      ParseGres("gpu:a:b:c:d"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("too many ':' in GRES \"gpu:a:b:c:d\"")));
  EXPECT_THAT(ParseGres("gpu:v100:x"), StatusIs(StatusCode::kInvalidArgument,
                                                HasSubstr("bad GRES count in \"gpu:v100:x\"")));
}

TEST(ParseNodes, CapturedMixedCluster) {
  auto nodes = ParseNodes(Data("show-node-4node-mixed.txt"), "show-node");
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 4u);
  const SlurmNode& a = (*nodes)[0];
  EXPECT_EQ(a.name, "gpu01");
  EXPECT_EQ(a.gpus, 8);
  EXPECT_EQ(a.gpu_type, "v100");
  EXPECT_EQ(a.state, "MIXED");
  EXPECT_TRUE(a.usable);
  EXPECT_FALSE(a.drained);
  EXPECT_EQ(a.gpus_used, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(a.partitions, (std::vector<std::string>{"gpu", "toposched"}));
  EXPECT_EQ((*nodes)[2].gpus_used, (std::vector<int>{0, 3}));
  EXPECT_TRUE((*nodes)[3].gpus_used.empty());
  EXPECT_TRUE((*nodes)[3].gpus_used_known);
}

TEST(ParseNodes, StatesAndErrors) {
  auto n = ParseNodes(
      "NodeName=a State=DOWN* Gres=gpu:2\nNodeName=b State=IDLE+DRAIN Gres=gpu:2\n"
      "NodeName=c State=MIXED Gres=gpu:4 GresUsed=gpu:2\n",
      "s");
  // GresUsed without IDX
  ASSERT_THAT(n, StatusIs(StatusCode::kInvalidArgument,
                          HasSubstr("s:3: node \"c\": GresUsed=: GPUs in use without (IDX:...)")));
  EXPECT_THAT(n.status().message(), HasSubstr("node \"c\""));
  auto ok = ParseNodes("NodeName=a State=DOWN* Gres=gpu:2\nNodeName=b State=IDLE+DRAIN\n", "s");
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE((*ok)[0].usable);
  EXPECT_TRUE((*ok)[1].usable);
  EXPECT_TRUE((*ok)[1].drained);
  EXPECT_EQ((*ok)[1].gpus, 0);
}

TEST(ParseJobs, CapturedQueue) {
  auto jobs = ParseJobs(Data("show-job-4node.txt"), "show-job");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 6u);
  const SlurmJob& running = (*jobs)[1];
  EXPECT_EQ(running.id, "2");
  EXPECT_EQ(running.mapped, job::JobState::kRunning);
  EXPECT_EQ(running.num_nodes, 2);
  EXPECT_EQ(running.gpus_per_node, 4);
  EXPECT_EQ(running.node_list, "gpu[01-02]");
  EXPECT_EQ(running.gpus_by_node.at("gpu01"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(running.gpus_by_node.at("gpu02"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((*jobs)[2].gpus_by_node.at("gpu03"), (std::vector<int>{0, 3}));
  const SlurmJob& held = (*jobs)[3];
  EXPECT_TRUE(held.held);
  EXPECT_EQ(held.name, "marked-comment");
  EXPECT_EQ(held.comment, "toposched tp=4");
  EXPECT_EQ(held.num_nodes, 2);
  EXPECT_EQ(held.user, "root");
  EXPECT_TRUE(held.batch);
  EXPECT_EQ((*jobs)[5].partition, "toposched");
  EXPECT_EQ((*jobs)[5].gpus_per_node, 8);
  EXPECT_FALSE((*jobs)[0].held);  // completed
  EXPECT_EQ((*jobs)[0].mapped, job::JobState::kCompleted);
}

TEST(ParseJobs, EmptyQueueAndErrors) {
  auto none = ParseJobs("No jobs in the system\n", "s");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto bad = ParseJobs("JobId=7 JobState=NAPPING\n", "q.txt");
  ASSERT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("q.txt:1: job 7: JobState=")));
  auto per_job = ParseJobs("JobId=8 JobState=PENDING NumNodes=3 TresPerJob=gres:gpu:12\n", "s");
  ASSERT_TRUE(per_job.ok()) << per_job.status().message();
  EXPECT_EQ((*per_job)[0].gpus_per_node, 4);
  EXPECT_THAT(
      ParseJobs("JobId=9 JobState=PENDING NumNodes=3 TresPerJob=gres:gpu:4\n", "s"),
      StatusIs(StatusCode::kInvalidArgument,
               HasSubstr("s:1: job 9: TresPerJob=: GPUs per job 4 not divisible by NumNodes 3")));
}

TEST(TopologyConfFromShowTopology, CapturedTreeRoundTrips) {
  auto conf = TopologyConfFromShowTopology(Data("show-topology-4node-tree.txt"), "t");
  ASSERT_TRUE(conf.ok()) << conf.status().message();
  // The spine lists every node below it; only its switches are kept.
  EXPECT_THAT(*conf, HasSubstr("SwitchName=spine0 Switches=leaf[0-1] LinkSpeed=1\n")) << *conf;
  EXPECT_THAT(*conf, HasSubstr("SwitchName=leaf0 Nodes=gpu[01-02] LinkSpeed=200\n"));
  auto topo = topo::io::ParseTopologyConf(*conf, "t");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_EQ(topo->domains.size(), 3u);
  EXPECT_EQ(topo->node_names.size(), 4u);
  auto bad = TopologyConfFromShowTopology("SwitchName=s Switches=nope\n", "t");
  ASSERT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown child switch")));
}

TEST(LayoutRequest, ParsesAndRejects) {
  auto l = ParseLayoutRequest("tp=8,pp=2 model=70B");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->tp, 8);
  EXPECT_EQ(l->pp, 2);
  EXPECT_EQ(l->dp, 0);
  EXPECT_DOUBLE_EQ(l->model_params, 70e9);
  EXPECT_TRUE(ParseLayoutRequest("").ok());
  auto bad = ParseLayoutRequest("tp=8,xp=2");
  ASSERT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("\"xp\"")));
  EXPECT_THAT(ParseLayoutRequest("tp=0"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("layout: tp=: expected a positive integer, got \"0\"")));
  EXPECT_THAT(
      ParseLayoutRequest("tp"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("layout: expected key=value, got \"tp\"")));
}

TEST(FindDirective, CapturedScript) {
  auto d = FindDirective(Data("batch-script-directive.sh"));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, "tp=8,pp=2");
  EXPECT_FALSE(FindDirective("#!/bin/sh\n# TOPOSCHED tp=2\nsrun x\n").has_value());
}

}  // namespace
}  // namespace toposched::slurm
