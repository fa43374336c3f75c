// Scheduler::Apply, the one way in: each input does what its method does, a pass reports the
// jobs it started, a refused input changes nothing, and a health report without a reason is
// logged with one that names what was reported.
#include "sched/input.h"

#include <gtest/gtest.h>

#include <string>

#include "core/time_units.h"
#include "job/job_spec.h"
#include "sched/node_network.h"
#include "sched/scheduler.h"
#include "testing/placers.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/import.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const GangPlacer& SlurmPlacer() { return testing::ExamplePlacer("slurm-8node.yaml"); }

job::JobSpec Job(const std::string& name, int gpus) {
  job::JobSpec j;
  j.name = name;
  j.user = "ana";
  j.layout.tp = std::min(gpus, 8);
  j.layout.dp = gpus / j.layout.tp;
  j.layout.dp_bytes = int64_t{1} << 30;
  EXPECT_TRUE(j.Normalize().ok());
  return j;
}

TEST(SchedulerApply, SubmitPassCompleteThroughOneEntry) {
  auto s = Scheduler::Create(SlurmPlacer());
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  auto a = sc.Apply(SubmitJob{Job("a", 8)}, 0);
  auto b = sc.Apply(SubmitJob{Job("b", 16)}, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->job.value, 1);
  EXPECT_EQ(b->job.value, 2);
  auto pass = sc.Apply(Pass{}, kUsPerS);
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(pass->started, (std::vector<JobId>{JobId{1}, JobId{2}}));
  EXPECT_EQ(sc.State(JobId{1}), job::JobState::kRunning);
  ASSERT_TRUE(sc.Apply(SetJobPriority{JobId{2}, 9}, 2 * kUsPerS).ok());
  ASSERT_TRUE(sc.Apply(CompleteJob{JobId{1}, {}}, 3 * kUsPerS).ok());
  ASSERT_TRUE(sc.Apply(Tick{}, 3 * kUsPerS).ok());
  EXPECT_EQ(sc.State(JobId{1}), job::JobState::kCompleted);
  ASSERT_TRUE(sc.Apply(CancelJob{JobId{2}}, 4 * kUsPerS).ok());
  ASSERT_TRUE(sc.Apply(Tick{}, 4 * kUsPerS).ok());
  EXPECT_EQ(sc.State(JobId{2}), job::JobState::kCancelled);
  EXPECT_TRUE(sc.CheckInvariants().ok());
}

// A failed completion (an exit report) ends the job FAILED with the report's reason, and frees
// its GPUs for the next pass.
TEST(SchedulerApply, AFailedCompletionEndsTheJobFailedAndFreesItsGpus) {
  auto s = Scheduler::Create(SlurmPlacer());
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  const int all = sc.cluster_state().ClusterCapacity().total_gpus;
  ASSERT_TRUE(sc.Apply(SubmitJob{Job("a", 8)}, 0).ok());
  ASSERT_TRUE(sc.Apply(Pass{}, kUsPerS).ok());
  ASSERT_EQ(sc.State(JobId{1}), job::JobState::kRunning);
  EXPECT_EQ(sc.cluster_state().ClusterCapacity().free_gpus, all - 8);
  const std::string why = "exit code 1: cause gpu_oom: CUDA out of memory";
  ASSERT_TRUE(sc.Apply(CompleteJob{JobId{1}, why}, 2 * kUsPerS).ok());
  EXPECT_EQ(sc.State(JobId{1}), job::JobState::kFailed);
  EXPECT_EQ(sc.Events().back().reason, why);
  EXPECT_EQ(sc.Events().back().from, job::JobState::kRunning);
  EXPECT_EQ(sc.cluster_state().ClusterCapacity().free_gpus, all);
  // Once ended, it cannot complete again.
  EXPECT_THAT(sc.Apply(CompleteJob{JobId{1}, why}, 3 * kUsPerS),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("job-1: cannot complete a job in state FAILED")));
  EXPECT_TRUE(sc.CheckInvariants().ok());
}

