// The simulator on small real and hand-made traces: exact hand-checked timings, golden reports,
// determinism, every GPU free at the end, the openb cluster from its node list.
#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/openb_cluster.h"
#include "sim/policies.h"
#include "sim/report.h"
#include "sim/trace_spec.h"
#include "testing/clusters.h"
#include "testing/golden.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::sim {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using testing::TracePath;

SimResult RunPolicy(const topo::Cluster& c, const Trace& t, const std::string& policy,
                    SimOptions o = {}) {
  auto placer = PlacerOptionsFor(policy);
  EXPECT_TRUE(placer.ok()) << placer.status().ToString();
  auto r = Simulate(c, t, policy, *placer, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : SimResult{};
}

TEST(CommSlowdownTest, StretchesOnlyTheCommunicationShare) {
  EXPECT_DOUBLE_EQ(CommSlowdown(0.1, 10, 10), 1.0);
  EXPECT_DOUBLE_EQ(CommSlowdown(0.1, 30, 10), 0.9 + 0.3);
  EXPECT_DOUBLE_EQ(CommSlowdown(0.5, 20, 10), 1.5);
  EXPECT_DOUBLE_EQ(CommSlowdown(0.0, 50, 10), 1.0);
  EXPECT_DOUBLE_EQ(CommSlowdown(0.3, 0, 0), 1.0);  // no communication: not stretched
}

// Two whole-cluster jobs (256 GPUs on h100-2rack) and a 1-GPU job behind them: the second big
// job waits for the first and, ahead in submit order, takes the cluster when it ends; the small
// job finds no free GPU until both are done.
TEST(SimulatorTest, HandCheckedQueueOnAFullCluster) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t =
      ParseTrace("name,submit_s,duration_s,gpus\nbig1,0,100,256\nbig2,10,50,256\nsmall,20,5,1\n",
                 "q.csv", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SimOptions o;
  o.runtime_model = RuntimeModel::kCommFraction;
  o.comm_fraction = 0;  // run time = trace duration exactly
  SimResult r = RunPolicy(c, *t, "toposched", o);
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_EQ(r.jobs[0].first_start_us, 0);
  EXPECT_EQ(r.jobs[0].end_us, 100'000'000);
  EXPECT_EQ(r.jobs[1].first_start_us, 100'000'000);
  EXPECT_EQ(r.jobs[1].end_us, 150'000'000);
  EXPECT_EQ(r.jobs[2].first_start_us, 150'000'000);
  EXPECT_EQ(r.jobs[2].end_us, 155'000'000);
  EXPECT_EQ(r.makespan_us, 155'000'000);
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_TRUE(r.all_free_at_end);
  // 256 GPUs busy for 150 s, 1 GPU for 5 s, over 155 s on 256 GPUs.
  EXPECT_NEAR(r.gpu_utilization, (256.0 * 150 + 5) / (256.0 * 155), 1e-12);
  const PolicySummary s = Summarize(r);
  EXPECT_EQ(s.jobs, 3);
  EXPECT_NEAR(s.mean_jct_s, (100.0 + 140 + 135) / 3, 1e-9);
  EXPECT_NEAR(s.mean_queue_s, (0.0 + 90 + 130) / 3, 1e-9);
  EXPECT_DOUBLE_EQ(s.p50_jct_s, 135);
  EXPECT_DOUBLE_EQ(s.p99_jct_s, 140);
}

TEST(SimulatorTest, CommunicationStretchesMultiNodeJobsOnly) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ReadTraceFile(TracePath("example-generic.csv"), TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SimOptions o;
  o.runtime_model = RuntimeModel::kCommFraction;
  o.comm_fraction = 0.5;
  SimResult r = RunPolicy(c, *t, "toposched", o);
  ASSERT_EQ(r.unfinished, 0);
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobOutcome& j = r.jobs[i];
    const int64_t ran = j.end_us - j.first_start_us;
    EXPECT_GE(j.first_start_us, j.submit_us) << j.name;
    EXPECT_EQ(ran, std::llround(static_cast<double>(t->jobs[i].duration_us) * j.comm_slowdown))
        << j.name;
    EXPECT_GE(j.comm_slowdown, 0.5) << j.name;
    if (j.gpus == 1) {
      EXPECT_DOUBLE_EQ(j.comm_slowdown, 1.0) << j.name;
    }
  }
}

// The stretch's denominator is one reference for every policy (toposched on the empty cluster),
// not each policy's own choice on the empty cluster: a 4-GPU job that `spread` puts on four
// nodes of an otherwise empty cluster is stretched, under either runtime model.
TEST(SimulatorTest, TheReferenceIsCommonToEveryPolicy) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ParseTrace("name,submit_s,duration_s,gpus,model\nv,0,1000,4,vgg16\n", "r.csv",
                      TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  for (RuntimeModel m : {RuntimeModel::kStep, RuntimeModel::kCommFraction}) {
    SimOptions o;
    o.runtime_model = m;
    const SimResult packed = RunPolicy(c, *t, "toposched", o);
    const SimResult spread = RunPolicy(c, *t, "spread", o);
    ASSERT_EQ(packed.unfinished + spread.unfinished, 0);
    EXPECT_NEAR(packed.jobs[0].comm_slowdown, 1.0, 1e-6);
    EXPECT_FALSE(packed.jobs[0].nodes > 1);
    EXPECT_TRUE(spread.jobs[0].nodes > 1);
    EXPECT_GT(spread.jobs[0].comm_slowdown, 1.05) << static_cast<int>(m);
  }
}

