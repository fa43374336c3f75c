#include "plugins/stage_pack.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace toposched::sched {
namespace {

// Cost of a prefix, most important first: stages continued onto a node of another group, away
// nodes, (when asked) nodes holding pieces of two stages, nodes used, units left free on them.
constexpr int64_t kCross = int64_t{1} << 50;
constexpr int64_t kAway = int64_t{1} << 40;
constexpr int64_t kShared = int64_t{1} << 30;
constexpr int64_t kUsed = int64_t{1} << 20;

// Whether t ≥ 1 units taken at offset u hold pieces of two stages of s units or more.
bool SplitsStages(int u, int t, int s) { return u / s != (u + t - 1) / s; }

// Nodes of `counts` that hold pieces of two stages or more.
int SharedNodes(const std::vector<int>& counts, int s) {
  int shared = 0, u = 0;
  for (int t : counts) {
    if (t > 0 && SplitsStages(u, t, s)) ++shared;
    u += t;
  }
  return shared;
}
constexpr int64_t kInf = std::numeric_limits<int64_t>::max();

class Packer {
 public:
  // `unit_gpus` > 0: a piece's thickness is its network bandwidth (StagePackByBandwidth), else
  // its units.
  Packer(const std::vector<PackSlot>& slots, int s, int w, size_t groups, int unit_gpus = 0)
      : slots_(slots),
        s_(s),
        w_(w),
        gs_(groups + 1),
        none_(groups),
        layer_((static_cast<size_t>(w) + 1) * gs_),
        cost_(layer_ * (slots.size() + 1)),
        from_(cost_.size()),
        unit_gpus_(unit_gpus) {}

  // A piece of `piece` units (not a whole stage) on slot i, which takes t units in all: in
  // units, or by bandwidth its share of the node's NICs (each of its GPUs' own NIC while the
  // node's units do not outnumber its NICs, else a share in proportion).
  double Thickness(size_t i, int piece, int t) const {
    if (unit_gpus_ <= 0) return piece;
    const PackSlot& x = slots_[i];
    return piece * std::min<double>(unit_gpus_, static_cast<double>(x.nics) / t) * x.nic_gbps;
  }

  // Whether taking t units of slot i at offset u leaves every piece of a stage on it at least m
  // thick: the piece that continues the current stage, any whole stages (always), and the piece
  // that starts the next one.
  bool PiecesHold(size_t i, int u, int t, double m) const {
    const int first = std::min(t, s_ - u % s_);
    if (first < s_ && Thickness(i, first, t) < m) return false;
    const int last = (t - first) % s_;
    return last == 0 || Thickness(i, last, t) >= m;
  }

  // The cheapest counts whose pieces are all ≥ m; false when none exist. `unshared`: nodes
  // holding pieces of two stages count (kShared).
  // `away_first`: away nodes weigh above crossings (kAway and kCross trade places).
  bool Solve(double m, bool unshared = false, bool away_first = false) {
    shared_cost_ = unshared ? kShared : 0;
    cross_cost_ = away_first ? kAway : kCross;
    away_cost_ = away_first ? kCross : kAway;
    std::fill(cost_.begin(), cost_.end(), kInf);
    cost_[At(0, 0, none_)] = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      for (int u = 0; u <= w_; ++u) {
        for (size_t g = 0; g < gs_; ++g) Extend(i, u, g, m);
      }
    }
    return Best() != kInf;
  }
  int64_t Best() const { return cost_[At(slots_.size(), w_, none_)]; }
  bool Crosses() const { return Best() >= cross_cost_ && cross_cost_ == kCross; }

  std::vector<int> Counts() const {
    std::vector<int> counts(slots_.size());
    int u = w_;
    size_t g = none_;
    for (size_t i = slots_.size(); i > 0; --i) {
      const auto [t, prev] = from_[At(i, u, g)];
      counts[i - 1] = t;
      u -= t;
      g = prev;
    }
    return counts;
  }

 private:
  size_t At(size_t i, int u, size_t g) const {
    return i * layer_ + static_cast<size_t>(u) * gs_ + g;
  }

  void Extend(size_t i, int u, size_t g, double m) {
    const int64_t c = cost_[At(i, u, g)];
    if (c == kInf) return;
    auto relax = [&](int t, size_t g2, int64_t add) {
      const size_t to = At(i + 1, u + t, g2);
      if (c + add < cost_[to]) {
        cost_[to] = c + add;
        from_[to] = {t, g};
      }
    };
    relax(0, g, 0);
    const PackSlot& nd = slots_[i];
    const auto group = static_cast<size_t>(nd.group);
    const int from = unit_gpus_ > 0 ? 1 : std::max(1, static_cast<int>(std::ceil(m)));
    for (int t = from; t <= std::min(nd.cap, w_ - u); ++t) {
      if (!PiecesHold(i, u, t, m)) continue;
      const bool cross = g != none_ && g != group;
      const size_t g2 = (u + t) % s_ == 0 ? none_ : group;
      relax(t, g2,
            (cross ? cross_cost_ : 0) + kUsed + (nd.away ? away_cost_ : 0) +
                (SplitsStages(u, t, s_) ? shared_cost_ : 0) + (nd.cap - t));
    }
  }