// A pod group is a job like any other: same ids, same order; it only remembers its group.
TEST(SchedulerApply, PodGroupQueuesInTheOneOrderAndKnowsItsPlace) {
  auto s = Scheduler::Create(SlurmPlacer());
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  const int all = sc.cluster_state().ClusterCapacity().total_gpus;
  ASSERT_TRUE(sc.Apply(SubmitJob{Job("hog", all)}, 0).ok());
  ASSERT_TRUE(sc.Apply(Pass{}, 0).ok());
  job::JobSpec g = Job("g", 8);
  g.user = "ml";
  auto group = sc.Apply(SubmitPodGroup{g, "ml/g"}, kUsPerS);
  job::JobSpec x = Job("x", 8);
  x.priority = 5;
  job::JobSpec y = Job("y", 8);
  y.user = "bob";
  auto xa = sc.Apply(SubmitJob{x}, 2 * kUsPerS);
  auto ya = sc.Apply(SubmitJob{y}, 3 * kUsPerS);
  ASSERT_TRUE(group.ok() && xa.ok() && ya.ok());
  EXPECT_EQ(group->job.value, 2);
  EXPECT_EQ(sc.PodGroupOf(JobId{2}), "ml/g");
  EXPECT_EQ(sc.PodGroupOf(JobId{3}), "");
  EXPECT_EQ(sc.PodGroupOf(JobId{99}), "");
  // x: higher priority. g and y: equal priority and usage (ana holds the cluster, not them):
  // the earlier submit first.
  EXPECT_EQ(sc.QueuePosition(JobId{3}), std::make_pair(1, 3));
  EXPECT_EQ(sc.QueuePosition(JobId{2}), std::make_pair(2, 3));
  EXPECT_EQ(sc.QueuePosition(JobId{4}), std::make_pair(3, 3));
  EXPECT_EQ(sc.QueuePosition(JobId{1}), std::nullopt);  // running
  EXPECT_EQ(sc.StartedUs(JobId{1}), std::optional<int64_t>(0));
  EXPECT_EQ(sc.StartedUs(JobId{2}), std::nullopt);
  EXPECT_THAT(sc.Events()[2].reason, HasSubstr("pod group ml/g")) << sc.Events()[2].reason;
  ASSERT_TRUE(sc.Apply(CompleteJob{JobId{1}, {}}, 4 * kUsPerS).ok());
  auto pass = sc.Apply(Pass{}, 4 * kUsPerS);
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->started, (std::vector<JobId>{JobId{3}, JobId{2}, JobId{4}}));
  EXPECT_TRUE(sc.CheckInvariants().ok());
}