// Two 128-GPU data-parallel jobs placed at random over both leaves of a 2:1 tapered fabric:
// run at once they share the leaf uplinks and each is slower than when they run apart.
TEST(SimulatorTest, JobsOnSharedUplinksSlowEachOther) {
  topo::Cluster c = testing::H100Cluster();
  c.levels[c.FindLevel("leaf")].oversubscription = 2.0;
  c.Finalize();
  auto together = ParseTrace(
      "name,submit_s,duration_s,gpus,model\na,0,1000,128,vgg16\n"
      "b,0,1000,128,vgg16\n",
      "t.csv", TraceFormat::kCsv);
  auto apart = ParseTrace(
      "name,submit_s,duration_s,gpus,model\na,0,1000,128,vgg16\n"
      "b,100000,1000,128,vgg16\n",
      "a.csv", TraceFormat::kCsv);
  ASSERT_TRUE(together.ok() && apart.ok());
  const SimResult t = RunPolicy(c, *together, "random");
  const SimResult a = RunPolicy(c, *apart, "random");
  ASSERT_EQ(t.unfinished + a.unfinished, 0);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(t.jobs[i].nodes > 1);
    EXPECT_GT(t.jobs[i].contention_slowdown, a.jobs[i].contention_slowdown * 1.1) << i;
  }
  // Job a gets the same GPUs in both runs (first on the empty cluster, same draw); b does not.
  EXPECT_EQ(t.jobs[0].gpus, a.jobs[0].gpus);
  EXPECT_GT(t.jobs[0].comm_slowdown, a.jobs[0].comm_slowdown * 1.1);
  EXPECT_GT(Summarize(t).contention_slowdown, 1.0);
}

// Consolidation at checkpoints: 64 one-node jobs of 5 GPUs leave 3 free GPUs on every node, so
// x (TP 8, a 70B model) can start only with its TP group split over nodes; when they end
// (1,000 s), x is past its first checkpoint (600 s) and toposched moves it onto one node. The
// move pays off against the ablation, and the restart is charged: 540 s more restart cost ends x
// exactly 540 s later.
TEST(SimulatorTest, ConsolidationMovesAJobAtACheckpointAndChargesItsRestart) {
  auto c = topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) +
                                         "/data/clusters/eval-h100-3tier-2to1-512.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  c->Finalize();
  std::string csv = "name,submit_s,duration_s,gpus,user,tp,dp,model_params\n";
  for (int i = 0; i < 64; ++i) csv += "b" + std::to_string(i) + ",0,1000,5,u,1,5,1e9\n";
  csv += "x,1,20000,8,u,8,1,70e9\n";
  auto t = ParseTrace(csv, "c.csv", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SimOptions o;
  o.wait_or_spread = false;  // x starts split instead of waiting for the blockers
  o.checkpoint_interval_s = 600;
  o.restart_cost_s = 60;
  const SimResult moved = RunPolicy(*c, *t, "toposched", o);
  o.restart_cost_s = 600;
  const SimResult costly = RunPolicy(*c, *t, "toposched", o);
  o.consolidate = false;
  const SimResult stayed = RunPolicy(*c, *t, "toposched", o);
  ASSERT_EQ(moved.unfinished + costly.unfinished + stayed.unfinished, 0);
  EXPECT_EQ(moved.moves, 1);
  EXPECT_EQ(moved.jobs[64].moves, 1);
  EXPECT_EQ(stayed.moves, 0);
  EXPECT_TRUE(stayed.jobs[64].nodes > 1);
  EXPECT_FALSE(moved.jobs[64].nodes > 1) << "its last run is on one node";
  const double x_moved = static_cast<double>(moved.jobs[64].end_us - moved.jobs[64].submit_us);
  const double x_stayed = static_cast<double>(stayed.jobs[64].end_us - stayed.jobs[64].submit_us);
  EXPECT_LT(x_moved, 0.9 * x_stayed) << x_moved << " vs " << x_stayed;
  EXPECT_EQ(costly.moves, 1);
  EXPECT_NEAR(static_cast<double>(costly.jobs[64].end_us - moved.jobs[64].end_us), 540e6, 2e6);
  EXPECT_TRUE(moved.all_free_at_end);
}

