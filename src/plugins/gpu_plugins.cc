// The GPU plugins: the cost model's exact choice (priced by the search), NVIDIA's device plugin's
// pair score, and the first free GPUs.
#include "plugins/gpu_plugins.h"

#include "select/pair_score.h"

namespace toposched::sched {

namespace {

// "cost-model": the search asks the node selector; Choose is never asked and answers nothing.
class CostModelGpus : public Named<GpuPlugin, GpuRule> {
 public:
  CostModelGpus() : Named(GpuRule::kCostModel, "cost-model") {}
  bool priced() const override { return true; }
  std::vector<int> Choose(const topo::NodeTopology&, std::span<const int>, int) const override {
    return {};
  }
};

// "pair-score": the device plugin's choice (select/pair_score.h); it enumerates partitions, up
// to milliseconds a call on 8 GPUs, so the search caches it.
class PairScoreGpus : public Named<GpuPlugin, GpuRule> {
 public:
  PairScoreGpus() : Named(GpuRule::kPairScore, "pair-score") {}
  bool costly() const override { return true; }
  std::vector<int> Choose(const topo::NodeTopology& node, std::span<const int> free,
                          int k) const override {
    if (static_cast<int>(free.size()) < k) return {};
    if (static_cast<int>(free.size()) == k) return {free.begin(), free.end()};
    return PairScoreSelect(node, free, k);
  }
};

// "first-free": the lowest-numbered free GPUs.
class FirstFreeGpus : public Named<GpuPlugin, GpuRule> {
 public:
  FirstFreeGpus() : Named(GpuRule::kFirstFree, "first-free") {}
  std::vector<int> Choose(const topo::NodeTopology&, std::span<const int> free,
                          int k) const override {
    if (static_cast<int>(free.size()) < k || k < 0) return {};
    return {free.begin(), free.begin() + k};
  }
};

}  // namespace

const std::vector<const GpuPlugin*>& GpuPlugins() {
  static const CostModelGpus cost_model;
  static const PairScoreGpus pair_score;
  static const FirstFreeGpus first_free;
  static const std::vector<const GpuPlugin*> all = {&cost_model, &pair_score, &first_free};
  return all;
}

}  // namespace toposched::sched