TEST(SchedulerApply, RefusedInputChangesNothing) {
  auto s = Scheduler::Create(SlurmPlacer());
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  ASSERT_TRUE(sc.Apply(SubmitJob{Job("a", 8)}, 0).ok());
  const size_t events = sc.Events().size();
  EXPECT_EQ(sc.Apply(CancelJob{JobId{42}}, kUsPerS).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(sc.Apply(SetJobPriority{JobId{42}, 1}, kUsPerS).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(sc.Apply(DrainNode{99, true, ""}, kUsPerS).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sc.Apply(HealthReport{HealthTarget::kGpu, 0, 77, topo::Health::kUnhealthy, ""}, kUsPerS)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  job::JobSpec bad = Job("bad", 8);
  bad.layout.tp = 0;
  EXPECT_EQ(sc.Apply(SubmitJob{bad}, kUsPerS).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sc.Events().size(), events);
  EXPECT_EQ(sc.JobIds().size(), 1u);
}

TEST(SchedulerApply, HealthReportWithoutReasonNamesWhatWasReported) {
  auto s = Scheduler::Create(SlurmPlacer());
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  ASSERT_TRUE(sc.Apply(SubmitJob{Job("a", 8)}, 0).ok());
  ASSERT_TRUE(sc.Apply(Pass{}, 0).ok());
  const Placement* p = sc.PlacementOf(JobId{1});
  ASSERT_NE(p, nullptr);
  const int node = p->parts[0].node;
  ASSERT_TRUE(
      sc.Apply(HealthReport{HealthTarget::kNode, node, 0, topo::Health::kUnhealthy, ""}, kUsPerS)
          .ok());
  bool named = false;
  for (const job::JobEvent& e : sc.Events()) {
    if (e.reason.find("node health report: unhealthy") != std::string::npos) named = true;
  }
  EXPECT_TRUE(named);
}

// Allocations are keyed by owner, not by sign: the elastic grow's trial block used key −2, hold
// 2's allocation, so while hold 2 lived an elastic job could not grow (AlreadyExists).
TEST(SchedulerApply, ElasticGrowWhileHoldsLive) {
  auto s = Scheduler::Create(SlurmPlacer());
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  ASSERT_TRUE(sc.Hold(1, {NodeGpus{0, GpuMask::FirstN(8)}}).ok());
  ASSERT_TRUE(sc.Hold(2, {NodeGpus{1, GpuMask::FirstN(8)}}).ok());
  job::JobSpec el = Job("el", 16);
  el.elastic = job::ElasticRange{1, 4};
  ASSERT_TRUE(el.Normalize().ok());
  ASSERT_TRUE(sc.Apply(SubmitJob{el}, 0).ok());
  auto first = sc.Apply(Pass{}, 0);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto grow = sc.Apply(Pass{}, kUsPerS);
  ASSERT_TRUE(grow.ok()) << grow.status().ToString();
  ASSERT_NE(sc.Spec(JobId{1}), nullptr);
  EXPECT_EQ(sc.Spec(JobId{1})->total_gpus, 32) << "grew to max_replicas on the 6 free nodes";
  EXPECT_EQ(AllocId::FromKey(Scheduler::HoldAllocationId(2).key()), AllocId::Hold(2));
  EXPECT_NE(Scheduler::HoldAllocationId(2), AllocId::Job(2));
  EXPECT_TRUE(sc.CheckInvariants().ok());
}

topo::NodeTopology Sample(const std::string& file) {
  auto t = topo::io::ImportTopologyFile(testing::SourceDir() + "/data/samples/nvidia-smi/" + file,
                                        topo::io::TopoFormat::kAuto);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : topo::NodeTopology{};
}

// A node's own topology, as its agent found it, replaces its profile's: the 8-GPU job on a node
// whose GPUs turn out to reach each other over PCIe and the CPUs (a real 8-GPU all-SYS node,
// as when the NVSwitch fabric is down) is predicted slower and follows its on_degraded; the next
// 8-GPU job avoids a free node with that topology; what the report leaves unknown stays the
// profile's; a NIC health report for a NIC the new topology lacks is dropped; a report of
// another GPU count is refused and changes nothing.
TEST(NodeTopologyReport, ReplacesTheProfilesTopologyForRunningJobsAndPlacement) {
  auto s = Scheduler::Create(testing::ExamplePlacer("h100-2rack.yaml"));
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  ASSERT_TRUE(sc.Apply(SubmitJob{Job("a", 8)}, 0).ok());
  ASSERT_TRUE(sc.Apply(Pass{}, 0).ok());
  const Placement* p = sc.PlacementOf(JobId{1});
  ASSERT_NE(p, nullptr);
  const int node = p->parts[0].node;
  const double before = p->predicted_ms;
  ASSERT_TRUE(
      sc.Apply(HealthReport{HealthTarget::kNic, node, 7, topo::Health::kUnhealthy, "link down"}, 0)
          .ok());

  const topo::NodeTopology pcie = Sample("09-8gpu-pcie-all-sys-2numa-mlsys-tutorial.txt");
  ASSERT_EQ(pcie.gpus.size(), 8u);
  ASSERT_TRUE(pcie.nics.empty());
  ASSERT_TRUE(sc.Apply(NodeTopologyReport{node, pcie, "agent test"}, kUsPerS).ok());
  ASSERT_NE(sc.PlacementOf(JobId{1}), nullptr);
  const double after = sc.PlacementOf(JobId{1})->predicted_ms;
  EXPECT_GT(after, 2 * before) << before << " -> " << after;
  const std::string& name = sc.placer().cluster().nodes[node].name;
  bool noted = false;
  for (const job::JobEvent& e : sc.Events()) {
    if (e.reason.rfind("topology of " + name + " from agent test, predicted", 0) == 0) noted = true;
  }
  EXPECT_TRUE(noted);
  EXPECT_EQ(sc.NicHealth(node, 7), topo::Health::kHealthy) << "NIC 7 is not in the new topology";
  ASSERT_NE(sc.ReportedTopology(node), nullptr);
  EXPECT_EQ(sc.ReportedTopologySource(node), "agent test");
  EXPECT_EQ(sc.ReportedTopology(node)->gpu_model, "H100-SXM5-80GB") << "the profile's";
  EXPECT_EQ(sc.placer().cluster().topology(node).gpu_gpu(0, 1).cls, topo::PathClass::kSYS);

  // A free node with that topology is passed over by the next 8-GPU job.
  const int free_node = node + 1;
  ASSERT_TRUE(sc.Apply(NodeTopologyReport{free_node, pcie, "agent test"}, kUsPerS).ok());
  ASSERT_TRUE(sc.Apply(SubmitJob{Job("b", 8)}, kUsPerS).ok());
  ASSERT_TRUE(sc.Apply(Pass{}, kUsPerS).ok());
  ASSERT_NE(sc.PlacementOf(JobId{2}), nullptr);
  EXPECT_NE(sc.PlacementOf(JobId{2})->parts[0].node, free_node);
  EXPECT_NEAR(sc.PlacementOf(JobId{2})->predicted_ms, before, 1e-9);

  // Another GPU count: refused, nothing changes.
  const size_t events = sc.Events().size();
  auto refused = sc.Apply(
      NodeTopologyReport{node + 2, Sample("07a-2gpu-nv2-workstation-stas00.txt"), "agent test"},
      2 * kUsPerS);
  EXPECT_THAT(refused,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("2 GPUs, the cluster model has 8")));
  EXPECT_EQ(sc.ReportedTopology(node + 2), nullptr);
  EXPECT_EQ(sc.Events().size(), events);
  EXPECT_TRUE(sc.CheckInvariants().ok());
}

// Reports that change nothing keep the node on its profile; identical reports of several nodes
// share one profile (a fleet of agents must not give the placer a profile per node); a NIC
// health report follows its NIC by name.
TEST(NodeTopologyReport, IdenticalReportsShareAProfileAndNicReportsFollowTheirName) {
  auto s = Scheduler::Create(testing::ExamplePlacer("h100-2rack.yaml"));
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  const size_t profiles = sc.placer().cluster().profiles.size();
  const topo::NodeTopology same = Sample("24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt");
  ASSERT_TRUE(sc.Apply(NodeTopologyReport{0, same, "agent"}, 0).ok());
  EXPECT_EQ(sc.ReportedTopologySource(0), "agent");
  EXPECT_EQ(sc.placer().cluster().profiles.size(), profiles) << "the profile's own topology";
  EXPECT_EQ(&sc.placer(), &testing::ExamplePlacer("h100-2rack.yaml")) << "no overlay";

  const topo::NodeTopology pcie = Sample("09-8gpu-pcie-all-sys-2numa-mlsys-tutorial.txt");
  for (int n = 1; n <= 4; ++n) {
    ASSERT_TRUE(sc.Apply(NodeTopologyReport{n, pcie, "agent"}, 0).ok());
  }
  EXPECT_EQ(sc.placer().cluster().profiles.size(), profiles + 1) << "one shared profile";
  EXPECT_EQ(sc.placer().cluster().nodes[1].profile, sc.placer().cluster().nodes[4].profile);

  // A NIC reported down keeps its report through a topology that still has it (by name), and
  // loses it with one that does not.
  ASSERT_TRUE(
      sc.Apply(HealthReport{HealthTarget::kNic, 5, 2, topo::Health::kUnhealthy, "down"}, 0).ok());
  ASSERT_TRUE(sc.Apply(NodeTopologyReport{5, same, "agent"}, 0).ok());
  EXPECT_EQ(sc.NicHealth(5, 2), topo::Health::kUnhealthy);
  ASSERT_TRUE(sc.Apply(NodeTopologyReport{5, pcie, "agent"}, 0).ok());
  EXPECT_EQ(sc.NicHealth(5, 2), topo::Health::kHealthy);
  EXPECT_TRUE(sc.CheckInvariants().ok());
}

// A node's place in the network as the Kubernetes API's labels give it: a node of a running
// 16-GPU job moved under the other spine (into a leaf the cluster file does not have) makes the
// job cross the 2:1 spine uplinks, so it is predicted slower and noted with both places; the
// free GPUs count under the new domains; a domain at another level, or a known leaf under
// another spine, is refused and changes nothing; a new NVLink domain needs its bandwidth; the
// cluster file's own place undoes the move.
TEST(NodeNetworkReport, MovesTheNodeInTheModelAndRescoresItsJobs) {
  const GangPlacer& base = testing::ExamplePlacer("eval-h100-3tier-2to1-512.yaml");
  auto s = Scheduler::Create(base);
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  ASSERT_TRUE(sc.Apply(SubmitJob{Job("a", 16)}, 0).ok());
  ASSERT_TRUE(sc.Apply(Pass{}, 0).ok());
  ASSERT_NE(sc.PlacementOf(JobId{1}), nullptr);
  ASSERT_EQ(sc.PlacementOf(JobId{1})->parts.size(), 2u);
  const double before = sc.PlacementOf(JobId{1})->predicted_ms;
  const int node = sc.PlacementOf(JobId{1})->parts[1].node;
  const topo::Cluster& c0 = base.cluster();
  const int leaf = c0.nodes[node].domain;
  const int spine = c0.domains[leaf].parent;
  const int zone = c0.domains[spine].parent;
  int other_spine = -1;
  for (int d : c0.domains[zone].children) {
    if (d != spine) other_spine = d;
  }
  ASSERT_GE(other_spine, 0);
  const std::string& name = c0.nodes[node].name;
  const std::vector<std::string> moved = {c0.domains[zone].name, c0.domains[other_spine].name,
                                          "block-b9"};
  ASSERT_TRUE(
      sc.Apply(NodeNetworkReport{node, moved, std::nullopt, 0, "labels test"}, kUsPerS).ok());
  const topo::Cluster& c1 = sc.placer().cluster();
  const int now = c1.nodes[node].domain;
  ASSERT_GE(now, 0);
  EXPECT_EQ(c1.domains[now].name, "block-b9");
  EXPECT_EQ(c1.domains[now].parent, other_spine);
  EXPECT_EQ(sc.cluster_state().DomainCapacity(now).total_gpus, 8);
  EXPECT_EQ(sc.cluster_state().DomainCapacity(leaf).total_gpus,
            static_cast<int>(c0.NodesUnder(leaf).size()) * 8 - 8);
  const double after = sc.PlacementOf(JobId{1})->predicted_ms;
  EXPECT_GT(after, before) << "across the spine's 2:1 uplinks";
  bool noted = false;
  for (const job::JobEvent& e : sc.Events()) {
    if (e.reason.find("network place of " + name + " from labels test: " + moved[0] + " > " +
                      moved[1] + " > block-b9 (was ") == 0) {
      noted = true;
    }
  }
  EXPECT_TRUE(noted) << sc.Events().back().reason;
  ASSERT_NE(sc.ReportedNetwork(node), nullptr);
  EXPECT_TRUE(sc.CheckInvariants().ok());

  // Refused, nothing changes: a leaf given at the spine level; a known leaf under another spine;
  // a new NVLink domain without its bandwidth.
  const size_t events = sc.Events().size();
  auto wrong_level = sc.Apply(
      NodeNetworkReport{node, {moved[0], c0.domains[leaf].name, "x"}, std::nullopt, 0, "t"},
      kUsPerS);
  EXPECT_THAT(wrong_level, StatusIs(StatusCode::kInvalidArgument,
                                    HasSubstr("is at level \"leaf\" in the model")));
  auto not_tree = sc.Apply(
      NodeNetworkReport{node, {moved[0], moved[1], c0.domains[leaf].name}, std::nullopt, 0, "t"},
      kUsPerS);
  EXPECT_THAT(not_tree,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("the tiers are not a tree")));
  auto no_gbps = sc.Apply(NodeNetworkReport{node, {}, "clique-7", 0, "t"}, kUsPerS);
  EXPECT_THAT(no_gbps, StatusIs(StatusCode::kInvalidArgument, HasSubstr("nvlink_gbps")));
  EXPECT_EQ(sc.Events().size(), events);
  EXPECT_EQ(sc.placer().cluster().domains[sc.placer().cluster().nodes[node].domain].name,
            "block-b9");

  // A new NVLink domain of two nodes: 16 GPUs in it.
  ASSERT_TRUE(sc.Apply(NodeNetworkReport{node, {}, "clique-7", 900, "t"}, kUsPerS).ok());
  ASSERT_TRUE(sc.Apply(NodeNetworkReport{node + 1, {}, "clique-7", 900, "t"}, kUsPerS).ok());
  ASSERT_EQ(sc.placer().cluster().nvlink_domains.size(), c0.nvlink_domains.size() + 1);
  EXPECT_EQ(
      sc.cluster_state().NvlinkCapacity(static_cast<int>(c0.nvlink_domains.size())).total_gpus, 16);
  EXPECT_TRUE(sc.CheckInvariants().ok());

  // Back where the cluster file puts them: the scheduler's model is the cluster file's again.
  const NodeNetworkReport home = NetworkPlaceOf(c0, node);
  ASSERT_TRUE(sc.Apply(NodeNetworkReport{node, home.domains, "", 0, "t"}, 2 * kUsPerS).ok());
  ASSERT_TRUE(sc.Apply(NodeNetworkReport{node + 1, {}, "", 0, "t"}, 2 * kUsPerS).ok());
  EXPECT_EQ(sc.ReportedNetwork(node), nullptr);
  EXPECT_EQ(sc.ReportedNetwork(node + 1), nullptr);
  EXPECT_EQ(&sc.placer(), &base) << "no overlay left";
  EXPECT_NEAR(sc.PlacementOf(JobId{1})->predicted_ms, before, 1e-9);
  EXPECT_TRUE(sc.CheckInvariants().ok());
}

// NVLink cliques that the labels name otherwise than the cluster file: the nodes of one NVL72
// rack move to "nvl-<clique>" one by one (clique-only reports: their racks stay), and the file's
// domain, left without nodes, goes; the rack's 72 GPUs count under the new one.
TEST(NodeNetworkReport, NodesMoveToAnotherNvlinkDomainAndTheEmptyOneGoes) {
  const GangPlacer& base = testing::ExamplePlacer("gb200-nvl72.yaml");
  auto s = Scheduler::Create(base);
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  const topo::Cluster& c0 = base.cluster();
  ASSERT_EQ(c0.nvlink_domains.size(), 2u);
  const std::vector<int> rack = c0.nvlink_domains[1].nodes;
  for (int n : rack) {
    ASSERT_TRUE(sc.Apply(NodeNetworkReport{n, {}, "nvl-9f2c.1", 900, "labels"}, kUsPerS).ok())
        << c0.nodes[n].name;
    EXPECT_EQ(sc.placer().cluster().domains[sc.placer().cluster().nodes[n].domain].name,
              c0.domains[c0.nodes[n].domain].name)
        << "its rack stays";
  }
  const topo::Cluster& c1 = sc.placer().cluster();
  ASSERT_EQ(c1.nvlink_domains.size(), 2u);
  EXPECT_EQ(c1.nvlink_domains[0].name, "nvl72-rack0");
  EXPECT_EQ(c1.nvlink_domains[1].name, "nvl-9f2c.1");
  EXPECT_EQ(c1.nvlink_domains[1].nodes, rack);
  EXPECT_EQ(sc.cluster_state().NvlinkCapacity(1).total_gpus, 72);
  EXPECT_TRUE(sc.CheckInvariants().ok());
}

TEST(SchedulerApply, KindsAndTargetsHaveTheirNames) {
  EXPECT_STREQ(InputKind(Input{SubmitJob{}}), "submit");
  EXPECT_STREQ(InputKind(Input{SetJobPriority{}}), "priority");
  EXPECT_STREQ(InputKind(Input{Pass{}}), "pass");
  EXPECT_STREQ(InputKind(Input{SchedulePass{}}), "schedule");
  EXPECT_STREQ(InputKind(Input{NodeTopologyReport{}}), "node_topology");
  EXPECT_STREQ(InputKind(Input{NodeNetworkReport{}}), "node_network");
  for (const char* t : {"node", "gpu", "nic", "nvlink"}) {
    auto parsed = ParseHealthTarget(t);
    ASSERT_TRUE(parsed.ok());
    EXPECT_STREQ(HealthTargetName(*parsed), t);
  }
  auto bad = ParseHealthTarget("psu");
  EXPECT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("\"psu\"")));
}

}  // namespace
}  // namespace toposched::sched