// Backfill by run-time estimates (SimOptions::backfill_by_estimates): 31 one-node jobs leave one
// of 32 nodes free; two of them end at 600 s, the rest at 5,000 s. head (24 GPUs) arrives at
// 10 s, slow (8 GPUs, 5,000 s) right after it. Without estimates head reserves "never" (no time
// limits), on GPUs the long jobs hold: slow takes the free node, and at 600 s head still does not
// fit. With them head reserves the two ending nodes and the free one for 600 s, slow waits, and
// head starts at 600 s.
TEST(SimulatorTest, BackfillByEstimatesStartsTheHeadJobWhenItsReservationSays) {
  const topo::Cluster& c = testing::H100Cluster();
  std::string csv = "name,submit_s,duration_s,gpus\n";
  for (int i = 0; i < 29; ++i) csv += "f" + std::to_string(i) + ",0,5000,8\n";
  csv += "e1,0,600,8\ne2,0,600,8\nhead,10,1000,24\nslow,10,5000,8\n";
  auto t = ParseTrace(csv, "b.csv", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SimOptions o;
  const SimResult around = RunPolicy(c, *t, "kueue-tas", o);
  o.backfill_by_estimates = true;
  const SimResult only_toposched = RunPolicy(c, *t, "kueue-tas", o);
  o.backfill_by_estimates_all = true;
  const SimResult by_estimates = RunPolicy(c, *t, "kueue-tas", o);
  ASSERT_EQ(around.unfinished + only_toposched.unfinished + by_estimates.unfinished, 0);
  const size_t head = 31, slow = 32;
  EXPECT_EQ(around.jobs[slow].first_start_us, 10 * 1000000);
  EXPECT_GE(around.jobs[head].first_start_us, int64_t{5000} * 1000000);
  EXPECT_EQ(only_toposched.jobs[head].first_start_us, around.jobs[head].first_start_us);
  EXPECT_EQ(by_estimates.jobs[head].first_start_us, 600 * 1000000);
  EXPECT_GE(by_estimates.jobs[slow].first_start_us, 600 * 1000000);
  // The toposched-only form turns it on for toposched.
  o.backfill_by_estimates_all = false;
  const SimResult toposched = RunPolicy(c, *t, "toposched", o);
  ASSERT_EQ(toposched.unfinished, 0);
  EXPECT_EQ(toposched.jobs[head].first_start_us, 600 * 1000000);
}

TEST(SimulatorTest, EveryGpuIsFreeAtTheEnd) {
  const topo::Cluster& c = testing::H100Cluster();
  for (const char* f : {"tiresias-60_job.csv", "example-generic.csv", "philly-head200.csv"}) {
    const TraceFormat fmt = std::string(f).find("tiresias") == 0 ? TraceFormat::kTiresias
                            : std::string(f).find("philly") == 0 ? TraceFormat::kPhilly
                                                                 : TraceFormat::kCsv;
    auto t = ReadTraceFile(TracePath(f), fmt);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    for (const std::string& p : PolicyNames()) {
      SimResult r = RunPolicy(c, *t, p);
      EXPECT_EQ(r.unfinished, 0) << f << " " << p;
      EXPECT_TRUE(r.all_free_at_end) << f << " " << p;
      EXPECT_EQ(r.events, 2 * static_cast<int64_t>(t->jobs.size())) << f << " " << p;
    }
  }
}

TEST(SimulatorTest, SameTraceAndSeedGiveByteIdenticalReports) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ReadTraceFile(TracePath("tiresias-60_job.csv"), TraceFormat::kTiresias);
  ASSERT_TRUE(t.ok());
  ReportInfo info;
  info.cluster = c.name;
  std::string first[5];
  for (int round = 0; round < 2; ++round) {
    std::vector<SimResult> rs = {RunPolicy(c, *t, "toposched"), RunPolicy(c, *t, "first-fit")};
    const std::string got[5] = {ReportJson(info, rs), ReportMarkdown(info, rs), JctCdfSvg(rs),
                                UtilizationSvg(rs), SlowdownBySizeSvg(rs)};
    for (int k = 0; k < 5; ++k) {
      if (round == 0) {
        first[k] = got[k];
      } else {
        EXPECT_EQ(first[k], got[k]) << "output " << k;
      }
    }
  }
}

// Golden reports: the exact report.json of small traces. After an intended change of the
// scheduler or the simulator, regenerate with TS_UPDATE_GOLDEN=1 and review the diff.
void ExpectReportGolden(const std::string& golden, const std::string& got) {
  testing::ExpectGolden(std::string(TS_SOURCE_DIR) + "/tests/sim/golden/" + golden, got);
}

// Four DGX-1-class nodes (V100 hybrid cube-mesh, real nvidia-smi topo -m): 32 GPUs for up to
// 8-GPU jobs, so jobs queue and the GPU choice inside a node changes the predicted times.
TEST(SimulatorGoldenTest, TiresiasSampleOnFourV100Nodes) {
  auto cl = topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) +
                                          "/tests/sched/testdata/v100-4node.yaml");
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  topo::Cluster c = std::move(cl).value();
  c.Finalize();
  auto t = ReadTraceFile(TracePath("tiresias-60_job.csv"), TraceFormat::kTiresias);
  ASSERT_TRUE(t.ok());
  ReportInfo info;
  info.cluster = c.name;
  info.cluster_nodes = static_cast<int>(c.nodes.size());
  info.cluster_gpus = c.TotalGpus();
  info.trace = "data/traces/tiresias-60_job.csv";
  info.trace_format = "tiresias";
  info.trace_jobs = static_cast<int>(t->jobs.size());
  info.comm_fraction = 0.1;
  info.policies_distinct = PoliciesDistinct();
  std::vector<SimResult> rs;
  for (const std::string& p : PolicyNames()) {
    rs.push_back(RunPolicy(c, *t, p));
    EXPECT_TRUE(rs.back().all_free_at_end) << p;
    EXPECT_EQ(rs.back().unfinished, 0) << p;
  }
  ExpectReportGolden("tiresias-60_job.v100-4node.report.json", ReportJson(info, rs));
}

