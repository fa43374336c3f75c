// The step-time model, link sharing and the fragmentation measure: the embedded catalog, the
// data-parallel/transformer split, step times on real placements of the H100 example cluster,
// uplink capacities and contention on a 2:1 tapered copy of it.
#include "sim/step_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "cost/cost_tables.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "sim/trace_spec.h"
#include "state/cluster_state.h"
#include "state/link_model.h"
#include "testing/alloc_ids.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"

namespace toposched::sim {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

TraceJob Job(int gpus, const std::string& model = "", double params = 0, int tp = 0, int pp = 0) {
  TraceJob j;
  j.name = "j";
  j.line = 2;
  j.gpus = gpus;
  j.duration_us = 1'000'000;
  j.model = model;
  j.model_params = params;
  j.tp = tp;
  j.pp = pp;
  return j;
}

// The H100 example with its leaves 2:1 oversubscribed.
const topo::Cluster& TaperedH100() {
  static const topo::Cluster* c = [] {
    auto* t = new topo::Cluster(testing::H100Cluster());
    t->levels[t->FindLevel("leaf")].oversubscription = 2.0;
    t->Finalize();
    return t;
  }();
  return *c;
}

TEST(StepCatalogTest, EmbeddedCatalogParses) {
  const StepCatalog& c = StepCatalog::Default();
  ASSERT_NE(c.FindModel("ResNet50"), nullptr);
  EXPECT_DOUBLE_EQ(c.FindModel("resnet50")->params, 25.6e6);
  EXPECT_EQ(c.FindModel("no-such-net"), nullptr);
  EXPECT_EQ(c.default_model, "resnet50");
  EXPECT_DOUBLE_EQ(c.SustainedFlops("H100-SXM5-80GB"), 989e12 * 0.40);
  EXPECT_DOUBLE_EQ(c.SustainedFlops("Tesla-V100-SXM2-32GB"), 125e12 * 0.30);
  EXPECT_DOUBLE_EQ(c.SustainedFlops(""), 312e12 * 0.52);
  // Every Tiresias sample model is in the catalog.
  for (const char* m : {"alexnet", "googlenet", "inception3", "inception4", "resnet50", "resnet101",
                        "resnet152", "vgg11", "vgg16", "vgg19"}) {
    EXPECT_NE(c.FindModel(m), nullptr) << m;
  }
}

TEST(StepCatalogTest, BadCatalogNamesTheField) {
  auto c = StepCatalog::Parse(R"({"gpus": [{"match": "", "peak_tflops": 1,
      "sustained_fraction": 0.5}], "models": [{"name": "x", "train_flops_per_sample": 1}]})",
                              "cat.json");
  ASSERT_THAT(c, StatusIs(StatusCode::kInvalidArgument,
                          HasSubstr("cat.json: $.models[0].params: expected a number")));
  EXPECT_THAT(StepCatalog::Parse("[1,", "cat.json"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("cat.json: not a JSON object")));
}

TEST(WorkloadTest, DataParallelModelsAndTransformers) {
  const StepCatalog& c = StepCatalog::Default();
  EXPECT_FALSE(IsTransformer(Job(8, "vgg16"), c));
  EXPECT_FALSE(IsTransformer(Job(8), c));  // no model: the default, data-parallel
  EXPECT_TRUE(IsTransformer(Job(64, "", 70e9), c));
  EXPECT_TRUE(IsTransformer(Job(16, "", 0, 8, 2), c));
  EXPECT_FALSE(IsTransformer(Job(8, "", 3e8), c));
}

TEST(WorkloadTest, TraceWithoutModelIsResnet50DataParallel) {
  auto spec = MakeJobSpec(Job(4), "t.csv", 8);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->layout.tp, 1);
  EXPECT_EQ(spec->layout.dp, 4);
  EXPECT_EQ(spec->layout.dp_bytes, static_cast<int64_t>(25.6e6 * 4));
  auto w = WorkloadOf(Job(4), *spec, StepCatalog::Default(), "t.csv");
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->transformer);
  EXPECT_EQ(w->model, "resnet50");
  EXPECT_DOUBLE_EQ(w->flops_per_gpu, 24.5e9 * 32);
}

TEST(WorkloadTest, UnknownModelNamesTheLine) {
  auto spec = MakeJobSpec(Job(4, "resnet9000"), "t.csv", 8);
  ASSERT_THAT(
      spec,
      StatusIs(StatusCode::kInvalidArgument,
               ::testing::StrEq("t.csv:2: job \"j\": model \"resnet9000\" is not in the catalog")));
}

