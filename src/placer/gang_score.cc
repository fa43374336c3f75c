// The gang placer's score: scoring a placement, the weighted terms, what a fit reports.
#include "placer/gang_search.h"
#include "plugins/score_plugins.h"

namespace toposched::sched::gang_internal {

std::string Search::OneNodeKey(int node) const {
  const job::Layout& l = job_.layout;
  const int64_t head[] = {c_.nodes[node].profile,
                          c_.nodes[node].nvlink_domain,
                          l.tp,
                          l.pp,
                          l.dp,
                          l.tp_bytes,
                          l.pp_bytes,
                          l.dp_bytes};
  return std::string(reinterpret_cast<const char*>(head), sizeof head);
}

bool Search::Score(Placement& p) const {
  const int node = p.ranks.empty() ? -1 : p.ranks[0].node;
  bool one_node = node >= 0;
  for (const RankSlot& r : p.ranks) one_node = one_node && r.node == node;
  if (!one_node) return ScorePlacement(cost_, job_.layout, p, baseline_.group_times).ok();
  std::string key = OneNodeKey(node);
  for (const RankSlot& r : p.ranks) key.push_back(static_cast<char>(r.gpu));
  {
    std::lock_guard<std::mutex> lock(baseline_.mu);
    auto it = baseline_.single_node_scores.find(key);
    if (it != baseline_.single_node_scores.end()) {
      p.dp_ms = it->second[0];
      p.tp_ms = it->second[1];
      p.pp_ms = it->second[2];
      p.predicted_ms = p.dp_ms + p.tp_ms + p.pp_ms;
      return true;
    }
  }
  // Kept whole below: its groups need not fill group_times too.
  if (!ScorePlacement(cost_, job_.layout, p).ok()) return false;
  std::lock_guard<std::mutex> lock(baseline_.mu);
  if (baseline_.single_node_scores.size() >= detail::BaselineCache::kMaxScores) {
    baseline_.single_node_scores.clear();
  }
  baseline_.single_node_scores.emplace(std::move(key),
                                       std::array<double, 3>{p.dp_ms, p.tp_ms, p.pp_ms});
  return true;
}

std::vector<int> Search::NodeOrder(int node, const std::vector<int>& order) const {
  const job::Layout& l = job_.layout;
  if (!NodeOrderMatters(l) || static_cast<int>(order.size()) != world_) return order;
  std::string key = OneNodeKey(node);
  for (int g : order) key.push_back(static_cast<char>(g));
  {
    std::lock_guard<std::mutex> lock(baseline_.mu);
    auto it = baseline_.node_orders.find(key);
    if (it != baseline_.node_orders.end()) return it->second;
  }
  std::vector<int> better = ImproveNodeOrder(cost_, l, node, order);
  std::lock_guard<std::mutex> lock(baseline_.mu);
  if (baseline_.node_orders.size() >= detail::BaselineCache::kMaxScores) {
    baseline_.node_orders.clear();
  }
  baseline_.node_orders.emplace(std::move(key), better);
  return better;
}

double Search::ChoiceMs(int node, const NodeChoice& ch) const {
  if (!NodeOrderMatters(job_.layout) || static_cast<int>(ch.order.size()) != world_) {
    return ch.predicted_ms;
  }
  const std::vector<int> order = NodeOrder(node, ch.order);
  Placement p;
  for (int i = 0; i < world_; ++i) p.ranks.push_back(RankSlot{i, node, order[i], -1});
  return Score(p) ? p.predicted_ms : std::numeric_limits<double>::infinity();
}

bool Search::PreferredMet(const Placement& p) const {
  const std::string& level = job_.constraints.job.level;
  if (level == job::kLevelNode) return p.parts.size() == 1;
  if (level == job::kLevelNvlinkDomain) {
    if (p.parts.size() == 1) return true;
    int nvd = c_.nodes[p.parts[0].node].nvlink_domain;
    for (const NodeGpus& g : p.parts) {
      if (nvd < 0 || c_.nodes[g.node].nvlink_domain != nvd) return false;
    }
    return true;
  }
  int li = c_.FindLevel(level);
  if (li < 0) return false;
  auto ancestor = [&](int node) {
    for (int d : c_.Ancestors(node)) {
      if (c_.domains[d].level == li) return d;
    }
    return -1;
  };
  int first = ancestor(p.parts[0].node);
  for (const NodeGpus& g : p.parts) {
    if (first < 0 || ancestor(g.node) != first) return false;
  }
  return true;
}

double Search::Weighted(const Placement& p, int frag) const {
  return Summed(ScoreInput{p.predicted_ms, frag, &p, links_, dp_hide_factor_});
}

double Search::WeightedMs(double predicted_ms, int frag) const {
  return Summed(ScoreInput{predicted_ms, frag, nullptr, links_, dp_hide_factor_});
}

double Search::Summed(const ScoreInput& in) const {
  double s = 0;
  for (const WeightedScore& w : plug_.scores) s += w.weight * w.plugin->Ms(in);
  return s;
}

LinkModel::Contention Search::ContentionOf(const Placement& p) const {
  return PlacementContention(links_, p, dp_hide_factor_);
}

Verdict Search::Fitted(Placement p, const std::string& where, int spare, int frag) const {
  const job::Layout& l = job_.layout;
  std::string e = std::to_string(world_) + " GPUs (tp=" + std::to_string(l.tp) +
                  " pp=" + std::to_string(l.pp) + " dp=" + std::to_string(l.dp) + ") on " +
                  std::to_string(p.parts.size()) + " node" + (p.parts.size() == 1 ? "" : "s") +
                  " in " + p.domain + " (" + where + ", " + std::to_string(spare) +
                  " spare GPUs, " + std::to_string(frag) + " left free on partly used nodes)";
  if (mode_ == Mode::kNodeTp && tp_ > 1) e += "; each TP group on one node";
  if (mode_ == Mode::kNvdTp) e += "; each TP group in one NVLink domain";
  if (mode_ == Mode::kFlat && tp_ > 1) e += "; TP groups span nodes (no node has room)";
  const job::LevelConstraint& jc = job_.constraints.job;
  if (jc.mode == ConstraintMode::kPreferred) {
    e += PreferredMet(p) ? "; preferred " + jc.level + " met"
                         : "; preferred " + jc.level + " not met (fell back)";
  }
  e += "; predicted " + Fmt("%.3f", p.predicted_ms) + " ms = dp " + Fmt("%.3f", p.dp_ms) +
       " + tp " + Fmt("%.3f", p.tp_ms) + " + pp " + Fmt("%.3f", p.pp_ms);
  e += RailNote(p);
  if (const LinkModel::Contention c = ContentionOf(p); c.total() > 0) {
    e += "; contention on shared links +" + Fmt("%.3f", c.total()) + " ms per step (its own +" +
         Fmt("%.3f", c.own_ms) + ", running jobs' +" + Fmt("%.3f", c.others_ms) + ")";
  }
  p.explanation = std::move(e);
  Verdict v;
  v.kind = VerdictKind::kFit;
  v.placement = std::move(p);
  return v;
}

}  // namespace toposched::sched::gang_internal