TEST(SimulatorGoldenTest, GenericExampleOnH100) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ReadTraceFile(TracePath("example-generic.csv"), TraceFormat::kCsv);
  ASSERT_TRUE(t.ok());
  ReportInfo info;
  info.cluster = c.name;
  info.cluster_nodes = static_cast<int>(c.nodes.size());
  info.cluster_gpus = c.TotalGpus();
  info.trace = "data/traces/example-generic.csv";
  info.trace_format = "csv";
  info.trace_jobs = static_cast<int>(t->jobs.size());
  info.comm_fraction = 0.1;
  info.policies_distinct = PoliciesDistinct();
  std::vector<SimResult> rs;
  for (const std::string& p : PolicyNames()) rs.push_back(RunPolicy(c, *t, p));
  ExpectReportGolden("example-generic.h100-2rack.report.json", ReportJson(info, rs));
}

// jobs.csv: a row per job per run, its figures the ones report.json averages.
TEST(JobsCsvTest, EveryJobHasARowThatAddsUpToTheReport) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ReadTraceFile(TracePath("example-generic.csv"), TraceFormat::kCsv);
  ASSERT_TRUE(t.ok());
  SimOptions o;
  o.seed = 7;
  const std::vector<SimResult> rs = {RunPolicy(c, *t, "toposched", o),
                                     RunPolicy(c, *t, "kueue-tas", o)};
  std::istringstream in(JobsCsv(rs));
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line,
            "policy,seed,job,gpus,gpu_milli,submit_s,start_s,end_s,queue_s,jct_s,ideal_s,"
            "comm_slowdown,contention_slowdown,nodes,preemptions,failures,moves");
  std::map<std::string, std::pair<double, int>> jct;  // policy -> (sum, rows)
  int multi_node = 0;
  size_t rows = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 17u) << line;
    const SimResult& r = rows < t->jobs.size() ? rs[0] : rs[1];
    const JobOutcome& j = r.jobs[rows % t->jobs.size()];
    EXPECT_EQ(f[0], r.policy);
    EXPECT_EQ(f[1], "7");
    EXPECT_EQ(f[2], j.name);
    EXPECT_EQ(std::stoi(f[3]), j.gpus);
    const double submit = std::stod(f[5]), start = std::stod(f[6]), end = std::stod(f[7]);
    EXPECT_NEAR(std::stod(f[8]), start - submit, 0.002) << line;
    EXPECT_NEAR(std::stod(f[9]), end - submit, 0.002) << line;
    EXPECT_GE(std::stoi(f[13]), 1) << line;
    EXPECT_EQ(std::stoi(f[13]), j.nodes) << line;
    multi_node += j.nodes > 1 ? 1 : 0;
    jct[f[0]].first += std::stod(f[9]);
    ++jct[f[0]].second;
    ++rows;
  }
  EXPECT_EQ(rows, 2 * t->jobs.size());
  EXPECT_GT(multi_node, 0);  // the trace has jobs larger than a node
  for (const SimResult& r : rs) {
    EXPECT_NEAR(jct[r.policy].first / jct[r.policy].second, Summarize(r).mean_jct_s, 0.001)
        << r.policy;
  }
}

TEST(JobsCsvTest, UnfinishedJobsLeaveTheirTimesEmptyAndNamesAreQuoted) {
  SimResult r;
  r.policy = "toposched";
  r.seed = 3;
  JobOutcome never;
  never.name = "a,\"b\"";
  never.gpus = 4;
  never.submit_us = 1'500'000;
  never.ideal_us = 60'000'000;
  r.jobs.push_back(never);
  EXPECT_EQ(JobsCsv({r}).substr(JobsCsv({r}).find('\n') + 1),
            "toposched,3,\"a,\"\"b\"\"\",4,1000,1.500,,,,,60.000,,,0,0,0,0\n");
}

