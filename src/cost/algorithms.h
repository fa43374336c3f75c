// Bandwidth models of NCCL's collective algorithms, one function per collective × algorithm, as
// pure functions of the rates the cost model has already derived (GB/s after efficiency). They
// hold the algorithm's data movement and nothing else: no topology, no hop naming, no latency.
// CostModel::Evaluate (cost_model.cc) feeds them and adds the alpha terms.
#pragma once

#include <vector>

namespace toposched::cost {

// NCCL's double binary tree over `islands` positions: two balanced binary trees, the second the
// mirror of the first, each carrying half the message. parents[t][i] is island i's parent in
// tree t (-1: root). Both trees have depth ceil(log2(islands + 1)).
struct DoubleBinaryTree {
  std::vector<int> parents[2];
  int depth = 0;
};
DoubleBinaryTree MakeDoubleBinaryTree(int islands);

// Multiples of the message each island sends (and receives) over its network per direction in
// an AllReduce over the double binary tree: every tree edge carries half the message up in the
// reduce and down in the broadcast, so an island carries half of its edge count over both trees.
// Two islands: 1 each (every byte crosses once, not 2(n-1)/n times as in the ring); three or
// more: at most 2 (an inner node of one tree is a leaf of the other).
std::vector<double> TreeNetTraffic(const DoubleBinaryTree& tree);

// Ring AllReduce: every rank sends 2(n-1)/n of the message over its slowest ring edge, so the
// algorithm bandwidth is that edge's rate × n / (2(n-1)). 0 for n < 2.
double RingAllReduceAlgBwGbps(double edge_gbps, int ranks);

// Tree AllReduce inside one island: a chain through its `gpus` GPUs. Each inner GPU sends to
// its parent (reduce) and its child (broadcast) for both trees, so it gets half the ring
// capacity; a chain of two moves each half once per direction and gets the full capacity.
// Infinite for one GPU (no chain).
double TreeChainAlgBwGbps(int gpus, double ring_gbps);

// Tree AllReduce across islands: an island's network rate over its traffic (TreeNetTraffic).
double TreeNetAlgBwGbps(double net_gbps, double traffic);

// NVLS AllReduce in one switched NVLink fabric of `gpus` GPUs: the switch reduces and multicasts,
// and the measured bus bandwidth (raw port × nvls_busbw_factor) converts to algorithm bandwidth
// with the AllReduce bus factor 2(g-1)/g. 0 for g < 2.
double NvlsAllReduceAlgBwGbps(double nvls_busbw_gbps, int gpus);

// NVLS-tree AllReduce: NVLS reduce-scatter inside each island, the double binary tree across
// islands on the reduced data, NVLS multicast back. Inside, the island moves what NVLS alone
// moves, at `nvls_tree_efficiency` of NVLS alone (the hand-off between the switch's reduction
// and the network proxy); across, every byte crosses the network as in the tree (not the
// ring's 2(n-1)/n). The slower of the two binds.
double NvlsTreeAllReduceAlgBwGbps(double nvls_busbw_gbps, int gpus, double nvls_tree_efficiency,
                                  double net_gbps, double traffic);

}  // namespace toposched::cost