TEST(WorkloadTest, TransformerMicrobatchesAndLayers) {
  TraceJob j = Job(64, "", 70e9, 8, 1);
  auto spec = MakeJobSpec(j, "t.csv", 8);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto w = WorkloadOf(j, *spec, StepCatalog::Default(), "t.csv");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->transformer);
  // 4M tokens over DP 8 replicas in micro-batches of 1 × 4096 tokens.
  EXPECT_DOUBLE_EQ(w->microbatches, 4194304.0 / 8 / 4096);
  EXPECT_DOUBLE_EQ(w->flops_per_gpu, 6 * 70e9 * 4194304.0 / 64);
  EXPECT_GT(w->layers, 40);
  EXPECT_LT(w->layers, 120);
}

std::vector<sched::RankSlot> Ranks(const std::vector<std::pair<int, int>>& node_gpu) {
  std::vector<sched::RankSlot> r;
  for (size_t i = 0; i < node_gpu.size(); ++i) {
    r.push_back({static_cast<int>(i), node_gpu[i].first, node_gpu[i].second, -1});
  }
  return r;
}

TEST(StepPartsTest, EightGpusOnOneNodeBeatEightNodes) {
  const cost::CostModel cost(testing::H100Cluster());
  TraceJob j = Job(8, "vgg16");
  auto spec = MakeJobSpec(j, "t.csv", 8);
  ASSERT_TRUE(spec.ok());
  auto w = WorkloadOf(j, *spec, StepCatalog::Default(), "t.csv");
  ASSERT_TRUE(w.ok());
  std::vector<std::pair<int, int>> packed, spread;
  for (int g = 0; g < 8; ++g) {
    packed.emplace_back(0, g);
    spread.emplace_back(g, 0);
  }
  auto a = StepPartsOn(cost, *spec, *w, Ranks(packed), StepCatalog::Default());
  auto b = StepPartsOn(cost, *spec, *w, Ranks(spread), StepCatalog::Default());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(a->dp_net);
  EXPECT_TRUE(b->dp_net);
  EXPECT_DOUBLE_EQ(a->compute_ms, b->compute_ms);
  EXPECT_GT(b->dp_ms, a->dp_ms);
  // 553 MB of fp32 gradients: over the NICs the all-reduce outlasts the backward pass.
  EXPECT_GT(StepMs(*b, 1.0, 1.0), StepMs(*a, 1.0, 1.0));
  EXPECT_GT(StepMs(*b, 2.0, 1.0), StepMs(*b, 1.0, 1.0));
  // Contention never touches a job inside one node.
  EXPECT_DOUBLE_EQ(StepMs(*a, 3.0, 1.0), StepMs(*a, 1.0, 1.0));
}

TEST(LinkModelTest, CapacityFollowsTheOversubscription) {
  sched::LinkModel links(TaperedH100());
  const topo::Cluster& c = TaperedH100();
  // 16 nodes × 8 NICs × 400 Gb/s under a 2:1 leaf.
  EXPECT_DOUBLE_EQ(links.Capacity(c.FindDomain("leaf0")), 16 * 8 * 400 / 2.0);
  EXPECT_DOUBLE_EQ(links.Capacity(c.FindDomain("spine0")), 0);  // the top has no uplink
}

TEST(LinkModelTest, JobsCrossingOneUplinkShareIt) {
  sched::LinkModel links(TaperedH100());
  // 8 whole nodes of leaf0 with 8 of leaf1: 8 × 3,200 Gb/s on a 25,600 Gb/s uplink each way.
  std::vector<std::pair<int, int>> a, b, inside, thin;
  for (int n = 0; n < 8; ++n) {
    a.emplace_back(n, 8);
    a.emplace_back(16 + n, 8);
    b.emplace_back(8 + n, 8);
    b.emplace_back(24 + n, 8);
    thin.emplace_back(n, 1);
    thin.emplace_back(16 + n, 1);
  }
  inside = {{0, 8}, {1, 8}, {2, 8}, {3, 8}};
  // One GPU per node drives one of its eight NICs.
  ASSERT_EQ(links.UsageOf(thin).links.size(), 2u);
  EXPECT_DOUBLE_EQ(links.UsageOf(thin).links[0].second, 8 * 400.0);
  const sched::LinkModel::Usage ua = links.UsageOf(a), ub = links.UsageOf(b);
  EXPECT_EQ(ua.links.size(), 2u);  // leaf0 and leaf1 uplinks
  EXPECT_TRUE(links.UsageOf(inside).links.empty());
  EXPECT_DOUBLE_EQ(links.AloneFactor(ua), 1.0);
  links.Add(ua);
  EXPECT_DOUBLE_EQ(links.Factor(ua), 1.0);
  links.Add(ub);  // both: 16 nodes per leaf send up a 2:1 uplink
  EXPECT_DOUBLE_EQ(links.Factor(ua), 2.0);
  EXPECT_DOUBLE_EQ(links.Factor(ub), 2.0);
  links.Remove(ub);
  EXPECT_DOUBLE_EQ(links.Factor(ua), 1.0);
}

