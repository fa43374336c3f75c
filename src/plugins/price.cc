// The price of a placement: its groups priced with the cost model (plugins/price.h).
#include "plugins/price.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

#include "placement/group_shape.h"
#include "plugins/rail_ranks.h"

namespace toposched::sched {

namespace {

// Prices groups of ranks of one placement with the cost model, through `cache` when given.
class GroupPricer {
 public:
  GroupPricer(const cost::CostModel& cost, const Placement& p, GroupTimes* cache)
      : cost_(cost), p_(p), cache_(cache) {}

  // `ms` becomes the larger of itself and the group's time (0 for fewer than 2 ranks or no
  // bytes).
  Status AtLeast(cost::Collective coll, const std::vector<int>& ranks, int64_t bytes,
                 double* ms) const {
    if (ranks.size() < 2 || bytes <= 0) return OkStatus();
    std::vector<cost::GpuRef> refs;
    refs.reserve(ranks.size());
    for (int r : ranks) refs.push_back(cost::GpuRef{p_.ranks[r].node, p_.ranks[r].gpu});
    ASSIGN_OR_RETURN(double t, TimeOf(coll, refs, bytes));
    *ms = std::max(*ms, t);
    return OkStatus();
  }

 private:
  // The group's TimeMs: from the cache when it holds the group, else priced (and kept there).
  StatusOr<double> TimeOf(cost::Collective coll, const std::vector<cost::GpuRef>& refs,
                          int64_t bytes) const {
    if (cache_ == nullptr) return cost_.TimeMs(coll, refs, static_cast<double>(bytes));
    const int32_t c = static_cast<int32_t>(coll);
    std::string key(reinterpret_cast<const char*>(&c), sizeof c);
    key.append(reinterpret_cast<const char*>(&bytes), sizeof bytes);
    for (const cost::GpuRef& g : refs) {
      const int32_t pair[2] = {g.node, g.gpu};
      key.append(reinterpret_cast<const char*>(pair), sizeof pair);
    }
    {
      std::lock_guard<std::mutex> lock(cache_->mu);
      auto it = cache_->times.find(key);
      if (it != cache_->times.end()) return it->second;
    }
    ASSIGN_OR_RETURN(double t, cost_.TimeMs(coll, refs, static_cast<double>(bytes)));
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (cache_->times.size() >= GroupTimes::kMaxGroups ||
        cache_->key_bytes + key.size() > GroupTimes::kMaxKeyBytes) {
      cache_->times.clear();
      cache_->key_bytes = 0;
    }
    const size_t size = key.size();
    if (cache_->times.emplace(std::move(key), t).second) cache_->key_bytes += size;
    return t;
  }

