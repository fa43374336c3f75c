// The cost model's price of one GPU set, with names (Evaluate: hops, bottleneck, rank order) and
// without (TimeMs: the time alone, what the placer's score asks for), on the evaluation cluster
// of docs/evaluation.md (data/clusters/eval-h100-3tier-2to1.yaml: 256 DGX H100-class nodes,
// leaves of 16, spines of 4 leaves, both tapered 2:1, rails of 8 up to the spine). The sets are
// the AllReduce and Send/Recv groups the score prices for the LLM mix's jobs.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_clusters.h"
#include "cost/cost_model.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::bench {
namespace {

const cost::CostModel& EvalModel() {
  static const cost::CostModel* model = [] {
    auto* cluster = new topo::Cluster(OrDie(topo::io::ReadClusterYamlFile(
        std::string(TS_SOURCE_DIR) + "/data/clusters/eval-h100-3tier-2to1.yaml")));
    return new cost::CostModel(*cluster);
  }();
  return *model;
}

struct Case {
  const char* name;
  cost::Collective collective;
  std::vector<cost::GpuRef> gpus;
};

// Node n is in leaf n / 16 and spine n / 64.
std::vector<Case> Cases() {
  std::vector<Case> out;
  std::vector<cost::GpuRef> node8;
  for (int g = 0; g < 8; ++g) node8.push_back({0, g});
  out.push_back({"allreduce 8 GPUs of one node", cost::Collective::kAllReduce, node8});
  std::vector<cost::GpuRef> tp4;
  for (int n = 0; n < 4; ++n)
    for (int g = 0; g < 4; ++g) tp4.push_back({n, g});
  out.push_back({"allreduce 4 nodes x 4 GPUs, one leaf", cost::Collective::kAllReduce, tp4});
  std::vector<cost::GpuRef> dp16;
  for (int n = 0; n < 8; ++n) dp16.push_back({n, 0});
  for (int n = 64; n < 72; ++n) dp16.push_back({n, 0});
  out.push_back({"allreduce GPU 0 of 16 nodes, two spines", cost::Collective::kAllReduce, dp16});
  std::vector<cost::GpuRef> dp128;
  for (int n = 0; n < 16; ++n)
    for (int g = 0; g < 8; ++g) dp128.push_back({n * 4, g});
  out.push_back({"allreduce 16 nodes x 8 GPUs, four leaves", cost::Collective::kAllReduce, dp128});
  out.push_back({"sendrecv 2 nodes, two leaves", cost::Collective::kSendRecv, {{0, 3}, {16, 3}}});
  return out;
}

template <bool kDetail>
void BM_Price(benchmark::State& state) {
  const cost::CostModel& m = EvalModel();
  const Case c = Cases()[state.range(0)];
  state.SetLabel(c.name);
  constexpr double kBytes = 1 << 30;
  for (auto _ : state) {
    if constexpr (kDetail) {
      auto e = m.Evaluate(c.collective, c.gpus, kBytes);
      benchmark::DoNotOptimize(e);
    } else {
      auto t = m.TimeMs(c.collective, c.gpus, kBytes);
      benchmark::DoNotOptimize(t);
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Price<true>)->Name("Evaluate")->DenseRange(0, 4);
BENCHMARK(BM_Price<false>)->Name("TimeMs")->DenseRange(0, 4);

}  // namespace
}  // namespace toposched::bench

BENCHMARK_MAIN();
