// Rings through a set of GPUs of one node: the order NCCL-style ring collectives run in, and
// the order ranks are numbered in. The best ring maximises the slowest edge (bottleneck
// bandwidth), then the sum of edge bandwidths. Exact for sets of up to 16 GPUs (Held-Karp over
// bitmasks), heuristic above. Knows nothing of jobs, requests or time.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "topo/hardware.h"
#include "topo/node_topology.h"

namespace toposched::sched {

// GPU-to-GPU bottleneck bandwidth (GB/s, one direction) for every pair of GPU positions, from
// topo::PairBandwidthGbps. Immutable after construction; share across threads.
class PairMatrix {
 public:
  PairMatrix() = default;
  explicit PairMatrix(const topo::NodeTopology& t,
                      const topo::HardwareTable& table = topo::HardwareTable::Default());
  int n() const { return n_; }
  double gbps(int a, int b) const { return bw_[static_cast<size_t>(a) * n_ + b]; }
  // True when every pair of distinct GPUs has the same bandwidth (an NVSwitch fabric).
  bool uniform() const { return uniform_; }

 private:
  int n_ = 0;
  bool uniform_ = true;
  std::vector<double> bw_;
};

struct Ring {
  // GPU positions. BestRing and SubsetRings start at the lowest position of the set and put
  // the smaller of its two ring neighbours second.
  std::vector<int> order;
  double bottleneck_gbps = 0;  // slowest edge; +inf for one GPU
  double total_gbps = 0;       // sum of the edges (a 2-GPU ring counts its one pair twice)
};

// The best rings of every subset of up to 16 GPU positions, built at once: for each distinct
// bandwidth level (best first) a Held-Karp pass over paths that start at a subset's lowest
// member and use only edges at or above the level; a subset takes its ring from the first
// level that closes a cycle. Cost O(L · 2^m · m²) time (L = distinct pair bandwidths, m =
// positions.size() ≤ 16), O(2^m · m) memory: about 1 MB of rings for m = 16.
// Among rings with the same (bottleneck, total) the one found first is kept (deterministic).
// Immutable after construction; thread-safe to read.
class SubsetRings {
 public:
  static constexpr int kMaxGpus = 16;

  // `positions`: the node GPU positions covered; local bit i stands for positions[i].
  SubsetRings(const PairMatrix& w, std::vector<int> positions);

  int size() const { return m_; }
  const std::vector<int>& positions() const { return positions_; }
  // Local mask → ring in node positions / its bottleneck. `local` must be non-zero.
  void RingOf(uint32_t local, std::vector<int>* out) const;
  double bottleneck_gbps(uint32_t local) const { return bottleneck_[local]; }
  // Ring as local indices (popcount(local) entries).
  std::span<const uint8_t> local_ring(uint32_t local) const {
    return {&order_[static_cast<size_t>(local) * m_], static_cast<size_t>(std::popcount(local))};
  }

 private:
  int m_ = 0;
  std::vector<int> positions_;
  std::vector<uint8_t> order_;     // m_ bytes per subset
  std::vector<float> bottleneck_;  // per subset
};

// Best ring through `gpus` (any order, no duplicates). Exact for up to `exact_max` (≤ 16) GPUs
// (O(L · 2^k · k²)), and for any size on a uniform fabric; above, greedy nearest-best-neighbour
// plus at most 4 2-opt passes, O(k³) each.
Ring BestRing(const PairMatrix& w, std::span<const int> gpus,
              int exact_max = SubsetRings::kMaxGpus);
// Cheap ring for scoring partial sets: greedy only, O(k²). Never better than BestRing.
Ring GreedyRing(const PairMatrix& w, std::span<const int> gpus);
// Bottleneck and total of a given ring order.
Ring ScoreRing(const PairMatrix& w, std::vector<int> order);

}  // namespace toposched::sched