TEST(OpenbClusterTest, NodeListBuildsTheTraceCluster) {
  auto c = ReadOpenbNodeList(TracePath("openb_node_list_gpu_node.csv"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // The trace README: 1,213 GPU nodes with 6,212 GPUs.
  EXPECT_EQ(c->nodes.size(), 1213u);
  EXPECT_EQ(c->TotalGpus(), 6212);
  EXPECT_TRUE(LooksLikeOpenbNodeList(TracePath("openb_node_list_gpu_node.csv")));
  EXPECT_FALSE(LooksLikeOpenbNodeList(TracePath("example-generic.csv")));

  auto t = ReadTraceFile(TracePath("openb_pod_list_default-head400.csv"), TraceFormat::kOpenb);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SimResult r = RunPolicy(*c, *t, "toposched");
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_TRUE(r.all_free_at_end);
  EXPECT_EQ(r.jobs.size(), t->jobs.size());
}

// `nodes` openb nodes of `gpus` G2 GPUs each.
topo::Cluster OpenbNodes(int nodes, int gpus) {
  std::string text = "sn,cpu_milli,memory_mib,gpu,model\n";
  for (int i = 0; i < nodes; ++i) {
    text += "n" + std::to_string(i) + ",96000,786432," + std::to_string(gpus) + ",G2\n";
  }
  auto y = OpenbNodesToClusterYaml(text, "nodes.csv");
  EXPECT_TRUE(y.ok()) << y.status().ToString();
  auto c = topo::io::ParseClusterYaml(*y, "nodes.csv", ".");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  topo::Cluster cluster = std::move(c).value();
  cluster.Finalize();
  return cluster;
}

// A small openb-shaped cluster (6 nodes × 8 G2 GPUs, as in the node list) under the first 400
// pods of openb: fractional pods share GPUs in the core, in the replay and in FGD's fill.
topo::Cluster SmallOpenbCluster() { return OpenbNodes(6, 8); }

TEST(OpenbFractionalTest, ReplaySharesGpusAndEndsWithEveryGpuFree) {
  const topo::Cluster c = SmallOpenbCluster();
  auto t = ReadTraceFile(TracePath("openb_pod_list_default-head400.csv"), TraceFormat::kOpenb);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_GT(t->fractional, 100);
  int fractional_jobs = 0;
  for (const TraceJob& j : t->jobs) fractional_jobs += j.gpu_milli < 1000 ? 1 : 0;
  ASSERT_EQ(fractional_jobs, t->fractional);
  for (const std::string& p : PolicyNames()) {
    SimResult r = RunPolicy(c, *t, p);
    EXPECT_EQ(r.unfinished, 0) << p;
    EXPECT_TRUE(r.all_free_at_end) << p;
    int ran = 0;
    for (const JobOutcome& o : r.jobs) {
      if (o.gpu_milli < 1000 && o.end_us >= 0) ++ran;
    }
    EXPECT_EQ(ran, fractional_jobs) << p;
    // A shared GPU counts whole in gpu_utilization, by its used milli in the allocation.
    EXPECT_LT(r.gpu_allocation_milli, r.gpu_utilization) << p;
    EXPECT_GT(r.gpu_allocation_milli, 0.5 * r.gpu_utilization) << p;
    EXPECT_GE(r.final_gpu_allocation_milli, 0) << p;
  }
}

TEST(OpenbFractionalTest, FillPacksFractionsOntoSharedGpus) {
  const topo::Cluster c = SmallOpenbCluster();
  auto t = ReadTraceFile(TracePath("openb_pod_list_default-head400.csv"), TraceFormat::kOpenb);
  ASSERT_TRUE(t.ok());
  SimOptions o;
  o.fill_ratio = 1.3;
  o.seed = 42;
  SimResult r = RunPolicy(c, *t, "toposched", o);
  EXPECT_EQ(r.experiment, "fill");
  EXPECT_TRUE(r.all_free_at_end);
  int placed_gpus = 0, placed_fractional = 0;
  int64_t placed_milli = 0;
  for (const JobOutcome& j : r.jobs) {
    if (j.first_start_us < 0) continue;
    placed_gpus += j.gpus;
    placed_fractional += j.gpu_milli < 1000 ? 1 : 0;
    placed_milli += static_cast<int64_t>(j.gpus) * j.gpu_milli;
  }
  const int held = static_cast<int>(std::lround(r.gpu_utilization * c.TotalGpus()));
  // More pods than GPUs they hold: fractions share GPUs.
  EXPECT_GT(placed_fractional, 0);
  EXPECT_GT(placed_gpus, held);
  EXPECT_LE(held, c.TotalGpus());
  EXPECT_NEAR(r.final_gpu_allocation_milli, placed_milli / (1000.0 * c.TotalGpus()), 1e-12);
  EXPECT_GT(r.final_gpu_allocation_milli, 0.85);  // 48 GPUs offered 1.3 × their capacity
  EXPECT_LE(r.final_gpu_allocation_milli, 1.0);
  EXPECT_GT(r.refused, 0);
  EXPECT_EQ(r.unfinished, r.refused);  // fill: the refused pods are the ones that never ran
  // Same seed, same figures.
  SimResult again = RunPolicy(c, *t, "toposched", o);
  EXPECT_EQ(again.final_gpu_allocation_milli, r.final_gpu_allocation_milli);
}

// An openb pod list with pods (num_gpu, gpu_milli) created in this order.
Trace OpenbPods(const std::vector<std::pair<int, int>>& pods) {
  std::string text =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n";
  for (size_t i = 0; i < pods.size(); ++i) {
    text += "p" + std::to_string(i) + ",1000,1024," + std::to_string(pods[i].first) + "," +
            std::to_string(pods[i].second) + ",,LS,Running," + std::to_string(i) + ",1000," +
            std::to_string(i) + "\n";
  }
  auto t = ParseTrace(text, "pods.csv", TraceFormat::kOpenb);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : Trace{};
}

// The fill experiment in trace order (no shuffle, no draws: the trace alone exceeds 1% of the
// GPUs).
SimResult FillInOrder(const topo::Cluster& c, const Trace& t, const std::string& policy) {
  SimOptions o;
  o.fill_ratio = 0.01;
  o.fill_shuffle = false;
  SimResult r = RunPolicy(c, t, policy, o);
  EXPECT_EQ(r.jobs.size(), t.jobs.size()) << policy;
  return r;
}

TEST(OpenbFillTest, PodsNeverSpanNodes) {
  const Trace t = OpenbPods({{1, 1000}, {1, 1000}, {2, 1000}});
  auto spec = MakeJobSpec(t.jobs[2], t.source, 2);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->constraints.job.mode, job::ConstraintMode::kRequired);
  EXPECT_EQ(spec->constraints.job.level, job::kLevelNode);
  // Two nodes of 2 GPUs. Best fit puts both 1-GPU pods on n0, so the 2-GPU pod gets n1; spread
  // (first-fit: least allocated) puts one on each node, and the 2-GPU pod, which may not be
  // split over two nodes, is refused.
  const topo::Cluster c = OpenbNodes(2, 2);
  for (const std::string p : {"best-fit", "toposched", "kueue-tas"}) {
    SimResult r = FillInOrder(c, t, p);
    EXPECT_EQ(r.refused, 0) << p;
    EXPECT_DOUBLE_EQ(r.final_gpu_allocation_milli, 1.0) << p;
  }
  SimResult spread = FillInOrder(c, t, "first-fit");
  EXPECT_EQ(spread.refused, 1);
  EXPECT_LT(spread.jobs[2].first_start_us, 0);
  EXPECT_DOUBLE_EQ(spread.final_gpu_allocation_milli, 0.5);
}

// Fractional pods follow the policy's packing rule (PlacementPlugins::shares), and the choice
// decides what fits later.
TEST(OpenbFillTest, FractionsFollowThePolicy) {
  {
    // Two nodes of 2 GPUs; 500, 500, then two 2-GPU pods. Packing puts both halves on one GPU
    // of n0, so one 2-GPU pod gets n1 (3 of 4 GPUs allocated). Spread puts one half on each
    // node and neither 2-GPU pod fits (1 of 4).
    const topo::Cluster c = OpenbNodes(2, 2);
    const Trace t = OpenbPods({{1, 500}, {1, 500}, {2, 1000}, {2, 1000}});
    for (const std::string& p : PolicyNames()) {
      SimResult r = FillInOrder(c, t, p);
      const bool spread = p == "first-fit" || p == "spread" || p == "random";
      EXPECT_EQ(r.refused, spread ? 2 : 1) << p;
      EXPECT_DOUBLE_EQ(r.final_gpu_allocation_milli, spread ? 0.25 : 0.75) << p;
    }
  }
  {
    // n0 has 2 GPUs, n1 3. 500 → n0 GPU 0; a 2-GPU pod → n1 (best fit), leaving n1 one free
    // GPU and n0 one free GPU plus 500 milli of room. Then 400: toposched (the tightest shared
    // GPU) and slurm-tree (first node, first GPU with room) put it on n0's shared GPU and keep
    // both free GPUs whole, so the two 1-GPU pods that follow fit (4.9 of 5 GPUs). best-fit,
    // pair-score and kueue-tas take the fullest node, n1 (1000 milli free against 1500), and
    // open its last GPU; first-fit spreads to the same GPU; then one 1-GPU pod is refused
    // (3.9 of 5).
    std::string nodes =
        "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,2,G2\n"
        "n1,96000,786432,3,G2\n";
    auto y = OpenbNodesToClusterYaml(nodes, "nodes.csv");
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    auto cl = topo::io::ParseClusterYaml(*y, "nodes.csv", ".");
    ASSERT_TRUE(cl.ok()) << cl.status().ToString();
    cl->Finalize();
    const Trace t = OpenbPods({{1, 500}, {2, 1000}, {1, 400}, {1, 1000}, {1, 1000}});
    for (const std::string& p : PolicyNames()) {
      SimResult r = FillInOrder(*cl, t, p);
      const bool keeps_whole = p == "toposched" || p == "slurm-tree";
      EXPECT_EQ(r.refused, keeps_whole ? 0 : 1) << p;
      EXPECT_DOUBLE_EQ(r.final_gpu_allocation_milli, keeps_whole ? 0.98 : 0.78) << p;
    }
  }
}

TEST(OpenbClusterTest, BadNodeListNamesTheLine) {
  auto y = OpenbNodesToClusterYaml("sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,8,T4\nn1,1,1,2,T4\n",
                                   "nodes.csv");
  ASSERT_THAT(y, StatusIs(StatusCode::kInvalidArgument,
                          HasSubstr("nodes.csv:3: column \"sn\": node \"n1\" listed twice")));
  y = OpenbNodesToClusterYaml("sn,gpu,model\nn1,x,T4\n", "nodes.csv");
  ASSERT_THAT(y, StatusIs(StatusCode::kInvalidArgument, HasSubstr("nodes.csv:2: column \"gpu\"")));
}

TEST(SimulatorTest, FailuresRequeueJobsThatThenComplete) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ReadTraceFile(TracePath("example-generic.csv"), TraceFormat::kCsv);
  ASSERT_TRUE(t.ok());
  SimOptions o;
  o.failures = true;
  o.failures_per_gpu_day = 0.2;  // far above Llama 3's rate, so that a short trace sees some
  o.repair_mean_s = 600;
  o.seed = 7;
  SimResult a = RunPolicy(c, *t, "toposched", o);
  EXPECT_GT(a.failures, 0);
  EXPECT_GT(a.jobs_interrupted, 0);
  EXPECT_EQ(a.unfinished, 0);  // requeued (the default failure policy) and run again
  EXPECT_EQ(a.failures_survived, [&] {
    int n = 0;
    for (const JobOutcome& j : a.jobs) n += j.failures > 0 ? 1 : 0;
    return n;
  }());
  EXPECT_TRUE(a.all_free_at_end);
  // Seeded: the same seed draws the same failures; another seed others.
  SimResult b = RunPolicy(c, *t, "toposched", o);
  ReportInfo info;
  EXPECT_EQ(ReportJson(info, {a}), ReportJson(info, {b}));
  o.seed = 8;
  SimResult d = RunPolicy(c, *t, "toposched", o);
  EXPECT_NE(ReportJson(info, {a}), ReportJson(info, {d}));
}