// Two jobs of 8 whole nodes in each of leaf0 and leaf1 of TaperedH100: together they load both
// leaves' 2:1 uplinks to twice their capacity.
std::pair<std::vector<std::pair<int, int>>, std::vector<std::pair<int, int>>>
TwoJobsOnLeaf0AndLeaf1Uplinks() {
  std::vector<std::pair<int, int>> a, b;
  for (int n = 0; n < 8; ++n) {
    a.emplace_back(n, 8);
    a.emplace_back(16 + n, 8);
    b.emplace_back(8 + n, 8);
    b.emplace_back(24 + n, 8);
  }
  return {a, b};
}

// A job whose DP all-reduce overlaps its backward pass loses nothing to a slower link until its
// all-reduce outlasts the time it hides behind (sim/step_model.h, StepMs). The contention price
// of a newcomer counts only that exposed part, for the newcomer and for the jobs it joins.
TEST(LinkModelTest, HiddenDpTrafficCostsOnlyWhatOutlastsTheBackwardPass) {
  // (not a structured binding: the lambda below captures them)
  const auto jobs = TwoJobsOnLeaf0AndLeaf1Uplinks();
  const std::vector<std::pair<int, int>>&a = jobs.first, &b = jobs.second;
  using Traffic = sched::LinkModel::Traffic;
  // The newcomer b doubles the load of a's two uplinks (factor 1 → 2).
  auto price = [&](const Traffic& running, const Traffic& newcomer) {
    sched::LinkModel links(TaperedH100());
    const sched::LinkModel::Usage ua = links.UsageOf(a), ub = links.UsageOf(b);
    links.Add(ua, running);
    return links.ContentionMs(ub, newcomer);
  };
  // All exposed: as the network_ms form, on each of a's two links.
  sched::LinkModel plain(TaperedH100());
  plain.Add(plain.UsageOf(a), 40.0);
  const sched::LinkModel::Contention exposed = plain.ContentionMs(plain.UsageOf(b), 12.0);
  EXPECT_DOUBLE_EQ(exposed.others_ms, 2 * 40.0);
  EXPECT_DOUBLE_EQ(exposed.own_ms, 12.0);
  const sched::LinkModel::Contention same = price({40, 0, 0}, {10, 2, 0});
  EXPECT_DOUBLE_EQ(same.others_ms, exposed.others_ms);
  EXPECT_DOUBLE_EQ(same.own_ms, exposed.own_ms);
  // a's backward pass hides 30 ms of its 40 ms all-reduce (hidden up to factor 0.75): exposed
  // 10 ms alone, 50 ms at factor 2.
  EXPECT_DOUBLE_EQ(price({40, 0, 0.75}, {10, 2, 0}).others_ms, 2 * (50.0 - 10.0));
  // Hiding 100 ms (factor 2.5), its 80 ms at factor 2 is still hidden: b costs it nothing.
  EXPECT_DOUBLE_EQ(price({40, 0, 2.5}, {10, 2, 0}).others_ms, 0.0);
  // Pipeline transfers are exposed whatever is hidden.
  EXPECT_DOUBLE_EQ(price({40, 5, 2.5}, {10, 2, 0}).others_ms, 2 * 5.0);
  // The newcomer's own: 10 ms of DP hidden up to factor 1.5 is 20 ms at factor 2, 5 exposed,
  // + 2 of PP.
  EXPECT_DOUBLE_EQ(price({40, 0, 2.5}, {10, 2, 1.5}).own_ms, 5.0 + 2.0);
  // The threshold is a factor: the same jobs priced on a model twice as slow cost twice as much,
  // from the same link factor on.
  EXPECT_DOUBLE_EQ(price({80, 0, 0.75}, {20, 4, 1.5}).others_ms,
                   2 * price({40, 0, 0.75}, {10, 2, 1.5}).others_ms);
  EXPECT_DOUBLE_EQ(price({80, 0, 2.5}, {20, 4, 1.5}).own_ms,
                   2 * price({40, 0, 2.5}, {10, 2, 1.5}).own_ms);
}

