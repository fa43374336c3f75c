#include "select/ring.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/numeric.h"

namespace toposched::sched {

namespace {

// (bottleneck, total) compared lexicographically, bigger is better.
bool Better(double b1, double t1, double b2, double t2) {
  if (b1 != b2) return b1 > b2;
  return t1 > t2 + 1e-9 * std::max(1.0, std::abs(t2));
}

}  // namespace

PairMatrix::PairMatrix(const topo::NodeTopology& t, const topo::HardwareTable& table)
    : n_(static_cast<int>(t.gpus.size())), bw_(static_cast<size_t>(n_) * n_, 0.0) {
  double first = -1;
  for (int a = 0; a < n_; ++a) {
    for (int b = a + 1; b < n_; ++b) {
      double g = topo::PairBandwidthGbps(t, t.gpu_dev(a), t.gpu_dev(b), table);
      bw_[static_cast<size_t>(a) * n_ + b] = g;
      bw_[static_cast<size_t>(b) * n_ + a] = g;
      if (first < 0) first = g;
      if (g != first) uniform_ = false;
    }
  }
}

SubsetRings::SubsetRings(const PairMatrix& w, std::vector<int> positions)
    : m_(static_cast<int>(positions.size())), positions_(std::move(positions)) {
  const int m = m_;
  const uint32_t full = m == 0 ? 0 : (m >= 32 ? ~0u : (1u << m) - 1);
  const size_t subsets = size_t{1} << m;
  order_.assign(subsets * m, 0);
  bottleneck_.assign(subsets, -1.0f);
  if (m == 0) return;
  std::vector<float> bw(static_cast<size_t>(m) * m, 0.0f);
  std::vector<float> levels;
  for (int a = 0; a < m; ++a) {
    for (int b = 0; b < m; ++b) {
      if (a == b) continue;
      bw[a * m + b] = static_cast<float>(w.gbps(positions_[a], positions_[b]));
      if (a < b) levels.push_back(bw[a * m + b]);
    }
  }
  std::sort(levels.begin(), levels.end(), std::greater<>());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());

  size_t unassigned = 0;
  for (uint32_t s = 1; s <= full; ++s) {
    if (std::popcount(s) == 1) {
      order_[static_cast<size_t>(s) * m] = static_cast<uint8_t>(std::countr_zero(s));
      bottleneck_[s] = std::numeric_limits<float>::infinity();
    } else {
      ++unassigned;
    }
    if (s == full) break;
  }

  // dp[s * m + e]: best total of a path from lowest(s) to e covering s; < 0 = none.
  std::vector<float> dp(subsets * m);
  std::vector<uint8_t> parent(subsets * m);
  std::vector<uint32_t> adj(m);
  for (float level : levels) {
    if (unassigned == 0) break;
    for (int a = 0; a < m; ++a) {
      adj[a] = 0;
      for (int b = 0; b < m; ++b) {
        if (a != b && bw[a * m + b] >= level) adj[a] |= 1u << b;
      }
    }
    std::fill(dp.begin(), dp.end(), -1.0f);
    for (int a = 0; a < m; ++a) dp[(size_t{1} << a) * m + a] = 0;
    for (uint32_t s = 1;; ++s) {
      const int start = std::countr_zero(s);
      const uint32_t above = start + 1 >= 32 ? 0 : ~((1u << (start + 1)) - 1);
      const float* row = &dp[static_cast<size_t>(s) * m];
      // Close the cycle first: every path into s is final once s is reached in mask order.
      if (bottleneck_[s] < 0 && std::popcount(s) >= 2) {
        float best = -1;
        int best_end = -1;
        for (uint32_t ends = s & ~(1u << start) & adj[start]; ends; ends &= ends - 1) {
          int e = std::countr_zero(ends);
          if (row[e] < 0) continue;
          float c = row[e] + bw[e * m + start];
          if (c > best) {
            best = c;
            best_end = e;
          }
        }
        if (best_end >= 0) {
          uint8_t* out = &order_[static_cast<size_t>(s) * m];
          int len = std::popcount(s);
          uint32_t cur_mask = s;
          int cur = best_end;
          float bottleneck = bw[best_end * m + start];
          for (int i = len - 1; i > 0; --i) {
            out[i] = static_cast<uint8_t>(cur);
            int p = parent[static_cast<size_t>(cur_mask) * m + cur];
            bottleneck = std::min(bottleneck, bw[p * m + cur]);
            cur_mask &= ~(1u << cur);
            cur = p;
          }
          out[0] = static_cast<uint8_t>(start);
          // Canonical direction: the smaller neighbour of the start comes second.
          if (len >= 3 && out[1] > out[len - 1]) std::reverse(out + 1, out + len);
          bottleneck_[s] = bottleneck;
          --unassigned;
        }
      }
      for (uint32_t ends = s; ends; ends &= ends - 1) {
        const int e = std::countr_zero(ends);
        const float v = row[e];
        if (v < 0) continue;
        for (uint32_t nx = adj[e] & ~s & above; nx; nx &= nx - 1) {
          const int u = std::countr_zero(nx);
          const uint32_t ns = s | (1u << u);
          float& slot = dp[static_cast<size_t>(ns) * m + u];
          const float nv = v + bw[e * m + u];
          if (nv > slot) {
            slot = nv;
            parent[static_cast<size_t>(ns) * m + u] = static_cast<uint8_t>(e);
          }
        }
      }
      if (s == full) break;
    }
  }
  // Pairs with zero bandwidth everywhere (should not happen on a real node) still get a ring.
  for (uint32_t s = 1;; ++s) {
    if (bottleneck_[s] < 0) {
      int i = 0;
      for (uint32_t b = s; b; b &= b - 1) {
        order_[static_cast<size_t>(s) * m + i++] = static_cast<uint8_t>(std::countr_zero(b));
      }
      bottleneck_[s] = 0;
    }
    if (s == full) break;
  }
}

