// The node plugins: best fit, least allocated (spread over nodes), node order; and the two that
// place GPU by GPU.
#include "plugins/node_plugins.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>

namespace toposched::sched {

std::vector<int> PickBins(const std::vector<int>& caps, int need) {
  int64_t total = 0;
  int max_cap = 0;
  for (int c : caps) {
    total += c;
    max_cap = std::max(max_cap, c);
  }
  if (total < need) return {};
  std::vector<int> take(caps.size(), 0);
  if (need <= 0) return take;
  std::vector<int> order;  // bins with cap > 0: cap descending, index ascending
  if (max_cap <= 4 * static_cast<int>(caps.size()) + 64) {
    std::vector<int> start(static_cast<size_t>(max_cap) + 2, 0);
    for (int c : caps) {
      if (c > 0) ++start[max_cap - c + 1];
    }
    for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    order.resize(static_cast<size_t>(start.back()));
    for (size_t i = 0; i < caps.size(); ++i) {
      if (caps[i] > 0) order[start[max_cap - caps[i]]++] = static_cast<int>(i);
    }
  } else {
    for (size_t i = 0; i < caps.size(); ++i) {
      if (caps[i] > 0) order.push_back(static_cast<int>(i));
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return caps[a] > caps[b]; });
  }
  int rest = need;
  auto pos = order.begin();
  while (rest > 0) {
    if (pos == order.end()) return {};
    if (caps[*pos] >= rest) {
      auto fits_end =
          std::partition_point(pos, order.end(), [&](int i) { return caps[i] >= rest; });
      const int c = caps[*(fits_end - 1)];
      auto best = std::partition_point(pos, fits_end, [&](int i) { return caps[i] > c; });
      take[*best] = rest;
      break;
    }
    take[*pos] = caps[*pos];
    rest -= caps[*pos];
    ++pos;
  }
  return take;
}

namespace {

// Each bin in `order` as far as it goes.
std::vector<int> TakeInOrder(const std::vector<int>& caps, const std::vector<int>& order,
                             int need) {
  int64_t total = 0;
  for (int c : caps) total += c;
  if (total < need) return {};
  std::vector<int> take(caps.size(), 0);
  int rest = need;
  for (int i : order) {
    if (rest <= 0) break;
    take[i] = std::min(caps[i], rest);
    rest -= take[i];
  }
  return take;
}

std::vector<int> Identity(size_t n) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// "best-fit": PickBins; one node by the search's scores.
class BestFitNodes : public Named<NodePlugin, NodeRule> {
 public:
  explicit BestFitNodes(NodeRule rule = NodeRule::kBestFit, std::string name = "best-fit")
      : Named(rule, std::move(name)) {}
  std::vector<int> Take(const std::vector<int>& caps, int need) const override {
    return PickBins(caps, need);
  }
  bool ScoresOneNode() const override { return true; }
  // The fullest node that holds the job, the first on ties (the search refines this by score).
  int OneNode(const std::vector<int>& free, int need) const override {
    int pick = -1;
    for (int n = 0; n < static_cast<int>(free.size()); ++n) {
      if (free[n] >= need && (pick < 0 || free[n] < free[pick])) pick = n;
    }
    return pick;
  }
};

// "least-allocated": emptiest bins first (ties: lowest index); one node: the emptiest that holds
// the job, the first on ties.
class LeastAllocatedNodes : public Named<NodePlugin, NodeRule> {
 public:
  LeastAllocatedNodes() : Named(NodeRule::kLeastAllocated, "least-allocated") {}
  std::vector<int> Take(const std::vector<int>& caps, int need) const override {
    std::vector<int> order = Identity(caps.size());
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return caps[a] > caps[b]; });
    return TakeInOrder(caps, order, need);
  }
  int OneNode(const std::vector<int>& free, int need) const override {
    int pick = -1, pick_free = -1;
    for (int n = 0; n < static_cast<int>(free.size()); ++n) {
      if (free[n] < need || free[n] <= pick_free) continue;
      pick = n;
      pick_free = free[n];
    }
    return pick;
  }
};

// "in-order": bins in order, each as far as it goes; one node: the first that holds the job.
class InOrderNodes : public Named<NodePlugin, NodeRule> {
 public:
  InOrderNodes() : Named(NodeRule::kInOrder, "in-order") {}
  std::vector<int> Take(const std::vector<int>& caps, int need) const override {
    return TakeInOrder(caps, Identity(caps.size()), need);
  }
  int OneNode(const std::vector<int>& free, int need) const override {
    for (int n = 0; n < static_cast<int>(free.size()); ++n) {
      if (free[n] >= need) return n;
    }
    return -1;
  }
};

// "spread", "random": GPU by GPU (placer/scatter.h). The search never asks them (GangPlacer
// places a job that is one pod by "least-allocated"); were it to, they would answer as best fit.
class ScatterNodes : public BestFitNodes {
 public:
  ScatterNodes(NodeRule rule, std::string name) : BestFitNodes(rule, std::move(name)) {}
  bool scatters() const override { return true; }
};

}  // namespace

const std::vector<const NodePlugin*>& NodePlugins() {
  static const BestFitNodes best_fit;
  static const LeastAllocatedNodes least_allocated;
  static const InOrderNodes in_order;
  static const ScatterNodes spread(NodeRule::kSpread, "spread");
  static const ScatterNodes random(NodeRule::kRandom, "random");
  static const std::vector<const NodePlugin*> all = {&best_fit, &least_allocated, &in_order,
                                                     &spread, &random};
  return all;
}

}  // namespace toposched::sched