// A cluster imported from nvidia-smi text has NICs without a rate. They count at the rate the
// cost model assumes (the link layer's default), not as 0 Gb/s: before, such a cluster had no
// uplink capacity and no load, so two jobs on one tapered uplink never slowed each other.
TEST(LinkModelTest, NicsWithoutARateLoadTheLinksAtTheCostModelsRate) {
  topo::Cluster c = TaperedH100();
  for (topo::HardwareProfile& p : c.profiles) {
    for (topo::Nic& nic : p.topology.nics) nic.rate_gbps.reset();
  }
  c.Finalize();
  const double nic_gbps = cost::CostTables::Default().NicRateGBps(c.topology(0).nics[0]) * 8.0;
  ASSERT_GT(nic_gbps, 0);
  sched::LinkModel links(c);
  EXPECT_DOUBLE_EQ(links.Capacity(c.FindDomain("leaf0")), 16 * 8 * nic_gbps / 2.0);
  const auto [a, b] = TwoJobsOnLeaf0AndLeaf1Uplinks();
  const sched::LinkModel::Usage ua = links.UsageOf(a), ub = links.UsageOf(b);
  links.Add(ua);
  links.Add(ub);
  EXPECT_DOUBLE_EQ(links.Factor(ua), 2.0);  // as with the rates given (JobsCrossingOneUplink...)
}

// The fragmentation measure of the report. With a 1-GPU and an 8-GPU job waiting and three free
// GPUs stranded on one node, the earlier rule (free GPUs below the smallest waiting replica)
// gave 0; the expected number of free GPUs a waiting job cannot use is (0 + 3) / 2.
TEST(FragmentationTest, ASmallWaitingJobDoesNotHideStrandedGpus) {
  const topo::Cluster& c = testing::H100Cluster();
  auto st = sched::ClusterState::Create(c);
  ASSERT_TRUE(st.ok());
  std::vector<sched::NodeGpus> parts;
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    parts.push_back({n, n == 0 ? sched::GpuMask::FirstN(5) : sched::GpuMask::FirstN(8)});
  }
  ASSERT_TRUE(st->Allocate(testing::Alloc(1), parts).ok());
  EXPECT_DOUBLE_EQ(ExpectedUnusableGpus(*st, {{1, 1}, {8, 1}}), 1.5);
  EXPECT_DOUBLE_EQ(ExpectedUnusableGpus(*st, {{1, 2}}), 0.0);
  EXPECT_DOUBLE_EQ(ExpectedUnusableGpus(*st, {}), 0.0);
}

TEST(LoadTest, ScalingTheArrivalsSetsTheOfferedLoad) {
  auto t = ParseTrace("submit_s,duration_s,gpus\n0,100,8\n100,100,8\n200,100,8\n", "l.csv",
                      TraceFormat::kCsv);
  ASSERT_TRUE(t.ok());
  // Window [0, 200] s on 16 GPUs: 8 GPUs x 100 s + 8 x 100 s + 8 x 0 s (the last arrival ends
  // the window) = 1600 of 3200 GPU-seconds.
  EXPECT_DOUBLE_EQ(OfferedLoad(*t, 16), 0.5);
  // Offsets x s with 0.5 <= s <= 1: (800 + 800 s) / (3200 s) = 0.6 at s = 0.25 / 0.35.
  auto scale = ScaleToLoad(*t, 16, 0.6);
  ASSERT_TRUE(scale.ok()) << scale.status().ToString();
  EXPECT_NEAR(*scale, 0.25 / 0.35, 1e-6);
  EXPECT_NEAR(static_cast<double>(t->jobs[2].submit_us), 200e6 * 0.25 / 0.35, 1);
  EXPECT_NEAR(OfferedLoad(*t, 16), 0.6, 1e-6);
  EXPECT_THAT(ScaleToLoad(*t, 16, 0),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("load must be in (0, 100], got 0")));
  // Arriving all at once the first two hold 8 + 8/2 GPUs on average: 0.75 is the ceiling.
  auto over = ScaleToLoad(*t, 16, 0.8);
  ASSERT_THAT(over, StatusIs(StatusCode::kInvalidArgument, HasSubstr("cannot be offered")));
  auto one = ParseTrace("submit_s,duration_s,gpus\n0,100,8\n", "o.csv", TraceFormat::kCsv);
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(
      ScaleToLoad(*one, 16, 0.5),
      StatusIs(
          StatusCode::kInvalidArgument,
          HasSubstr(
              "o.csv: the offered load is undefined (fewer than two distinct submission times)")));
}

// A run that outlasts the trace offers only the part inside the arrival window: counted whole
// (8 GPUs x 1e6 s over a 100 s window) it would call the cluster 5000x loaded while half idles.
TEST(LoadTest, ALongRunOffersOnlyTheArrivalWindow) {
  auto t =
      ParseTrace("submit_s,duration_s,gpus\n0,1000000,8\n100,10,1\n", "w.csv", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(OfferedLoad(*t, 16), 0.5);
}

}  // namespace
}  // namespace toposched::sim
