#include "cost/algorithms.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/numeric.h"

namespace toposched::cost {

namespace {

void BuildBalanced(std::vector<int>& parent, int lo, int hi, int up) {
  if (lo >= hi) return;
  const int mid = (lo + hi) / 2;
  parent[mid] = up;
  BuildBalanced(parent, lo, mid, mid);
  BuildBalanced(parent, mid + 1, hi, mid);
}

}  // namespace

DoubleBinaryTree MakeDoubleBinaryTree(int islands) {
  DoubleBinaryTree t;
  if (islands < 1) return t;
  t.parents[0].assign(islands, -1);
  BuildBalanced(t.parents[0], 0, islands, -1);
  // The mirror: position p of the first tree is island islands-1-p, so the first tree's inner
  // nodes are (mostly) the second's leaves and no island is inner in both.
  t.parents[1].assign(islands, -1);
  for (int pos = 0; pos < islands; ++pos) {
    const int up = t.parents[0][pos];
    t.parents[1][islands - 1 - pos] = up < 0 ? -1 : islands - 1 - up;
  }
  t.depth = static_cast<int>(std::ceil(std::log2(islands + 1.0)));
  return t;
}

std::vector<double> TreeNetTraffic(const DoubleBinaryTree& tree) {
  const int n = static_cast<int>(tree.parents[0].size());
  std::vector<double> traffic(n, 0.0);
  for (const std::vector<int>& parent : tree.parents) {
    for (int i = 0; i < n; ++i) {
      if (parent[i] < 0) continue;
      traffic[i] += 0.5;
      traffic[parent[i]] += 0.5;
    }
  }
  return traffic;
}

double RingAllReduceAlgBwGbps(double edge_gbps, int ranks) {
  if (ranks < 2) return 0;
  return edge_gbps * ranks / (2.0 * (ranks - 1));
}

double TreeChainAlgBwGbps(int gpus, double ring_gbps) {
  if (gpus < 2) return kInf;
  return gpus == 2 ? ring_gbps : ring_gbps / 2;
}

double TreeNetAlgBwGbps(double net_gbps, double traffic) {
  return traffic > 0 ? net_gbps / traffic : kInf;
}

double NvlsAllReduceAlgBwGbps(double nvls_busbw_gbps, int gpus) {
  if (gpus < 2) return 0;
  return nvls_busbw_gbps * gpus / (2.0 * (gpus - 1));
}

double NvlsTreeAllReduceAlgBwGbps(double nvls_busbw_gbps, int gpus, double nvls_tree_efficiency,
                                  double net_gbps, double traffic) {
  const double inside = NvlsAllReduceAlgBwGbps(nvls_busbw_gbps, gpus) * nvls_tree_efficiency;
  return std::min(inside, TreeNetAlgBwGbps(net_gbps, traffic));
}

}  // namespace toposched::cost
