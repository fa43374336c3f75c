// Baseline for node GPU-set selection: the pair-score method of NVIDIA's Kubernetes device
// plugin (go-gpuallocator "best effort" policy), reimplemented here for comparison in tests
// and benchmarks. Scores come from path classes only; it knows nothing of bandwidth or time.
#pragma once

#include <span>
#include <vector>

#include "topo/node_topology.h"

namespace toposched::sched {

// NV#: 100 per link; PIX 50; PXB 40; PHB 30; NODE 20; SYS 10.
int PairScore(const topo::Path& p);
// Sum of PairScore over the pairs of `gpus` (positions).
int SetPairScore(const topo::NodeTopology& t, std::span<const int> gpus);

// The pair-score choice of k GPUs among `free` (positions): enumerate every partition of the
// free GPUs into sets of k (padded with empty slots to a multiple of k, as the plugin does),
// keep the partition with the highest summed set score (first found on ties), and return its
// best-scoring full set (first on ties), ascending. Empty when fewer than k are free.
// Cost: the number of partitions, (m'!)/((k!)^(m'/k) (m'/k)!) for m' padded slots: 105 for 8
// GPUs in pairs, 2,027,025 for 16.
std::vector<int> PairScoreSelect(const topo::NodeTopology& t, std::span<const int> free, int k);

}  // namespace toposched::sched