void SubsetRings::RingOf(uint32_t local, std::vector<int>* out) const {
  out->clear();
  for (uint8_t i : local_ring(local)) out->push_back(positions_[i]);
}

Ring ScoreRing(const PairMatrix& w, std::vector<int> order) {
  Ring r;
  r.order = std::move(order);
  const size_t k = r.order.size();
  if (k <= 1) {
    r.bottleneck_gbps = kInf;
    return r;
  }
  r.bottleneck_gbps = kInf;
  for (size_t i = 0; i < k; ++i) {
    double g = w.gbps(r.order[i], r.order[(i + 1) % k]);
    r.bottleneck_gbps = std::min(r.bottleneck_gbps, g);
    r.total_gbps += g;
  }
  return r;
}

Ring GreedyRing(const PairMatrix& w, std::span<const int> gpus) {
  std::vector<int> left(gpus.begin(), gpus.end());
  std::sort(left.begin(), left.end());
  std::vector<int> order;
  order.reserve(left.size());
  if (!left.empty()) {
    order.push_back(left.front());
    left.erase(left.begin());
  }
  while (!left.empty()) {
    int cur = order.back();
    size_t best = 0;
    for (size_t i = 1; i < left.size(); ++i) {
      if (w.gbps(cur, left[i]) > w.gbps(cur, left[best])) best = i;
    }
    order.push_back(left[best]);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return ScoreRing(w, std::move(order));
}

namespace {

// Start at the lowest member, the smaller of its two neighbours second.
Ring Canonical(Ring r) {
  auto& o = r.order;
  if (o.size() >= 3) {
    std::rotate(o.begin(), std::min_element(o.begin(), o.end()), o.end());
    if (o[1] > o.back()) std::reverse(o.begin() + 1, o.end());
  }
  return r;
}

}  // namespace

Ring BestRing(const PairMatrix& w, std::span<const int> gpus, int exact_max) {
  std::vector<int> sorted(gpus.begin(), gpus.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.size() <= 3 || w.uniform()) return ScoreRing(w, std::move(sorted));
  if (sorted.size() <= static_cast<size_t>(std::min(exact_max, SubsetRings::kMaxGpus))) {
    SubsetRings rings(w, sorted);
    std::vector<int> order;
    rings.RingOf((1u << sorted.size()) - 1, &order);
    return Canonical(ScoreRing(w, std::move(order)));
  }
  Ring r = GreedyRing(w, sorted);
  // 2-opt: reversing order[i..j] swaps edges (i-1,i),(j,j+1) for (i-1,j),(i,j+1).
  const int k = static_cast<int>(r.order.size());
  for (int pass = 0; pass < 4; ++pass) {
    bool improved = false;
    for (int i = 1; i < k - 1; ++i) {
      for (int j = i + 1; j < k; ++j) {
        std::vector<int> cand = r.order;
        std::reverse(cand.begin() + i, cand.begin() + j + 1);
        Ring c = ScoreRing(w, std::move(cand));
        if (Better(c.bottleneck_gbps, c.total_gbps, r.bottleneck_gbps, r.total_gbps)) {
          r = std::move(c);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return Canonical(std::move(r));
}

}  // namespace toposched::sched
