#include "placement/group_shape.h"

#include <algorithm>

namespace toposched::sched {

namespace {

// How close two nodes are, on GroupShape::reach's scale.
int PairReach(const topo::Cluster& c, int a, int b) {
  const int levels = static_cast<int>(c.levels.size());
  if (a == b) return levels + 2;
  const int nvd = c.nodes[a].nvlink_domain;
  if (nvd >= 0 && nvd == c.nodes[b].nvlink_domain) return levels + 1;
  return c.MeetLevel(a, b);
}

bool ValidLayout(const job::Layout& l, const std::vector<RankSlot>& ranks) {
  return l.tp >= 1 && l.pp >= 1 && l.dp >= 1 && static_cast<int>(ranks.size()) == l.WorldSize();
}

// The worst of the groups offered in turn, the first (rank 0's group) the reference.
class WorstGroup {
 public:
  void Offer(const GroupShape& g, int first_rank) {
    if (rank_ < 0 || g.WorseThan(worst_)) {
      worst_ = g;
      rank_ = first_rank;
    }
  }
  // A rank of the worst group; -1 when none is worse than rank 0's.
  int Rank() const { return rank_ > 0 ? rank_ : -1; }

 private:
  GroupShape worst_;
  int rank_ = -1;
};

}  // namespace

bool GroupShape::WorseThan(const GroupShape& o) const {
  if (reach != o.reach) return reach < o.reach;
  if (thinnest != o.thinnest) return thinnest < o.thinnest;
  return nodes > o.nodes;
}

GroupShape ShapeOfGroup(const topo::Cluster& cluster, const std::vector<RankSlot>& ranks,
                        const std::vector<int>& members, std::vector<int>& scratch) {
  GroupShape s;
  s.reach = static_cast<int>(cluster.levels.size()) + 2;
  if (members.empty()) return s;
  // In a tree, the level where a set of nodes meets is the highest of the levels where its
  // first node meets each of the others.
  const int pivot = ranks[members[0]].node;
  scratch.clear();
  for (int r : members) {
    const int n = ranks[r].node;
    scratch.push_back(n);
    if (n != pivot) s.reach = std::min(s.reach, PairReach(cluster, pivot, n));
  }
  std::sort(scratch.begin(), scratch.end());
  s.thinnest = static_cast<int>(members.size());
  for (size_t i = 0; i < scratch.size();) {
    size_t j = i;
    while (j < scratch.size() && scratch[j] == scratch[i]) ++j;
    s.thinnest = std::min(s.thinnest, static_cast<int>(j - i));
    ++s.nodes;
    i = j;
  }
  return s;
}

int WorstDpGroupRank(const topo::Cluster& cluster, const job::Layout& l,
                     const std::vector<RankSlot>& ranks) {
  if (!ValidLayout(l, ranks) || l.dp < 2) return -1;
  std::vector<int> members(l.dp), scratch;
  WorstGroup worst;
  for (int s = 0; s < l.pp; ++s) {
    for (int t = 0; t < l.tp; ++t) {
      for (int d = 0; d < l.dp; ++d) members[d] = l.RankOf(t, d, s);
      worst.Offer(ShapeOfGroup(cluster, ranks, members, scratch), members[0]);
    }
  }
  return worst.Rank();
}

int WorstTpGroupRank(const topo::Cluster& cluster, const job::Layout& l,
                     const std::vector<RankSlot>& ranks) {
  if (!ValidLayout(l, ranks) || l.tp < 2) return -1;
  std::vector<int> members(l.tp), scratch;
  WorstGroup worst;
  for (int first = 0; first < l.WorldSize(); first += l.tp) {
    for (int t = 0; t < l.tp; ++t) members[t] = first + t;
    worst.Offer(ShapeOfGroup(cluster, ranks, members, scratch), first);
  }
  return worst.Rank();
}

int WorstPpPairRank(const topo::Cluster& cluster, const job::Layout& l,
                    const std::vector<RankSlot>& ranks) {
  if (!ValidLayout(l, ranks) || l.pp < 2) return -1;
  const int stage = l.tp * l.dp;
  const int first_reach = PairReach(cluster, ranks[0].node, ranks[stage].node);
  int worst_reach = first_reach, worst_rank = -1;
  for (int r = 1; r + stage < l.WorldSize(); ++r) {
    const int reach = PairReach(cluster, ranks[r].node, ranks[r + stage].node);
    if (reach < worst_reach) {
      worst_reach = reach;
      worst_rank = r;
    }
  }
  return worst_rank;
}

}  // namespace toposched::sched