TEST(SimulatorTest, BadOptions) {
  SimOptions o;
  o.comm_fraction = 1.5;
  EXPECT_THAT(o.Validate(),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("comm_fraction: comm fraction must be in [0, 1], got 1.5")));
  o = SimOptions{};
  o.repair_mean_s = 0;
  EXPECT_THAT(o.Validate(),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("repair_mean_s: mean repair time must be in (0, 1e9) s, got 0")));
  o = SimOptions{};
  o.fill_ratio = 250;
  EXPECT_THAT(o.Validate(),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("fill_ratio: fill ratio must be in [0, 100] (0 = replay in time), "
                                 "got 250")));
}

TEST(ReportTest, MarkdownRowsHaveAsManyCellsAsTheHeader) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ReadTraceFile(TracePath("example-generic.csv"), TraceFormat::kCsv);
  ASSERT_TRUE(t.ok());
  std::vector<SimResult> rs = {RunPolicy(c, *t, "toposched"), RunPolicy(c, *t, "first-fit")};
  std::istringstream md(ReportMarkdown(ReportInfo{}, rs));
  std::string line;
  std::vector<size_t> bars;
  while (std::getline(md, line)) {
    if (line.rfind("| ", 0) == 0) bars.push_back(std::count(line.begin(), line.end(), '|'));
  }
  ASSERT_EQ(bars.size(), 4u);  // header, rule, two policies
  for (size_t b : bars) EXPECT_EQ(b, bars[0]);
}