 private:
  const cost::CostModel& cost_;
  const Placement& p_;
  GroupTimes* cache_;
};

// The DP term: every stage's DP group through TP index 0, the DP group whose shape is worst,
// and on a rail-optimised network the group with the most DP neighbours on different rails.
Status DpMs(const cost::CostModel& cost, const job::Layout& l, const GroupPricer& g, Placement& p) {
  p.dp_ms = 0;
  if (l.dp < 2 || l.dp_bytes <= 0) return OkStatus();
  const auto all_reduce = cost::Collective::kAllReduce;
  for (int s = 0; s < l.pp; ++s) {
    RETURN_IF_ERROR(g.AtLeast(all_reduce, l.DpGroup(l.RankOf(0, 0, s)), l.dp_bytes, &p.dp_ms));
  }
  if (const int w = WorstDpGroupRank(cost.cluster(), l, p.ranks); w > 0 && w % l.tp != 0) {
    RETURN_IF_ERROR(g.AtLeast(all_reduce, l.DpGroup(w), l.dp_bytes, &p.dp_ms));
  }
  if (!cost.cluster().RailsPriced() || l.tp * l.pp < 2) return OkStatus();
  const RailPairs rp = CountRailPairs(cost, l, p.ranks);
  if (rp.crossed == 0) return OkStatus();
  const int first = rp.crossed_by_class[0];
  const auto it = std::max_element(rp.crossed_by_class.begin(), rp.crossed_by_class.end());
  if (*it <= first) return OkStatus();
  const int c = static_cast<int>(it - rp.crossed_by_class.begin());
  return g.AtLeast(all_reduce, l.DpGroup(l.RankOf(c % l.tp, 0, c / l.tp)), l.dp_bytes, &p.dp_ms);
}

// The PP term: every stage's first rank sending to the next stage's, and the pair of
// neighbouring stages whose ranks are farthest apart in the network.
Status PpMs(const cost::CostModel& cost, const job::Layout& l, const GroupPricer& g, Placement& p) {
  p.pp_ms = 0;
  if (l.pp < 2 || l.pp_bytes <= 0) return OkStatus();
  const int stage = l.tp * l.dp;
  const auto send = cost::Collective::kSendRecv;
  for (int s = 0; s + 1 < l.pp; ++s) {
    RETURN_IF_ERROR(g.AtLeast(send, {s * stage, (s + 1) * stage}, l.pp_bytes, &p.pp_ms));
  }
  if (const int w = WorstPpPairRank(cost.cluster(), l, p.ranks); w > 0 && w % stage != 0) {
    RETURN_IF_ERROR(g.AtLeast(send, {w, w + stage}, l.pp_bytes, &p.pp_ms));
  }
  return OkStatus();
}

Status ScoreWith(const cost::CostModel& cost, const job::Layout& l, Placement& p,
                 GroupTimes* cache) {
  if (static_cast<int>(p.ranks.size()) != l.WorldSize()) {
    return InvalidArgumentError("placement has " + std::to_string(p.ranks.size()) +
                                " ranks, layout " + std::to_string(l.WorldSize()));
  }
  // Every group of a kind communicates at once and the step waits for the slowest. Priced:
  // each kind's groups through rank 0's TP index in every stage, and the group of each kind
  // whose shape is worst (placement/group_shape.h).
  const GroupPricer g(cost, p, cache);
  RETURN_IF_ERROR(DpMs(cost, l, g, p));
  p.tp_ms = 0;
  if (l.tp > 1 && l.tp_bytes > 0) {
    RETURN_IF_ERROR(g.AtLeast(cost::Collective::kAllReduce, l.TpGroup(0), l.tp_bytes, &p.tp_ms));
    if (const int w = WorstTpGroupRank(cost.cluster(), l, p.ranks); w > 0) {
      RETURN_IF_ERROR(g.AtLeast(cost::Collective::kAllReduce, l.TpGroup(w), l.tp_bytes, &p.tp_ms));
    }
  }
  RETURN_IF_ERROR(PpMs(cost, l, g, p));
  p.predicted_ms = p.dp_ms + p.tp_ms + p.pp_ms;
  return OkStatus();
}

}  // namespace

Status ScorePlacement(const cost::CostModel& cost, const job::Layout& l, Placement& p) {
  return ScoreWith(cost, l, p, nullptr);
}

Status ScorePlacement(const cost::CostModel& cost, const job::Layout& l, Placement& p,
                      GroupTimes& cache) {
  return ScoreWith(cost, l, p, &cache);
}

double NetworkMs(const Placement& p) { return p.parts.size() > 1 ? p.dp_ms + p.pp_ms : 0.0; }

void AddToLinks(LinkModel& links, const Placement& p, double dp_hide_factor) {
  const LinkModel::Usage u = links.UsageOf(p.parts);
  if (u.links.empty()) return;
  const double alone = links.AloneFactor(u);
  if (dp_hide_factor > 0) {
    links.Add(u, LinkModel::Traffic{p.dp_ms / alone, p.pp_ms / alone, dp_hide_factor});
  } else {
    links.Add(u, NetworkMs(p) / alone);
  }
}

}  // namespace toposched::sched