  const std::vector<PackSlot>& slots_;
  const int s_, w_;
  const size_t gs_, none_, layer_;
  std::vector<int64_t> cost_;
  std::vector<std::pair<int, size_t>> from_;  // (units taken, group before)
  const int unit_gpus_;
  int64_t shared_cost_ = 0, cross_cost_ = kCross, away_cost_ = kAway;
};

// The largest m in [1, hi] for which ok(m) holds, ok falling as m grows; 0 when none.
template <typename Ok>
int LargestHolding(int hi, Ok ok) {
  int lo = 0;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (ok(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Whether the packer may run on these slots (see StagePackCounts); *groups and *max_cap filled.
bool PackAllowed(const std::vector<PackSlot>& slots, int stage_units, int stages, int64_t max_work,
                 int* groups, int* max_cap) {
  // Over kMaxWork the cost's weights would stop being lexicographic: units w ≤ Σ cap ≤ slots ·
  // largest cap, so w² < work ≤ 2^20 and crossings, away nodes and nodes used (each ≤ w) stay
  // under 2^10, units left free (≤ slots · largest cap) under 2^20.
  constexpr int64_t kMaxWork = int64_t{1} << 20;
  if (stages < 1 || stage_units < 1 || slots.size() < 2 || max_work > kMaxWork) return false;
  *max_cap = 0;
  *groups = 0;
  int64_t room = 0;
  for (const PackSlot& x : slots) {
    if (x.group < 0 || x.cap < 0) return false;
    *max_cap = std::max(*max_cap, x.cap);
    *groups = std::max(*groups, x.group + 1);
    room += x.cap;
  }
  const int64_t units = int64_t{stage_units} * stages;
  if (room < units) return false;  // nothing fits, whatever m
  const double work = static_cast<double>(slots.size()) * static_cast<double>(units + 1) *
                      (*groups + 1.0) * *max_cap;
  return *max_cap >= 1 && work <= static_cast<double>(max_work);
}

}  // namespace

std::vector<int> StagePackFewestAway(const std::vector<PackSlot>& slots, int stage_units,
                                     int stages, int64_t max_work) {
  int groups = 0, max_cap = 0;
  if (!PackAllowed(slots, stage_units, stages, max_work, &groups, &max_cap)) return {};
  Packer p(slots, stage_units, stage_units * stages, static_cast<size_t>(groups));
  if (!p.Solve(1, false, true)) return {};
  return p.Counts();
}

std::vector<int> StagePackByBandwidth(const std::vector<PackSlot>& slots, int stage_units,
                                      int stages, int unit_gpus, int64_t max_work) {
  int groups = 0, max_cap = 0;
  if (unit_gpus < 1 || !PackAllowed(slots, stage_units, stages, max_work, &groups, &max_cap)) {
    return {};
  }
  for (const PackSlot& x : slots) {
    if (x.cap > 0 && (x.nics < 1 || !(x.nic_gbps > 0) || !std::isfinite(x.nic_gbps))) return {};
  }
  Packer p(slots, stage_units, stage_units * stages, static_cast<size_t>(groups), unit_gpus);
  // Every thickness a piece can have, ascending; feasibility falls as the threshold grows.
  std::vector<double> levels;
  for (size_t i = 0; i < slots.size(); ++i) {
    for (int t = 1; t <= slots[i].cap; ++t) {
      for (int piece = 1; piece <= std::min(t, stage_units - 1); ++piece) {
        levels.push_back(p.Thickness(i, piece, t));
      }
    }
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  const int k = LargestHolding(static_cast<int>(levels.size()),
                               [&](int x) { return p.Solve(levels[x - 1]); });
  if (!p.Solve(k > 0 ? levels[k - 1] : 0)) return {};
  return p.Counts();
}

std::vector<std::vector<int>> StagePackCounts(const std::vector<PackSlot>& slots, int stage_units,
                                              int stages, int64_t max_work) {
  std::vector<std::vector<int>> out;
  int groups = 0, max_cap = 0;
  if (!PackAllowed(slots, stage_units, stages, max_work, &groups, &max_cap)) return out;
  Packer p(slots, stage_units, stage_units * stages, static_cast<size_t>(groups));
  const int hi = std::min(stage_units, max_cap);
  // Both tests fall as m grows: pieces ≥ m allow pieces ≥ m - 1, with or without a crossing.
  const int m = LargestHolding(hi, [&](int x) { return p.Solve(x); });
  if (m == 0) return out;
  p.Solve(m);
  out.push_back(p.Counts());
  const bool crosses = p.Crosses();
  if (SharedNodes(out[0], stage_units) > 0) {
    // The same m with as few nodes split between stages as its crossings and away nodes allow:
    // such a node carries two stages' DP traffic through its NICs at once.
    p.Solve(m, true);
    std::vector<int> unshared = p.Counts();
    if (SharedNodes(unshared, stage_units) < SharedNodes(out[0], stage_units)) {
      out.push_back(std::move(unshared));
    }
  }
  if (!crosses) return out;
  const int flat = LargestHolding(m - 1, [&](int x) { return p.Solve(x) && !p.Crosses(); });
  if (flat == 0) return out;
  p.Solve(flat);
  out.push_back(p.Counts());
  return out;
}

}  // namespace toposched::sched