// report.json's object for `policy`, parsed.
nlohmann::json PolicyJson(const std::vector<SimResult>& rs, const std::string& policy) {
  const nlohmann::json j = nlohmann::json::parse(ReportJson(ReportInfo{}, rs));
  return j.at("policies").at(policy);
}

// JCTs of the completed jobs in seconds, ascending.
std::vector<double> JctsS(const SimResult& r) {
  std::vector<double> v;
  for (const JobOutcome& j : r.jobs) {
    if (j.end_us >= 0) v.push_back(static_cast<double>(j.end_us - j.submit_us) / 1e6);
  }
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ReportTest, JctCdfAndUtilizationSeriesOfAHandCheckedRun) {
  const topo::Cluster& c = testing::H100Cluster();
  // Four 1-GPU jobs at 0 s on an empty cluster: JCTs 10, 10, 10, 20 s exactly.
  auto t = ParseTrace("name,submit_s,duration_s,gpus\na,0,10,1\nb,0,10,1\nc,0,10,1\nd,0,20,1\n",
                      "ties.csv", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  SimOptions o;
  o.runtime_model = RuntimeModel::kCommFraction;
  o.comm_fraction = 0;
  const nlohmann::json p = PolicyJson({RunPolicy(c, *t, "toposched", o)}, "toposched");
  // One point per distinct JCT, its share counting the ties: F(10) = 3/4, F(20) = 1.
  EXPECT_EQ(p.at("jct_cdf"), nlohmann::json::parse("[[10.0, 0.75], [20.0, 1.0]]"));
  // 200 bins of 0.1 s over the 20 s makespan, all kept: 4 of 256 GPUs busy, then 1.
  const nlohmann::json& u = p.at("utilization_series");
  ASSERT_EQ(u.size(), 200u);
  EXPECT_NEAR(u[0][0].get<double>(), 0.05, 1e-9);
  EXPECT_NEAR(u[0][1].get<double>(), 4.0 / 256, 1e-6);
  EXPECT_NEAR(u[99][1].get<double>(), 4.0 / 256, 1e-6);
  EXPECT_NEAR(u[100][1].get<double>(), 1.0 / 256, 1e-6);
  EXPECT_NEAR(u[199][0].get<double>(), 19.95, 1e-9);
  EXPECT_NEAR(u[199][1].get<double>(), 1.0 / 256, 1e-6);
}

TEST(ReportTest, JctCdfAndUtilizationSeriesAreBoundedAndMonotone) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ReadTraceFile(TracePath("tiresias-60_job.csv"), TraceFormat::kTiresias);
  ASSERT_TRUE(t.ok());
  SimOptions fine;
  fine.utilization_bins = 1000;  // more bins than report.json keeps
  const std::vector<SimResult> rs = {RunPolicy(c, *t, "toposched", fine),
                                     RunPolicy(c, *t, "first-fit")};
  for (const SimResult& r : rs) {
    SCOPED_TRACE(r.policy);
    const nlohmann::json p = PolicyJson(rs, r.policy);
    const std::vector<double> jct = JctsS(r);
    ASSERT_FALSE(jct.empty());
    const nlohmann::json& cdf = p.at("jct_cdf");
    ASSERT_FALSE(cdf.empty());
    EXPECT_LE(cdf.size(), 101u);
    for (size_t i = 0; i < cdf.size(); ++i) {
      const double x = cdf[i][0].get<double>(), f = cdf[i][1].get<double>();
      EXPECT_GT(f, 0.0);
      EXPECT_LE(f, 1.0);
      if (i > 0) {
        EXPECT_GE(x, cdf[i - 1][0].get<double>()) << i;
        EXPECT_GE(f, cdf[i - 1][1].get<double>()) << i;
      }
    }
    EXPECT_NEAR(cdf.front()[0].get<double>(), jct.front(), 5e-4);  // p0: the shortest
    EXPECT_NEAR(cdf.back()[0].get<double>(), jct.back(), 5e-4);    // p100: the longest
    EXPECT_EQ(cdf.back()[1].get<double>(), 1.0);
    // The nearest-rank p50 and p99 are the first points whose share reaches 50% and 99%.
    for (const std::pair<double, const char*>& q :
         {std::pair{0.5, "p50_jct_s"}, std::pair{0.99, "p99_jct_s"}}) {
      auto it = std::find_if(cdf.begin(), cdf.end(), [&q](const nlohmann::json& pt) {
        return pt[1].get<double>() >= q.first;
      });
      ASSERT_NE(it, cdf.end()) << q.second;
      EXPECT_EQ((*it)[0].get<double>(), p.at(q.second).get<double>()) << q.second;
    }

    const nlohmann::json& u = p.at("utilization_series");
    // The bins utilization.svg draws: those whose midpoint lies within the makespan.
    size_t drawn = 0;
    while (drawn < r.utilization_series.size() &&
           (static_cast<double>(drawn) + 0.5) * static_cast<double>(r.bin_us) <=
               static_cast<double>(r.makespan_us)) {
      ++drawn;
    }
    ASSERT_GE(drawn, 2u);
    EXPECT_EQ(u.size(), std::min<size_t>(drawn, 200));
    for (size_t i = 0; i < u.size(); ++i) {
      const double busy = u[i][1].get<double>();
      EXPECT_GE(busy, 0.0) << i;
      EXPECT_LE(busy, 1.0) << i;
      if (i > 0) {
        EXPECT_GT(u[i][0].get<double>(), u[i - 1][0].get<double>()) << i;
      }
    }
    EXPECT_LE(u.back()[0].get<double>(), p.at("makespan_s").get<double>());
    // First and last drawn bins kept as they are, downsampled or not.
    EXPECT_NEAR(u.front()[0].get<double>(), 0.5 * static_cast<double>(r.bin_us) / 1e6, 1e-6);
    EXPECT_NEAR(u.front()[1].get<double>(), r.utilization_series.front(), 1e-6);
    EXPECT_NEAR(u.back()[0].get<double>(),
                (static_cast<double>(drawn) - 0.5) * static_cast<double>(r.bin_us) / 1e6, 1e-6);
    EXPECT_NEAR(u.back()[1].get<double>(), r.utilization_series[drawn - 1], 1e-6);
  }
  EXPECT_GT(rs[0].utilization_series.size(), 200u);  // toposched's series was downsampled
}

TEST(ReportTest, NoCompletedJobGivesAnEmptyJctCdf) {
  const topo::Cluster& c = testing::H100Cluster();
  // Larger than the 256-GPU cluster: it never fits, so nothing completes.
  auto t =
      ParseTrace("name,submit_s,duration_s,gpus\nhuge,0,100,1024\n", "huge.csv", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const SimResult r = RunPolicy(c, *t, "toposched");
  ASSERT_EQ(r.unfinished, 1);
  const nlohmann::json p = PolicyJson({r}, "toposched");
  EXPECT_EQ(p.at("jobs"), 0);
  EXPECT_EQ(p.at("jct_cdf"), nlohmann::json::array());
  EXPECT_EQ(p.at("makespan_s"), 0.0);
  EXPECT_EQ(p.at("utilization_series"), nlohmann::json::array());  // nothing ran
}

TEST(ReportTest, PlotSeriesComeFromThePolicysFirstRun) {
  const topo::Cluster& c = testing::H100Cluster();
  auto t = ReadTraceFile(TracePath("example-generic.csv"), TraceFormat::kCsv);
  ASSERT_TRUE(t.ok());
  SimOptions o;
  o.failures = true;  // seeded failure draws: the two seeds give different runs
  o.failures_per_gpu_day = 0.2;
  o.repair_mean_s = 600;
  o.seed = 7;
  const SimResult a = RunPolicy(c, *t, "toposched", o);
  o.seed = 8;
  const SimResult b = RunPolicy(c, *t, "toposched", o);
  const nlohmann::json pa = PolicyJson({a}, "toposched"), pb = PolicyJson({b}, "toposched");
  ASSERT_NE(pa.at("jct_cdf"), pb.at("jct_cdf"));
  const nlohmann::json seeded = PolicyJson({a, b}, "toposched");
  EXPECT_EQ(seeded.at("seeds"), 2);
  EXPECT_EQ(seeded.at("jct_cdf"), pa.at("jct_cdf"));
  EXPECT_EQ(seeded.at("utilization_series"), pa.at("utilization_series"));
}

TEST(PolicyTest, ListParsing) {
  auto all = ParsePolicyList("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 9u);
  auto two = ParsePolicyList("toposched, first-fit");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<std::string>{"toposched", "first-fit"}));
  EXPECT_THAT(ParsePolicyList("toposched,nope"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown policy \"nope\"")));
  EXPECT_THAT(ParsePolicyList("best-fit,best-fit"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("policy \"best-fit\" given twice")));
}

}  // namespace
}  // namespace toposched::sim
