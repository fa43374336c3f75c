#include "sched/gang.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "sched/link_model.h"
#include "sched/pair_score.h"
#include "sched/rank_order.h"
#include "sched/scatter.h"

namespace toposched::sched {

namespace detail {
// Lookups that depend only on the cluster, built once in GangPlacer::Create so that Place does
// not rebuild them per call.
struct GangIndex {
  int max_node_gpus = 0;                       // most GPUs on one node
  std::vector<int> node_profile;               // per node: index in Cluster::profiles
  std::vector<std::vector<int>> domain_nodes;  // per network domain: NodesUnder (sorted)
  std::vector<std::vector<int>> nvd_nodes;     // per NVLink domain: its nodes, sorted
  std::vector<int> all_nodes;                  // 0 .. nodes-1
  // Runs of consecutive node ids with the same lowest network domain (-1: none), in node order.
  // ClusterState::LargestFreeOnNode of that domain bounds every node's free count in the run.
  struct Run {
    int begin = 0, end = 0, domain = -1;
  };
  std::vector<Run> runs;
};

// Pair-score choices by (profile, free mask, k): the method enumerates partitions, up to ms per
// call on 8 GPUs, so a policy that uses it in a simulation of many jobs must not repeat it.
struct BaselineCache {
  std::mutex mu;
  std::map<std::tuple<int, uint64_t, uint64_t, int>, std::vector<int>> pair_score;
  // Scores of placements on one node, by (profile, NVLink domain or -1, layout, GPU per rank):
  // such a score depends on nothing else, and a scheduler pass prices the same few GPU sets of a
  // profile over and over. Cleared when it grows past kMaxScores.
  static constexpr size_t kMaxScores = 1 << 16;
  std::unordered_map<std::string, std::array<double, 3>> single_node_scores;
};
}  // namespace detail

namespace {

using job::ConstraintMode;

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// How TP groups are laid out.
enum class Mode {
  kFlat,    // no grouping: any GPU counts (TP = 1, or TP allowed to span nodes)
  kNodeTp,  // every TP group on one node: a node offers floor(free / TP) groups
  kNvdTp,   // TP > GPUs per node: every TP group inside one NVLink domain
};

// Per-node view for one Place call.
struct NodeView {
  bool eligible = false;  // passes health/drain/model/rdma
  int free = 0;           // free GPUs (0 when not eligible)
  int cap = 0;            // usable GPUs under the mode (free rounded down to TP for kNodeTp)
};

struct Candidate {
  const std::string* name = nullptr;
  const std::vector<int>* nodes = nullptr;  // node-id order
  int cap = 0;
};

// DP neighbours (ranks r - TP and r: same TP index and stage, consecutive DP indexes) on
// different nodes: how many pairs there are, and per DP class (TP index + TP·stage) how many of
// them share no rail (empty when none does). One pass over the ranks, O(world).
struct RailPairs {
  int pairs = 0;
  int crossed = 0;
  std::vector<int> crossed_by_class;
};
RailPairs CountRailPairs(const cost::CostModel& cost, const job::Layout& l,
                         const std::vector<RankSlot>& ranks) {
  RailPairs out;
  const int n = static_cast<int>(ranks.size());
  for (int r = l.tp; r < n; ++r) {
    if ((r / l.tp) % l.dp == 0) continue;
    const RankSlot& a = ranks[r - l.tp];
    const RankSlot& b = ranks[r];
    if (a.node == b.node) continue;
    ++out.pairs;
    if (!cost.SameRail({a.node, a.gpu}, {b.node, b.gpu})) {
      if (out.crossed++ == 0) out.crossed_by_class.assign(static_cast<size_t>(l.tp) * l.pp, 0);
      ++out.crossed_by_class[r % l.tp + l.tp * (r / (l.tp * l.dp))];
    }
  }
  return out;
}

// A chosen set of GPU counts per node, in fill order.
struct Plan {
  std::vector<std::pair<int, int>> chunks;  // (node, GPUs)
  int frag = 0;                             // GPUs left free in partly used nodes
};

// Greedy bin choice: while the rest fits in one bin, take the smallest such bin (best fit);
// otherwise take the largest bin whole. Returns the amount per bin; empty when sum < need.
// Ties go to the lowest bin index. O(bins + largest cap) via a counting sort of the bins by
// capacity (descending, index ascending): the bins taken whole are a prefix of that order and
// the best-fit bin is found by binary search in the rest.
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

enum class NodeStrategy { kBestFit, kLeastAllocated, kInOrder };

NodeStrategy StrategyOf(const PlacementPlugins& p) {
  if (p.nodes == "least-allocated") return NodeStrategy::kLeastAllocated;
  if (p.nodes == "in-order") return NodeStrategy::kInOrder;
  return NodeStrategy::kBestFit;
}

// Amount per bin under a node strategy; empty when the bins hold less than `need`.
std::vector<int> TakeBins(const std::vector<int>& caps, int need, NodeStrategy strategy) {
  if (strategy == NodeStrategy::kBestFit) return PickBins(caps, need);
  int64_t total = 0;
  for (int c : caps) total += c;
  if (total < need) return {};
  std::vector<int> order(caps.size());
  std::iota(order.begin(), order.end(), 0);
  if (strategy == NodeStrategy::kLeastAllocated) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return caps[a] > caps[b]; });
  }
  std::vector<int> take(caps.size(), 0);
  int rest = need;
  for (int i : order) {
    if (rest <= 0) break;
    take[i] = std::min(caps[i], rest);
    rest -= take[i];
  }
  return take;
}

}  // namespace

std::string PlacementShapeKey(const job::JobSpec& j) {
  const job::Layout& l = j.layout;
  const job::Constraints& c = j.constraints;
  return std::to_string(l.tp) + "/" + std::to_string(l.pp) + "/" + std::to_string(l.dp) + "/" +
         std::to_string(l.tp_bytes) + "/" + std::to_string(l.pp_bytes) + "/" +
         std::to_string(l.dp_bytes) + "/" + job::ConstraintModeName(c.job.mode) + ":" +
         c.job.level + "/" + job::ConstraintModeName(c.tp.mode) + ":" + c.tp.level + "/" +
         c.gpu_model + "/" + (c.rdma_required ? "rdma" : "") +
         (j.Fractional() ? "/milli" + std::to_string(j.gpu_milli) : "");
}

namespace {

// State of one Place call on one ClusterState.
class Search {
 public:
  Search(const topo::Cluster& cluster, const ClusterState& state, const job::JobSpec& job,
         const GangPlacerOptions& options, const cost::CostModel& cost,
         const std::vector<std::unique_ptr<NodeSelector>>& selectors,
         const detail::GangIndex& index, detail::BaselineCache& baseline, const LinkModel* links)
      : c_(cluster),
        state_(state),
        job_(job),
        opt_(options),
        cost_(cost),
        selectors_(selectors),
        ix_(index),
        baseline_(baseline),
        world_(job.layout.WorldSize()),
        tp_(job.layout.tp),
        max_node_gpus_(index.max_node_gpus),
        strategy_(StrategyOf(options.plugins)),
        comm_w_(options.plugins.Weight("comm-time")),
        frag_w_(options.plugins.Weight("fragmentation")),
        cont_w_(links ? options.plugins.Weight("contention") : 0.0),
        links_(cont_w_ > 0 ? links : nullptr) {}

  Verdict Run();

 private:
  Verdict RunWhole();
  // A fractional job under the `shares` plugin: "gpu-best-fit" below, the node rules in
  // RunFractionalByNode.
  Verdict RunFractional();
  Verdict RunFractionalByNode();
  bool NodeTakesWork(int node) const;
  void Filter();
  void EnsureFiltered();
  // Whether nodes of each profile pass the job's gpu_model / rdma_required constraints.
  void ProfileFilter();
  void SetMode(Mode m);
  int CapOf(const std::vector<int>& nodes) const;
  Plan MakePlan(const std::vector<int>& nodes) const;
  // Builds ranks and parts for a plan and scores it with the cost model. nullopt when a node
  // refuses (should not happen: the plan only uses free GPUs).
  std::optional<Placement> Materialize(const Plan& plan) const;
  // The "first-free" or "pair-score" choice of k free GPUs of a node, ascending.
  std::vector<int> BaselineGpus(int node, int k) const;
  // Rail alignment of one node's ranks (cluster with rails, "cost-model" GPU choice).
  // `order` holds the node's GPUs in rank order for ranks base.. ; `class_rails[c]` the rails
  // that other nodes' ranks of DP class c (same TP index and PP stage) use. Among
  // reorderings of the set, and sets of other free GPUs of the node, that are no slower inside
  // the node (DP AllReduce over the set plus the slowest TP group in this order) and, for
  // another set, use as many distinct NICs, takes the one where the most ranks share a rail
  // with their class; the same set wins ties. True when `order` changed.
  bool AlignRails(int node, const NodeRequest& req, int base,
                  const std::vector<std::vector<int>>& class_rails, std::vector<int>& order) const;
  // "; DP neighbours across nodes on one rail: A/B" — B pairs of ranks r-TP, r (the same TP
  // index and stage, consecutive DP indexes) on different nodes, A of them with a common rail
  // among their nearest NICs. Empty without rails or such pairs.
  std::string RailNote(const Placement& p) const;
  // Rail alignment of a multi-node plan's ranks (see PlacementPlugins::gpus): unless every DP
  // neighbour pair already shares a rail, each node against the nodes before it, then, while DP
  // neighbours still cross rails, each node against all the others (kept only when fewer pairs
  // cross).
  void AlignToRails(const Plan& plan, std::vector<RankSlot>& ranks) const;
  // What one node of a plan runs: `k` GPUs, TP groups inside it when the mode puts them there.
  NodeRequest ChunkRequest(int k) const {
    return NodeRequestFor(job_.layout, k, (mode_ == Mode::kNodeTp && tp_ > 1) ? tp_ : 1);
  }
  // DP neighbour pairs on different nodes that share no rail, over every DP group.
  int CrossedRailPairs(const std::vector<RankSlot>& ranks) const;
  int DpClass(int rank) const {
    const job::Layout& l = job_.layout;
    return rank % l.tp + l.tp * (rank / (l.tp * l.dp));
  }
  bool Score(Placement& p) const;
  // The weighted score of a scored placement that leaves `frag` GPUs free on partly used
  // nodes: comm-time, fragmentation and, with link loads, contention.
  double Weighted(const Placement& p, int frag) const;
  // What the placement adds through shared links (zero without link loads or on one node).
  LinkModel::Contention ContentionOf(const Placement& p) const;
  // When contention decided among the scored starts (another one, in another domain, scores at
  // least as well without it and adds more through shared links): ", on quieter links than
  // <domain> (+X ms per step there from shared links: its own +a, running jobs' +b)". Empty
  // otherwise.
  template <typename StartT>
  std::string QuieterNote(const Placement& chosen, double chosen_score,
                          const std::vector<StartT>& starts) const {
    if (!links_) return "";
    const double chosen_cont = ContentionOf(chosen).total();
    const double chosen_base = chosen_score - cont_w_ * chosen_cont;
    const StartT* rival = nullptr;
    LinkModel::Contention rival_c;
    double rival_base = chosen_base * (1 + 1e-9);
    for (const StartT& st : starts) {
      if (st.p.domain == chosen.domain) continue;
      const LinkModel::Contention c = ContentionOf(st.p);
      const double base = st.score - cont_w_ * c.total();
      if (base <= rival_base && c.total() > chosen_cont) {
        rival = &st;
        rival_c = c;
        rival_base = base;
      }
    }
    if (!rival) return "";
    return ", on quieter links than " + rival->p.domain + " (+" + Fmt("%.3f", rival_c.total()) +
           " ms per step there from shared links: its own +" + Fmt("%.3f", rival_c.own_ms) +
           ", running jobs' +" + Fmt("%.3f", rival_c.others_ms) + ")";
  }
  // One node that holds the job whole. *slower: its predicted time exceeds the same request on
  // a whole free node of the fastest allowed profile (then several nodes may do better).
  std::optional<Verdict> TrySingleNode(double* score = nullptr, bool* slower = nullptr);
  // The lowest level with a domain that holds the job; *score is the winner's weighted score.
  std::optional<Verdict> TryDomains(std::vector<std::string>& reasons, double* score);
  // TryDomains, and on a cluster of several hardware profiles also with the nodes of each
  // profile alone (refine plugin "local-search"); the best weighted score wins.
  std::optional<Verdict> TryDomainsByProfile(std::vector<std::string>& reasons);
  bool RefineOn() const;
  // More than 8 whole free nodes of one profile under one leaf: other count vectors only add
  // nodes or leaves, so such a plan is neither refined nor given competing starts.
  bool WholeNodesOfOneKind(const Plan& plan) const;
  // Plans that spread the job as evenly as the nodes allow over the m nodes of `region` with the
  // most room, for the smallest m that holds it and the next two.
  std::vector<Plan> BalancedPlans(const std::vector<int>& region) const;
  // Plans whose first node (the lowest id, where rank 0 and its TP and DP groups start) is one
  // of the roomiest nodes of `region`, filled as far as it goes, the rest best fit on nodes
  // after it.
  // Anchors come from the first `home` nodes of `region` (the candidate domain).
  std::vector<Plan> AnchoredPlans(const std::vector<int>& region, size_t home) const;
  // Where local search may move GPUs: the domain's nodes first, then, unless the job requires a
  // network level, every other node.
  std::vector<int> RefineRegion(const std::vector<int>& domain_nodes) const;
  // The name of the lowest network domain that holds every node of the plan.
  std::string CommonDomainName(const Plan& plan) const;
  // Hill climbing over GPU counts per node (see PlacementPlugins::refine) from `plan`, whose
  // placement is `p` with weighted score `score`; moves stay on `region`'s nodes. Replaces all
  // three when it finds better.
  // The first `home` nodes of `region` are the candidate domain: a plan that uses a node beyond
  // them must also beat the domain's best predicted time by 1% (the lowest domain that holds
  // the job stays the rule; leaving it is worth only real communication time, never the
  // fragmentation term alone).
  void Refine(const std::vector<int>& region, size_t home, Plan& plan, Placement& p,
              double& score) const;
  Verdict Fitted(Placement p, const std::string& where, int spare, int frag) const;
  std::string NodeSummary() const;
  bool PreferredMet(const Placement& p) const;

  const topo::Cluster& c_;
  const ClusterState& state_;
  const job::JobSpec& job_;
  const GangPlacerOptions& opt_;
  const cost::CostModel& cost_;
  const std::vector<std::unique_ptr<NodeSelector>>& selectors_;
  const detail::GangIndex& ix_;
  detail::BaselineCache& baseline_;
  const int world_;
  const int tp_;
  const int max_node_gpus_;
  const NodeStrategy strategy_;
  const double comm_w_, frag_w_, cont_w_;
  const LinkModel* links_;  // null unless the contention score is on
  Mode mode_ = Mode::kFlat;
  bool filtered_ = false;
  std::vector<NodeView> nodes_;  // built by Filter only when the single-node path fails
  std::vector<uint8_t> profile_ok_;
  bool all_profiles_ok_ = true;
  // Filter counts, for explanations.
  int n_unhealthy_ = 0, n_drained_ = 0, n_model_ = 0, n_rdma_ = 0;
};

void Search::ProfileFilter() {
  const job::Constraints& con = job_.constraints;
  profile_ok_.assign(c_.profiles.size(), 1);
  all_profiles_ok_ = true;
  for (size_t p = 0; p < c_.profiles.size(); ++p) {
    const topo::NodeTopology& t = c_.profiles[p].topology;
    if ((!con.gpu_model.empty() && NodeGpuModel(t) != con.gpu_model) ||
        (con.rdma_required && !HasRdma(t))) {
      profile_ok_[p] = 0;
      all_profiles_ok_ = false;
    }
  }
}

void Search::EnsureFiltered() {
  if (filtered_) return;
  filtered_ = true;
  Filter();
}

void Search::Filter() {
  const job::Constraints& con = job_.constraints;
  nodes_.assign(c_.nodes.size(), NodeView{});
  for (size_t n = 0; n < c_.nodes.size(); ++n) {
    const int node = static_cast<int>(n);
    const topo::NodeTopology& t = c_.topology(node);
    if (state_.NodeHealth(node) == topo::Health::kUnhealthy) {
      ++n_unhealthy_;
    } else if (state_.NodeDrained(node)) {
      ++n_drained_;
    } else if (!con.gpu_model.empty() && NodeGpuModel(t) != con.gpu_model) {
      ++n_model_;
    } else if (con.rdma_required && !HasRdma(t)) {
      ++n_rdma_;
    } else {
      nodes_[n].eligible = true;
      nodes_[n].free = state_.FreeMask(node).count();
    }
  }
}

void Search::SetMode(Mode m) {
  mode_ = m;
  for (NodeView& v : nodes_) {
    v.cap = m == Mode::kNodeTp ? v.free / tp_ * tp_ : v.free;
  }
}

int Search::CapOf(const std::vector<int>& nodes) const {
  if (mode_ != Mode::kNvdTp) {
    int sum = 0;
    for (int n : nodes) sum += nodes_[n].cap;
    return sum;
  }
  std::map<int, int> per_nvd;
  for (int n : nodes) {
    int nvd = c_.nodes[n].nvlink_domain;
    if (nvd >= 0) per_nvd[nvd] += nodes_[n].cap;
  }
  int sum = 0;
  for (const auto& [nvd, f] : per_nvd) sum += f / tp_ * tp_;
  return sum;
}

Plan Search::MakePlan(const std::vector<int>& nodes) const {
  Plan plan;
  auto add = [&](int node, int k) {
    plan.chunks.emplace_back(node, k);
    if (nodes_[node].free > k) plan.frag += nodes_[node].free - k;
  };
  if (mode_ != Mode::kNvdTp) {
    std::vector<int> caps;
    for (int n : nodes) caps.push_back(nodes_[n].cap);
    std::vector<int> take = TakeBins(caps, world_, strategy_);
    for (size_t i = 0; i < take.size(); ++i) {
      if (take[i] > 0) add(nodes[i], take[i]);
    }
    return plan;
  }
  // NVLink domains are the bins; inside each, its nodes (a TP group may span its trays).
  std::vector<int> nvds;
  std::map<int, std::vector<int>> members;
  for (int n : nodes) {
    int nvd = c_.nodes[n].nvlink_domain;
    if (nvd < 0) continue;
    if (!members.count(nvd)) nvds.push_back(nvd);
    members[nvd].push_back(n);
  }
  std::vector<int> caps;
  for (int nvd : nvds) {
    int f = 0;
    for (int n : members[nvd]) f += nodes_[n].cap;
    caps.push_back(f / tp_ * tp_);
  }
  std::vector<int> take = TakeBins(caps, world_, strategy_);
  for (size_t i = 0; i < take.size(); ++i) {
    if (take[i] == 0) continue;
    const std::vector<int>& m = members[nvds[i]];
    std::vector<int> ncaps;
    for (int n : m) ncaps.push_back(nodes_[n].cap);
    std::vector<int> ntake = TakeBins(ncaps, take[i], strategy_);
    for (size_t j = 0; j < ntake.size(); ++j) {
      if (ntake[j] > 0) add(m[j], ntake[j]);
    }
  }
  return plan;
}

std::optional<Placement> Search::Materialize(const Plan& plan) const {
  Placement p;
  int rank = 0;
  for (const auto& [node, k] : plan.chunks) {
    const NodeRequest req = ChunkRequest(k);
    const NodeSelector& sel = *selectors_[c_.nodes[node].profile];
    if (opt_.plugins.gpus != "cost-model") {
      std::vector<int> order = BaselineGpus(node, k);
      if (static_cast<int>(order.size()) != k) return std::nullopt;
      const std::vector<int> nics = AssignNics(c_.topology(node), order);
      for (int i = 0; i < k; ++i) p.ranks.push_back(RankSlot{rank++, node, order[i], nics[i]});
      continue;
    }
    auto choice = sel.Select(state_.FreeMask(node), req);
    if (!choice.ok() || (*choice)->fit != Fit::kFit ||
        static_cast<int>((*choice)->order.size()) != k) {
      return std::nullopt;
    }
    const NodeChoice& ch = **choice;
    for (int i = 0; i < k; ++i) {
      int nic = i < static_cast<int>(ch.layout.ranks.size()) ? ch.layout.ranks[i].nic : -1;
      p.ranks.push_back(RankSlot{rank++, node, ch.order[i], nic});
    }
  }
  if (rank != world_) return std::nullopt;
  if (c_.rails.count > 0 && plan.chunks.size() > 1 && job_.layout.dp > 1 &&
      opt_.plugins.gpus == "cost-model") {
    AlignToRails(plan, p.ranks);
  }
  int base = 0;
  for (const auto& [node, k] : plan.chunks) {
    GpuMask m;
    for (int i = base; i < base + k; ++i) m.set(p.ranks[i].gpu);
    p.parts.push_back(NodeGpus{node, m});
    base += k;
  }
  std::sort(p.parts.begin(), p.parts.end(),
            [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  if (!Score(p)) return std::nullopt;
  return p;
}

int Search::CrossedRailPairs(const std::vector<RankSlot>& ranks) const {
  return CountRailPairs(cost_, job_.layout, ranks).crossed;
}

void Search::AlignToRails(const Plan& plan, std::vector<RankSlot>& ranks) const {
  const size_t classes = static_cast<size_t>(job_.layout.tp) * job_.layout.pp;
  auto add_rails = [&](std::vector<std::vector<int>>& class_rails, const RankSlot& r) {
    std::vector<int>& rails = class_rails[DpClass(r.rank)];
    for (int c : cost_.node_model(r.node).NicsOf(r.gpu)) {
      if (c >= 0 && c < c_.rails.count && std::find(rails.begin(), rails.end(), c) == rails.end()) {
        rails.push_back(c);
      }
    }
  };
  auto apply = [&](std::vector<RankSlot>& out, int node, int base, const std::vector<int>& order) {
    const std::vector<int> nics = AssignNics(c_.topology(node), order);
    for (size_t i = 0; i < order.size(); ++i) {
      out[base + i] = RankSlot{base + static_cast<int>(i), node, order[i], nics[i]};
    }
  };
  auto order_of = [&](const std::vector<RankSlot>& from, int base, int k) {
    std::vector<int> order(k);
    for (int i = 0; i < k; ++i) order[i] = from[base + i].gpu;
    return order;
  };
  if (CrossedRailPairs(ranks) == 0) return;  // the node selector's choices already agree
  // Pass 1: each node against the rails of the nodes before it.
  std::vector<std::vector<int>> before(classes);
  int base = 0;
  for (const auto& [node, k] : plan.chunks) {
    std::vector<int> order = order_of(ranks, base, k);
    if (base > 0 && AlignRails(node, ChunkRequest(k), base, before, order))
      apply(ranks, node, base, order);
    for (int i = 0; i < k; ++i) add_rails(before, ranks[base + i]);
    base += k;
  }
  int crossed = CrossedRailPairs(ranks);
  if (crossed == 0) return;
  // Pass 2: each node, the first included, against the rails of all the others; kept when
  // fewer DP neighbours end up on different rails.
  std::vector<RankSlot> next = ranks;
  base = 0;
  for (const auto& [node, k] : plan.chunks) {
    std::vector<std::vector<int>> others(classes);
    for (const RankSlot& r : next) {
      if (r.node != node) add_rails(others, r);
    }
    std::vector<int> order = order_of(next, base, k);
    if (AlignRails(node, ChunkRequest(k), base, others, order)) apply(next, node, base, order);
    base += k;
  }
  if (CrossedRailPairs(next) < crossed) ranks = std::move(next);
}

bool Search::AlignRails(int node, const NodeRequest& req, int base,
                        const std::vector<std::vector<int>>& class_rails,
                        std::vector<int>& order) const {
  const int k = static_cast<int>(order.size());
  const int rails = c_.rails.count;
  const cost::NodeCostModel& nm = cost_.node_model(node);
  auto matches = [&](int slot, int g) {
    const std::vector<int>& want = class_rails[DpClass(base + slot)];
    for (int c : nm.NicsOf(g)) {
      if (c >= 0 && c < rails && std::find(want.begin(), want.end(), c) != want.end()) {
        return true;
      }
    }
    return false;
  };
  auto count = [&](const std::vector<int>& o) {
    int n = 0;
    for (int i = 0; i < k; ++i) n += matches(i, o[i]) ? 1 : 0;
    return n;
  };
  int wanted = 0;
  for (int i = 0; i < k; ++i) wanted += class_rails[DpClass(base + i)].empty() ? 0 : 1;
  const int have = count(order);
  if (have == wanted) return false;

  const NodeSelector& sel = *selectors_[c_.nodes[node].profile];
  auto time = [&](const std::vector<int>& o) {
    GpuMask set;
    for (int g : o) set.set(g);
    NodeRequest whole = req;
    whole.tp = 1;
    double ms = sel.SetTimeMs(set, whole);
    if (req.tp > 1) {
      NodeRequest group;
      group.gpus = req.tp;
      group.dp_bytes = req.tp_bytes;
      double worst = 0;
      for (int first = 0; first < k; first += req.tp) {
        GpuMask m;
        for (int i = first; i < first + req.tp; ++i) m.set(o[i]);
        worst = std::max(worst, sel.SetTimeMs(m, group));
      }
      ms += worst;
    }
    return ms;
  };
  auto distinct_nics = [&](const std::vector<int>& o) {
    std::vector<int> all;
    for (int g : o) all.insert(all.end(), nm.NicsOf(g).begin(), nm.NicsOf(g).end());
    std::sort(all.begin(), all.end());
    return std::unique(all.begin(), all.end()) - all.begin();
  };
  // Slot by slot from `pool` (GPUs in preference order): keep a GPU that already shares a rail
  // with its class, give each other slot the first unused GPU that does, fill the rest in pool
  // order.
  auto build = [&](const std::vector<int>& pool) {
    std::vector<int> out(k, -1);
    std::vector<char> used(pool.size(), 0);
    auto take = [&](int slot, size_t j) {
      out[slot] = pool[j];
      used[j] = 1;
    };
    for (int i = 0; i < k; ++i) {
      if (matches(i, order[i]))
        take(i, std::find(pool.begin(), pool.end(), order[i]) - pool.begin());
    }
    for (int i = 0; i < k; ++i) {
      if (out[i] >= 0 || class_rails[DpClass(base + i)].empty()) continue;
      for (size_t j = 0; j < pool.size(); ++j) {
        if (!used[j] && matches(i, pool[j])) {
          take(i, j);
          break;
        }
      }
    }
    size_t next = 0;
    for (int i = 0; i < k; ++i) {
      if (out[i] >= 0) continue;
      while (used[next]) ++next;
      take(i, next);
    }
    return out;
  };
  const double base_ms = time(order) * (1 + 1e-9) + 1e-12;
  std::vector<int> best = order;
  int best_have = have;
  std::vector<int> same = build(order);
  if (int n = count(same); n > best_have && time(same) <= base_ms) {
    best = std::move(same);
    best_have = n;
  }
  if (best_have < wanted) {
    std::vector<int> pool = order;
    const GpuMask& free = state_.FreeMask(node);
    for (int g = 0; g < state_.GpuCount(node); ++g) {
      if (free.test(g) && std::find(order.begin(), order.end(), g) == order.end()) {
        pool.push_back(g);
      }
    }
    if (pool.size() > order.size()) {
      std::vector<int> other = build(pool);
      if (int n = count(other);
          n > best_have && time(other) <= base_ms && distinct_nics(other) >= distinct_nics(order)) {
        best = std::move(other);
        best_have = n;
      }
    }
  }
  if (best_have == have) return false;
  order = std::move(best);
  return true;
}

std::string Search::RailNote(const Placement& p) const {
  if (c_.rails.count <= 0 || p.parts.size() < 2 || job_.layout.dp < 2) return "";
  const RailPairs all = CountRailPairs(cost_, job_.layout, p.ranks);
  if (all.pairs == 0) return "";
  return "; DP neighbours across nodes on one rail: " + std::to_string(all.pairs - all.crossed) +
         "/" + std::to_string(all.pairs);
}

std::vector<int> Search::BaselineGpus(int node, int k) const {
  const GpuMask& free = state_.FreeMask(node);
  std::vector<int> ids;
  for (int g = 0; g < state_.GpuCount(node); ++g) {
    if (free.test(g)) ids.push_back(g);
  }
  if (static_cast<int>(ids.size()) < k) return {};
  if (opt_.plugins.gpus == "first-free" || static_cast<int>(ids.size()) == k) {
    ids.resize(k);
    return ids;
  }
  const auto key = std::make_tuple(c_.nodes[node].profile, free.lo(), free.hi(), k);
  {
    std::lock_guard<std::mutex> lock(baseline_.mu);
    auto it = baseline_.pair_score.find(key);
    if (it != baseline_.pair_score.end()) return it->second;
  }
  std::vector<int> pick = PairScoreSelect(c_.topology(node), ids, k);
  std::lock_guard<std::mutex> lock(baseline_.mu);
  baseline_.pair_score.emplace(key, pick);
  return pick;
}

bool Search::Score(Placement& p) const {
  const int node = p.ranks.empty() ? -1 : p.ranks[0].node;
  bool one_node = node >= 0;
  for (const RankSlot& r : p.ranks) one_node = one_node && r.node == node;
  if (!one_node) return ScorePlacement(cost_, job_.layout, p).ok();
  const job::Layout& l = job_.layout;
  const int64_t head[] = {c_.nodes[node].profile,
                          c_.nodes[node].nvlink_domain,
                          l.tp,
                          l.pp,
                          l.dp,
                          l.tp_bytes,
                          l.pp_bytes,
                          l.dp_bytes};
  std::string key(reinterpret_cast<const char*>(head), sizeof head);
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
  if (!ScorePlacement(cost_, job_.layout, p).ok()) return false;
  std::lock_guard<std::mutex> lock(baseline_.mu);
  if (baseline_.single_node_scores.size() >= detail::BaselineCache::kMaxScores) {
    baseline_.single_node_scores.clear();
  }
  baseline_.single_node_scores.emplace(std::move(key),
                                       std::array<double, 3>{p.dp_ms, p.tp_ms, p.pp_ms});
  return true;
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
  double s = comm_w_ * p.predicted_ms + frag_w_ * frag;
  if (links_) s += cont_w_ * ContentionOf(p).total();  // 0 on one node
  return s;
}

LinkModel::Contention Search::ContentionOf(const Placement& p) const {
  if (!links_ || p.parts.size() < 2) return {};
  return links_->ContentionMs(links_->UsageOf(p.parts), NetworkMs(p));
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

std::string Search::NodeSummary() const {
  int usable = 0, lack = 0;
  for (const NodeView& v : nodes_) {
    if (!v.eligible) continue;
    if (v.cap > 0) {
      ++usable;
    } else {
      ++lack;
    }
  }
  std::string s = std::to_string(usable) + "/" + std::to_string(nodes_.size()) + " nodes usable";
  std::vector<std::string> parts;
  if (lack) parts.push_back(std::to_string(lack) + " lack free GPUs");
  if (n_unhealthy_) parts.push_back(std::to_string(n_unhealthy_) + " unhealthy");
  if (n_drained_) parts.push_back(std::to_string(n_drained_) + " drained");
  if (n_model_) {
    parts.push_back(std::to_string(n_model_) + " wrong GPU model (want " +
                    job_.constraints.gpu_model + ")");
  }
  if (n_rdma_) parts.push_back(std::to_string(n_rdma_) + " without IB/RoCE NIC");
  for (size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? ": " : ", ") + parts[i];
  return s;
}

// Reads free masks straight from the state: a node's free mask is empty when the node is
// unhealthy or drained, so only the per-profile constraints need checking, and the scan stops at
// the first node that fits exactly. Same result as a scan over the filtered node view.
std::optional<Verdict> Search::TrySingleNode(double* score_out, bool* slower) {
  if (slower) *slower = false;
  if (mode_ == Mode::kNvdTp || world_ > max_node_gpus_) return std::nullopt;
  // Best fit: fewest free GPUs left on the node; ties by the node selector's predicted time,
  // evaluated once per distinct (profile, free mask). world_ is a multiple of tp_, so under
  // kNodeTp a node holds the job iff its free count does.
  const int* prof = ix_.node_profile.data();
  const bool all_ok = all_profiles_ok_;
  if (strategy_ != NodeStrategy::kBestFit) {
    // Spread (emptiest node, first on ties) or node order (first node that holds the job).
    int pick = -1, pick_free = -1;
    for (int n = 0; n < static_cast<int>(c_.nodes.size()); ++n) {
      if (!all_ok && !profile_ok_[prof[n]]) continue;
      const int f = state_.FreeMask(n).count();
      if (f < world_ || f <= pick_free) continue;
      pick = n;
      pick_free = f;
      if (strategy_ == NodeStrategy::kInOrder) break;
    }
    if (pick < 0) return std::nullopt;
    Plan plan;
    plan.chunks.emplace_back(pick, world_);
    plan.frag = pick_free - world_;
    std::optional<Placement> p = Materialize(plan);
    if (!p) return std::nullopt;
    p->domain = c_.nodes[pick].name;
    return Fitted(std::move(*p), opt_.plugins.nodes + " node", plan.frag, plan.frag);
  }
  int best_free = std::numeric_limits<int>::max();
  int first = -1;
  for (const detail::GangIndex::Run& r : ix_.runs) {
    if (r.domain >= 0 && state_.LargestFreeOnNode(r.domain) < world_) continue;
    for (int n = r.begin; n < r.end; ++n) {
      if (!all_ok && !profile_ok_[prof[n]]) continue;
      const int f = state_.FreeMask(n).count();
      if (f >= world_ && f < best_free) {
        best_free = f;
        first = n;
        if (f == world_) break;
      }
    }
    if (best_free == world_) break;  // nothing fits tighter; `first` is the earliest such node
  }
  if (first < 0) return std::nullopt;
  const int best_left = best_free - world_;
  if (comm_w_ == 0 || opt_.plugins.gpus != "cost-model") {
    // Nothing to compare the tied nodes by: the first best-fit node.
    Plan plan;
    plan.chunks.emplace_back(first, world_);
    plan.frag = best_left;
    std::optional<Placement> p = Materialize(plan);
    if (!p) return std::nullopt;
    p->domain = c_.nodes[first].name;
    return Fitted(std::move(*p), "best-fit node", best_left, best_left);
  }
  struct Seen {
    int profile;
    uint64_t lo, hi;
  };
  Seen seen[1025];  // max_node_evaluations ≤ 1024, plus the one that ends the scan
  int n_seen = 0;
  int chosen = -1;
  double chosen_ms = std::numeric_limits<double>::infinity();
  const NodeRequest req = ChunkRequest(world_);
  // Distinct (profile, mask) keys that can exist: Σ over allowed profiles of C(gpus, best_free).
  // Once all were seen, the rest of the scan could only find duplicates, so it stops there.
  int64_t possible = 0;
  for (size_t pi = 0; pi < c_.profiles.size() && possible <= 2048; ++pi) {
    if (!profile_ok_[pi]) continue;
    const int g = static_cast<int>(c_.profiles[pi].topology.gpus.size());
    if (best_free > g) continue;
    int64_t b = 1;
    for (int i = 1; i <= best_free && b <= 2048; ++i) b = b * (g - best_free + i) / i;
    possible += b;
  }
  // Candidates in node order from `first` (no earlier node has best_free free GPUs).
  bool done = false;
  for (const detail::GangIndex::Run& r : ix_.runs) {
    if (done) break;
    if (r.end <= first) continue;
    if (r.domain >= 0 && state_.LargestFreeOnNode(r.domain) < best_free) continue;
    for (int node = std::max(r.begin, first); node < r.end; ++node) {
      if (!all_ok && !profile_ok_[prof[node]]) continue;
      const GpuMask& m = state_.FreeMask(node);
      if (m.count() != best_free) continue;
      const int p = prof[node];
      bool dup = false;
      for (int i = 0; i < n_seen && !dup; ++i) {
        dup = seen[i].profile == p && seen[i].lo == m.lo() && seen[i].hi == m.hi();
      }
      if (dup) continue;
      seen[n_seen++] = Seen{p, m.lo(), m.hi()};
      if (n_seen > opt_.max_node_evaluations) {
        done = true;
        break;
      }
      auto ch = selectors_[p]->Select(m, req);
      if (ch.ok() && (*ch)->fit == Fit::kFit && (*ch)->predicted_ms < chosen_ms * (1 - 1e-9)) {
        chosen_ms = (*ch)->predicted_ms;
        chosen = node;
      }
      if (n_seen >= possible) {
        done = true;
        break;
      }
    }
  }
  if (chosen < 0) return std::nullopt;
  int chosen_left = best_left;
  // Best fit can force a slow GPU set (a cube-mesh's leftover GPUs without a closed NVLink
  // ring). When the chosen set is slower than the same request on a whole free node of the
  // fastest allowed profile (on a mixed cluster a best-fit node of a slow profile competes with
  // the faster ones), nodes with more free GPUs compete on the full score: comm-time +
  // fragmentation. Only then the O(nodes) scan; uniform fabrics (NVSwitch) never get here.
  double ideal_ms = std::numeric_limits<double>::infinity();
  for (size_t pi = 0; pi < c_.profiles.size(); ++pi) {
    if (!profile_ok_[pi]) continue;
    if (static_cast<int>(c_.profiles[pi].topology.gpus.size()) < world_) continue;
    auto ideal = selectors_[pi]->Select(selectors_[pi]->healthy(), req);
    if (ideal.ok() && (*ideal)->fit == Fit::kFit) {
      ideal_ms = std::min(ideal_ms, (*ideal)->predicted_ms);
    }
  }
  if (std::isfinite(ideal_ms) &&
      chosen_ms > ideal_ms * (1 + 1e-9) + frag_w_ / std::max(comm_w_, 1e-12)) {
    double best_score = comm_w_ * chosen_ms + frag_w_ * best_left;
    std::vector<Seen> more;
    for (int node = 0; node < static_cast<int>(c_.nodes.size()); ++node) {
      if (!all_ok && !profile_ok_[prof[node]]) continue;
      const GpuMask& m = state_.FreeMask(node);
      const int f = m.count();
      if (f <= best_free) continue;
      // Its extra leftover alone already costs more than the time it could save.
      if (frag_w_ * (f - world_) >= best_score) continue;
      bool dup = false;
      for (const Seen& x : more)
        dup = dup || (x.profile == prof[node] && x.lo == m.lo() && x.hi == m.hi());
      if (dup) continue;
      more.push_back(Seen{prof[node], m.lo(), m.hi()});
      if (static_cast<int>(more.size()) > 4 * opt_.max_node_evaluations) break;
      auto ch = selectors_[prof[node]]->Select(m, req);
      if (!ch.ok() || (*ch)->fit != Fit::kFit) continue;
      const double score = comm_w_ * (*ch)->predicted_ms + frag_w_ * (f - world_);
      if (score < best_score * (1 - 1e-9)) {
        best_score = score;
        chosen = node;
        chosen_left = f - world_;
      }
    }
  }
  Plan plan;
  plan.chunks.emplace_back(chosen, world_);
  plan.frag = chosen_left;
  std::optional<Placement> p = Materialize(plan);
  if (!p) return std::nullopt;
  p->domain = c_.nodes[chosen].name;
  if (score_out) *score_out = comm_w_ * p->predicted_ms + frag_w_ * chosen_left;
  if (slower && std::isfinite(ideal_ms)) *slower = p->predicted_ms > ideal_ms * (1 + 1e-9);
  return Fitted(std::move(*p), chosen_left == best_left ? "best-fit node" : "fastest node by score",
                chosen_left, chosen_left);
}

bool Search::RefineOn() const {
  return opt_.plugins.refine == "local-search" && comm_w_ > 0 &&
         opt_.plugins.gpus == "cost-model" && mode_ != Mode::kNvdTp &&
         opt_.max_refine_evaluations > 0;
}

bool Search::WholeNodesOfOneKind(const Plan& plan) const {
  // Only large plans: on a few nodes, other count vectors (a roomier first node for rank 0's
  // groups) can still win, and trying them is cheap there.
  if (plan.chunks.size() <= 8) return false;
  const int* prof = ix_.node_profile.data();
  const int n0 = plan.chunks[0].first;
  for (const auto& [n, k] : plan.chunks) {
    if (k != nodes_[n].free || k != state_.GpuCount(n) || prof[n] != prof[n0] ||
        c_.nodes[n].domain != c_.nodes[n0].domain) {
      return false;
    }
  }
  return true;
}

void Search::Refine(const std::vector<int>& region, size_t home, Plan& plan, Placement& p,
                    double& score) const {
  if (plan.chunks.empty()) return;
  if (plan.chunks.size() < 2 && nodes_[plan.chunks[0].first].free == plan.chunks[0].second) {
    return;  // one whole node: nothing to move
  }
  if (static_cast<int>(plan.chunks.size()) > opt_.max_refine_nodes) return;
  const int* prof = ix_.node_profile.data();
  if (WholeNodesOfOneKind(plan)) return;
  const int unit = mode_ == Mode::kNodeTp ? tp_ : 1;
  // The plan's nodes, then nodes outside it with room for a unit, one per (profile, free GPUs,
  // leaf): such nodes differ only in their id, which only orders the ranks.
  std::vector<int> ids;
  for (const auto& [n, k] : plan.chunks) ids.push_back(n);
  struct Key {
    int profile;
    uint64_t lo, hi;
    int domain;
  };
  std::vector<Key> seen;
  std::vector<char> outside(nodes_.size(), 0);
  for (size_t i = home; i < region.size(); ++i) outside[region[i]] = 1;
  int others = 0;
  for (int n : region) {
    if (others >= opt_.max_refine_nodes) break;
    if (nodes_[n].cap < unit) continue;
    if (std::find(ids.begin(), ids.end(), n) != ids.end()) continue;
    const GpuMask& m = state_.FreeMask(n);
    bool dup = false;
    for (const Key& x : seen) {
      dup = dup || (x.profile == prof[n] && x.lo == m.lo() && x.hi == m.hi() &&
                    x.domain == c_.nodes[n].domain);
    }
    if (dup) continue;
    seen.push_back(Key{prof[n], m.lo(), m.hi(), c_.nodes[n].domain});
    ids.push_back(n);
    ++others;
  }
  std::sort(ids.begin(), ids.end());
  const size_t m = ids.size();
  std::vector<int> cap(m), k(m, 0);
  for (size_t i = 0; i < m; ++i) cap[i] = nodes_[ids[i]].cap;
  for (const auto& [n, kk] : plan.chunks) {
    k[std::lower_bound(ids.begin(), ids.end(), n) - ids.begin()] = kk;
  }
  std::map<std::vector<int>, double> memo;
  memo.emplace(k, score);
  int evals = 0;
  std::vector<int> best_k;
  double best_score = score;
  double home_ms = p.predicted_ms;  // best predicted time inside the domain so far
  std::optional<Placement> best_p;
  Plan best_plan;
  auto consider = [&](const std::vector<int>& kv) {
    if (memo.count(kv)) return;
    ++evals;
    Plan pl;
    bool away = false;
    for (size_t i = 0; i < m; ++i) {
      if (kv[i] == 0) continue;
      pl.chunks.emplace_back(ids[i], kv[i]);
      if (nodes_[ids[i]].free > kv[i]) pl.frag += nodes_[ids[i]].free - kv[i];
      away = away || outside[ids[i]];
    }
    std::optional<Placement> q = Materialize(pl);
    const double sc = q ? Weighted(*q, pl.frag) : std::numeric_limits<double>::infinity();
    memo.emplace(kv, sc);
    if (q && !away) home_ms = std::min(home_ms, q->predicted_ms);
    if (q && away && !(q->predicted_ms < home_ms * 0.99)) return;
    if (q && sc < best_score * (1 - 1e-9)) {
      best_score = sc;
      best_k = kv;
      best_p = std::move(q);
      best_plan = std::move(pl);
    }
  };
  std::vector<int> spare(m);
  // The budget grows with the plan: a job over more nodes has more moves worth trying.
  const int budget = opt_.max_refine_evaluations *
                     std::max<int>(1, (static_cast<int>(plan.chunks.size()) + 1) / 2);
  while (evals < budget) {
    const double start = best_score;
    for (size_t a = 0; a < m && evals < budget; ++a) {
      if (k[a] == 0) continue;
      // Spread node a's share over the others, best fit.
      for (size_t b = 0; b < m; ++b) spare[b] = b == a ? 0 : cap[b] - k[b];
      std::vector<int> take = PickBins(spare, k[a]);
      if (!take.empty()) {
        std::vector<int> kv = k;
        kv[a] = 0;
        for (size_t b = 0; b < m; ++b) kv[b] += take[b];
        consider(kv);
      }
      for (size_t b = 0; b < m && evals < budget; ++b) {
        if (b == a || cap[b] - k[b] < unit) continue;
        std::vector<int> kv = k;
        kv[a] -= unit;
        kv[b] += unit;
        consider(kv);  // one unit from a to b
        if (k[b] == 0 && k[a] > unit && cap[b] >= k[a]) {
          kv = k;
          kv[b] = k[a];
          kv[a] = 0;
          consider(kv);  // a's whole share to b
        }
      }
    }
    if (!(best_score < start)) break;
    k = best_k;
  }
  if (best_p) {
    best_p->domain = p.domain;
    p = std::move(*best_p);
    plan = std::move(best_plan);
    score = best_score;
  }
}

std::vector<Plan> Search::BalancedPlans(const std::vector<int>& region) const {
  std::vector<Plan> out;
  if (mode_ == Mode::kNvdTp) return out;
  const int unit = mode_ == Mode::kNodeTp ? tp_ : 1;
  std::vector<int> nodes;
  for (int n : region) {
    if (nodes_[n].cap >= unit) nodes.push_back(n);
  }
  std::stable_sort(nodes.begin(), nodes.end(),
                   [&](int a, int b) { return nodes_[a].cap > nodes_[b].cap; });
  const int units = world_ / unit;
  int sum = 0;
  size_t m_min = 0;
  while (m_min < nodes.size() && sum < world_) sum += nodes_[nodes[m_min++]].cap;
  if (sum < world_) return out;
  for (size_t m = std::max<size_t>(m_min, 2); m <= std::min(nodes.size(), m_min + 2); ++m) {
    if (static_cast<int>(m) > units) break;
    // Water filling in units: every node gets min(cap, level) units, the level as low as holds
    // the job; the remainder goes one unit each to the nodes that still have room.
    std::vector<int> capu(m), take(m, 0);
    for (size_t i = 0; i < m; ++i) capu[i] = nodes_[nodes[i]].cap / unit;
    int left = units;
    std::vector<size_t> open(m);
    std::iota(open.begin(), open.end(), 0);
    while (left > 0 && !open.empty()) {
      const int share = std::max(1, left / static_cast<int>(open.size()));
      std::vector<size_t> still;
      for (size_t i : open) {
        const int t = std::min({share, capu[i] - take[i], left});
        take[i] += t;
        left -= t;
        if (take[i] < capu[i]) still.push_back(i);
      }
      open = std::move(still);
    }
    if (left > 0) continue;
    std::vector<std::pair<int, int>> chunks;
    for (size_t i = 0; i < m; ++i) {
      if (take[i] > 0) chunks.emplace_back(nodes[i], take[i] * unit);
    }
    std::sort(chunks.begin(), chunks.end());
    Plan plan;
    for (const auto& [n, k] : chunks) {
      plan.chunks.emplace_back(n, k);
      if (nodes_[n].free > k) plan.frag += nodes_[n].free - k;
    }
    out.push_back(std::move(plan));
  }
  return out;
}

std::vector<Plan> Search::AnchoredPlans(const std::vector<int>& region, size_t home) const {
  std::vector<Plan> out;
  if (mode_ == Mode::kNvdTp) return out;
  // The roomiest nodes, one per distinct free count (among equals the lowest id leaves the most
  // nodes after it): up to 4 from the domain, 2 more from the whole region.
  auto roomiest = [&](size_t from, size_t to, size_t count, std::vector<int>& picked) {
    std::vector<int> nodes;
    for (size_t i = from; i < to && i < region.size(); ++i) {
      if (nodes_[region[i]].cap > 0) nodes.push_back(region[i]);
    }
    std::stable_sort(nodes.begin(), nodes.end(), [&](int a, int b) {
      return nodes_[a].cap != nodes_[b].cap ? nodes_[a].cap > nodes_[b].cap : a < b;
    });
    size_t added = 0;
    for (int a : nodes) {
      if (added >= count) break;
      bool dup = false;
      for (int p : picked) dup = dup || p == a || nodes_[p].cap == nodes_[a].cap;
      if (!dup) {
        picked.push_back(a);
        ++added;
      }
    }
  };
  std::vector<int> picked;
  roomiest(0, home, 4, picked);
  const size_t from_home = picked.size();
  roomiest(home, region.size(), 2, picked);
  // Anchors in node order: `lead` first (each as far as it goes), the rest best fit on the
  // nodes after the last of them.
  auto plan_from = [&](const std::vector<int>& lead) {
    Plan plan;
    int left = world_;
    for (int a : lead) {
      const int k = std::min(nodes_[a].cap, left);
      if (k <= 0) return;
      plan.chunks.emplace_back(a, k);
      if (nodes_[a].free > k) plan.frag += nodes_[a].free - k;
      left -= k;
    }
    if (left > 0) {
      std::vector<int> rest_nodes, caps;
      for (int n : region) {
        if (n > lead.back() && nodes_[n].cap > 0) {
          rest_nodes.push_back(n);
          caps.push_back(nodes_[n].cap);
        }
      }
      std::vector<int> take = PickBins(caps, left);
      if (take.empty()) return;
      for (size_t i = 0; i < take.size(); ++i) {
        if (take[i] == 0) continue;
        plan.chunks.emplace_back(rest_nodes[i], take[i]);
        if (nodes_[rest_nodes[i]].free > take[i]) plan.frag += nodes_[rest_nodes[i]].free - take[i];
      }
    }
    std::sort(plan.chunks.begin(), plan.chunks.end());
    out.push_back(std::move(plan));
  };
  int max_cap = 0;
  for (int a : picked) {
    plan_from({a});
    max_cap = std::max(max_cap, nodes_[a].cap);
  }
  // When no node holds the first stage (rank 0's TP and DP groups), two anchors: the pairs of
  // the three roomiest from the domain, in node order.
  const int stage = job_.layout.tp * job_.layout.dp;
  if (stage > max_cap) {
    const size_t k = std::min<size_t>(from_home, 3);
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = i + 1; j < k; ++j) {
        plan_from({std::min(picked[i], picked[j]), std::max(picked[i], picked[j])});
      }
    }
  }
  return out;
}

std::string Search::CommonDomainName(const Plan& plan) const {
  std::vector<int> nodes;
  for (const auto& [n, k] : plan.chunks) nodes.push_back(n);
  const int d = c_.LowestCommonDomain(nodes);
  if (d >= 0) return c_.domains[d].name;
  return c_.name.empty() ? "cluster" : c_.name;
}

std::vector<int> Search::RefineRegion(const std::vector<int>& domain_nodes) const {
  // The domain's nodes come first (RefineRegion()[0 .. domain_nodes.size()) ).
  if (job_.constraints.job.mode == ConstraintMode::kRequired ||
      domain_nodes.size() == nodes_.size()) {
    return domain_nodes;
  }
  std::vector<int> r = domain_nodes;
  std::vector<char> in(nodes_.size(), 0);
  for (int n : domain_nodes) in[n] = 1;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (!in[n] && nodes_[n].cap > 0) r.push_back(static_cast<int>(n));
  }
  return r;
}

std::optional<Verdict> Search::TryDomainsByProfile(std::vector<std::string>& reasons) {
  double best_score = 0;
  std::optional<Verdict> best = TryDomains(reasons, &best_score);
  if (!best || !RefineOn() || c_.profiles.size() < 2) return best;
  // A slow node in a DP group bounds the whole group: search each profile's nodes alone too.
  std::vector<int> saved(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) saved[n] = nodes_[n].cap;
  for (size_t pi = 0; pi < c_.profiles.size(); ++pi) {
    int total = 0;
    bool other = false;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (ix_.node_profile[n] == static_cast<int>(pi)) {
        total += saved[n];
      } else if (saved[n] > 0) {
        other = true;
      }
    }
    if (total < world_ || !other) continue;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      nodes_[n].cap = ix_.node_profile[n] == static_cast<int>(pi) ? saved[n] : 0;
    }
    std::vector<std::string> ignored;
    double sc = 0;
    std::optional<Verdict> v = TryDomains(ignored, &sc);
    if (v && sc < best_score * (1 - 1e-9)) {
      best_score = sc;
      best = std::move(v);
    }
  }
  for (size_t n = 0; n < nodes_.size(); ++n) nodes_[n].cap = saved[n];
  return best;
}

std::optional<Verdict> Search::TryDomains(std::vector<std::string>& reasons, double* out_score) {
  const job::LevelConstraint& jc = job_.constraints.job;
  const bool required = jc.mode == ConstraintMode::kRequired;
  const int num_levels = static_cast<int>(c_.levels.size());

  // Candidate groups, lowest level first; each group is one level.
  struct Group {
    std::string level;
    std::vector<Candidate> cands;
    std::vector<int> domain_ids;  // network domains (for the O(1) capacity prune), else -1
  };
  std::vector<Group> groups;
  if (required && jc.level == job::kLevelNode) {
    // Only the single-node path can satisfy it.
  } else if (required && jc.level == job::kLevelNvlinkDomain) {
    Group g{job::kLevelNvlinkDomain, {}, {}};
    for (size_t d = 0; d < c_.nvlink_domains.size(); ++d) {
      g.cands.push_back(Candidate{&c_.nvlink_domains[d].name, &ix_.nvd_nodes[d], 0});
      g.domain_ids.push_back(-1);
    }
    groups.push_back(std::move(g));
  } else {
    int top = 0;
    if (required) top = c_.FindLevel(jc.level);
    // "cluster": the network tree is ignored except where a required level demands it.
    const int bottom = opt_.plugins.domain == "cluster" ? (required ? top : -1) : num_levels - 1;
    for (int li = bottom; li >= std::max(top, 0); --li) {
      Group g{c_.levels[li].name, {}, {}};
      for (size_t d = 0; d < c_.domains.size(); ++d) {
        if (c_.domains[d].level != li) continue;
        g.cands.push_back(Candidate{&c_.domains[d].name, &ix_.domain_nodes[d], 0});
        g.domain_ids.push_back(static_cast<int>(d));
      }
      groups.push_back(std::move(g));
    }
    int roots = 0;
    for (const topo::NetworkDomain& d : c_.domains) roots += d.parent < 0 ? 1 : 0;
    if (!required && (roots != 1 || num_levels == 0 || opt_.plugins.domain == "cluster")) {
      Group g{"cluster", {}, {}};
      static const std::string kCluster = "cluster";
      g.cands.push_back(Candidate{c_.name.empty() ? &kCluster : &c_.name, &ix_.all_nodes, 0});
      g.domain_ids.push_back(-1);
      groups.push_back(std::move(g));
    }
  }

  for (Group& g : groups) {
    std::vector<Candidate> feasible;
    int largest = -1;
    std::string largest_name;
    for (size_t i = 0; i < g.cands.size(); ++i) {
      Candidate& cand = g.cands[i];
      // ClusterState's aggregate bounds the usable capacity: skip the O(nodes) count for a
      // domain that can neither hold the job nor beat the largest figure so far.
      if (g.domain_ids[i] >= 0) {
        int bound = state_.FreeGpus(g.domain_ids[i]);
        if (bound < world_ && bound <= largest) continue;
      }
      cand.cap = CapOf(*cand.nodes);
      if (cand.cap > largest) {
        largest = cand.cap;
        largest_name = *cand.name;
      }
      if (cand.cap >= world_) feasible.push_back(cand);
    }
    if (feasible.empty()) {
      if (required && g.level == jc.level) {
        std::string unit = mode_ == Mode::kFlat ? "" : " in TP groups of " + std::to_string(tp_);
        reasons.push_back(
            "needs " + std::to_string(world_) + " GPUs" + unit + " in one " + g.level +
            "; largest free in a" +
            (std::string("aeiou").find(g.level[0]) != std::string::npos ? "n " : " ") + g.level +
            " is " + std::to_string(std::max(largest, 0)) +
            (largest_name.empty() ? "" : " (" + largest_name + ")"));
      }
      continue;
    }
    // Best fit first: fewest spare GPUs, then domain order.
    std::stable_sort(feasible.begin(), feasible.end(),
                     [](const Candidate& a, const Candidate& b) { return a.cap < b.cap; });
    const int max_cands = comm_w_ > 0 || frag_w_ > 0 ? opt_.max_candidate_domains : 1;
    if (static_cast<int>(feasible.size()) > max_cands) feasible.resize(max_cands);
    // Starting plans: the node plugin's plan per candidate domain and, with local search on,
    // balanced plans (the job spread evenly over the m roomiest nodes); the best two by score
    // are refined.
    struct Start {
      double score;
      const Candidate* cand;
      Plan plan;
      Placement p;
      bool away;  // uses nodes beyond the candidate domain
    };
    std::vector<Start> starts;
    const bool refine = RefineOn();
    double home_ms = std::numeric_limits<double>::infinity();
    // Per feasible candidate: its local-search region (RefineRegion), built once when needed.
    std::vector<std::vector<int>> regions(feasible.size());
    auto region_of = [&](const Candidate* cand) -> const std::vector<int>& {
      std::vector<int>& r = regions[static_cast<size_t>(cand - feasible.data())];
      if (r.empty()) r = RefineRegion(*cand->nodes);
      return r;
    };
    for (const Candidate& cand : feasible) {
      std::vector<Plan> plans;
      plans.push_back(MakePlan(*cand.nodes));
      if (refine && !WholeNodesOfOneKind(plans[0])) {
        for (Plan& b : BalancedPlans(*cand.nodes)) plans.push_back(std::move(b));
        for (Plan& b : AnchoredPlans(region_of(&cand), cand.nodes->size())) {
          plans.push_back(std::move(b));
        }
      }
      for (Plan& plan : plans) {
        if (plan.chunks.empty()) continue;
        std::optional<Placement> p = Materialize(plan);
        if (!p) continue;
        bool away = false;
        for (const auto& [n, k] : plan.chunks) {
          away = away || !std::binary_search(cand.nodes->begin(), cand.nodes->end(), n);
        }
        if (!away) home_ms = std::min(home_ms, p->predicted_ms);
        p->domain = *cand.name;
        const double score = Weighted(*p, plan.frag);
        starts.push_back(Start{score, &cand, std::move(plan), std::move(*p), away});
      }
    }
    // Beyond the domain only for real communication time (see Refine).
    starts.erase(std::remove_if(starts.begin(), starts.end(),
                                [&](const Start& st) {
                                  return st.away && !(st.p.predicted_ms < home_ms * 0.99);
                                }),
                 starts.end());
    if (!starts.empty()) {
      // Stable: on equal scores the best-fit plan of the best-fit domain stays first.
      std::stable_sort(starts.begin(), starts.end(),
                       [](const Start& a, const Start& b) { return a.score < b.score; });
      std::string how = "lowest " + g.level + " with room, best fit";
      if (refine) {
        const double before = starts[0].score;
        const size_t n = std::min<size_t>(starts.size(), 2);
        for (size_t i = 0; i < n; ++i) {
          Refine(region_of(starts[i].cand), starts[i].cand->nodes->size(), starts[i].plan,
                 starts[i].p, starts[i].score);
        }
        std::stable_sort(starts.begin(), starts.begin() + static_cast<long>(n),
                         [](const Start& a, const Start& b) { return a.score < b.score; });
        if (starts[0].score < before * (1 - 1e-9)) how += ", refined by local search";
      }
      Start& best = starts[0];
      best.p.contention_note = QuieterNote(best.p, best.score, starts);
      how += best.p.contention_note;
      for (const auto& [n, k] : best.plan.chunks) {
        if (!std::binary_search(best.cand->nodes->begin(), best.cand->nodes->end(), n)) {
          best.p.domain = CommonDomainName(best.plan);
          how += ", beyond " + *best.cand->name + " (faster)";
          break;
        }
      }
      if (out_score) *out_score = best.score;
      return Fitted(std::move(best.p), how, best.cand->cap - world_, best.plan.frag);
    }
  }
  return std::nullopt;
}

bool Search::NodeTakesWork(int node) const {
  return state_.NodeHealth(node) != topo::Health::kUnhealthy && !state_.NodeDrained(node) &&
         (all_profiles_ok_ || profile_ok_[ix_.node_profile[node]]);
}

Verdict Search::Run() {
  ProfileFilter();
  if (job_.Fractional()) return RunFractional();
  return RunWhole();
}

Verdict Search::RunFractional() {
  if (opt_.plugins.shares != "gpu-best-fit") return RunFractionalByNode();
  const int milli = job_.gpu_milli;
  // Best fit over the shared GPUs: least room left after the job, then the fullest node (fewest
  // free GPUs), then node, then GPU.
  int best_node = -1, best_gpu = -1, best_left = 1001, best_free = 0, with_room = 0, most_room = 0;
  state_.ForEachSharedGpu([&](const ClusterState::SharedGpu& sh) {
    if (!NodeTakesWork(sh.node) || state_.GpuHealth(sh.node, sh.gpu) == topo::Health::kUnhealthy) {
      return;
    }
    const int room = 1000 - sh.used_milli;
    most_room = std::max(most_room, room);
    if (room < milli) return;
    ++with_room;
    const int left = room - milli;
    const int free = state_.FreeMask(sh.node).count();
    if (best_node < 0 || std::tie(left, free, sh.node, sh.gpu) <
                             std::tie(best_left, best_free, best_node, best_gpu)) {
      best_left = left;
      best_free = free;
      best_node = sh.node;
      best_gpu = sh.gpu;
    }
  });
  const std::string what = std::to_string(milli) + " milli of one GPU: ";
  if (best_node >= 0) {
    Placement p;
    GpuMask m;
    m.set(best_gpu);
    p.parts.push_back(NodeGpus{best_node, m});
    const int order[1] = {best_gpu};
    const std::vector<int> nics = AssignNics(c_.topology(best_node), order);
    p.ranks.push_back(RankSlot{0, best_node, best_gpu, nics.empty() ? -1 : nics[0]});
    p.domain = c_.nodes[best_node].name;
    p.gpu_milli = milli;
    (void)Score(p);
    const int used_after = 1000 - best_left;
    p.explanation = what + "shared GPU " + std::to_string(best_gpu) + " on node " +
                    c_.nodes[best_node].name + ": " + std::to_string(used_after) +
                    "/1000 milli used after (best fit among " + std::to_string(with_room) +
                    " shared GPU" + (with_room == 1 ? "" : "s") + " with room)";
    Verdict v;
    v.kind = VerdictKind::kFit;
    v.placement = std::move(p);
    return v;
  }
  Verdict v = RunWhole();
  const std::string shared_note =
      state_.SharedGpuCount() == 0
          ? std::string("no GPU is shared yet")
          : "no shared GPU has room (" + std::to_string(state_.SharedGpuCount()) +
                " shared, most room " + std::to_string(most_room) + " milli)";
  if (v.fit()) {
    Placement& p = *v.placement;
    p.gpu_milli = milli;
    const NodeGpus& part = p.parts[0];
    p.explanation = what + "free GPU " + std::to_string(part.gpus.lowest()) + " on node " +
                    c_.nodes[part.node].name + " becomes shared: " + std::to_string(milli) +
                    "/1000 milli used after (" + shared_note + "); " + p.explanation;
    return v;
  }
  v.reasons.insert(v.reasons.begin(), "needs " + what.substr(0, what.size() - 2) + "; " +
                                          shared_note + " and no free GPU fits");
  return v;
}

Verdict Search::RunFractionalByNode() {
  const int milli = job_.gpu_milli;
  const std::string& rule = opt_.plugins.shares;
  struct Shared {
    int node, gpu, room;
  };
  std::vector<Shared> shared;
  state_.ForEachSharedGpu([&](const ClusterState::SharedGpu& sh) {
    if (!NodeTakesWork(sh.node) || state_.GpuHealth(sh.node, sh.gpu) == topo::Health::kUnhealthy) {
      return;
    }
    shared.push_back(Shared{sh.node, sh.gpu, 1000 - sh.used_milli});
  });
  std::sort(shared.begin(), shared.end(), [](const Shared& a, const Shared& b) {
    return std::tie(a.node, a.gpu) < std::tie(b.node, b.gpu);
  });
  // The node: over the nodes that can take the job (a free GPU, or a shared GPU with room).
  int pick = -1;
  int64_t pick_milli = 0;
  int takers = 0;
  size_t at = 0;
  for (int n = 0; n < static_cast<int>(c_.nodes.size()); ++n) {
    int64_t room = 0;
    bool fits = false;
    for (; at < shared.size() && shared[at].node == n; ++at) {
      room += shared[at].room;
      fits = fits || shared[at].room >= milli;
    }
    if (!NodeTakesWork(n)) continue;
    const int free = state_.FreeMask(n).count();
    if (!fits && free == 0) continue;
    ++takers;
    const int64_t node_milli = 1000 * static_cast<int64_t>(free) + room;
    if (pick < 0 || (rule == "node-best-fit" && node_milli < pick_milli) ||
        (rule == "least-allocated" && node_milli > pick_milli)) {
      pick = n;
      pick_milli = node_milli;
    }
    if (rule == "in-order") break;
  }
  const std::string what = std::to_string(milli) + " milli of one GPU: ";
  if (pick < 0) {
    // No node can take it; the 1-GPU path says why (and whether it never can).
    int most_room = 0;
    for (const Shared& sh : shared) most_room = std::max(most_room, sh.room);
    Verdict v = RunWhole();
    if (v.fit()) {  // not expected: RunWhole filters nodes the same way
      v.placement->gpu_milli = milli;
      return v;
    }
    v.reasons.insert(
        v.reasons.begin(),
        "needs " + what.substr(0, what.size() - 2) + "; " +
            (shared.empty() ? std::string("no GPU is shared yet")
                            : "no shared GPU has room (" + std::to_string(shared.size()) +
                                  " shared, most room " + std::to_string(most_room) + " milli)") +
            " and no free GPU fits");
    return v;
  }
  // The GPU on the chosen node: a shared GPU (`chosen`, an index into `shared`) or a free one.
  const GpuMask& free_mask = state_.FreeMask(pick);
  const int lowest_free = free_mask.count() > 0 ? free_mask.lowest() : -1;
  int chosen = -1;
  for (size_t i = 0; i < shared.size(); ++i) {
    const Shared& sh = shared[i];
    if (sh.node != pick || sh.room < milli) continue;
    // In GPU order, so ties (and in-order) keep the lowest-numbered GPU.
    if (chosen < 0 || (rule == "node-best-fit" && sh.room < shared[chosen].room) ||
        (rule == "least-allocated" && sh.room > shared[chosen].room)) {
      chosen = static_cast<int>(i);
    }
  }
  bool open_free = chosen < 0;
  if (rule == "least-allocated" && lowest_free >= 0) open_free = true;
  if (rule == "in-order" && chosen >= 0 && lowest_free >= 0 && lowest_free < shared[chosen].gpu) {
    open_free = true;
  }
  const std::string why = rule + " node " + c_.nodes[pick].name + " (" +
                          std::to_string(pick_milli) + " milli free, " + std::to_string(takers) +
                          " node" + (takers == 1 ? "" : "s") + " could take it)";
  if (!open_free) {
    const Shared& sh = shared[chosen];
    Placement p;
    GpuMask m;
    m.set(sh.gpu);
    p.parts.push_back(NodeGpus{sh.node, m});
    const int order[1] = {sh.gpu};
    const std::vector<int> nics = AssignNics(c_.topology(sh.node), order);
    p.ranks.push_back(RankSlot{0, sh.node, sh.gpu, nics.empty() ? -1 : nics[0]});
    p.domain = c_.nodes[sh.node].name;
    p.gpu_milli = milli;
    (void)Score(p);
    p.explanation = what + "shared GPU " + std::to_string(sh.gpu) + " on node " +
                    c_.nodes[sh.node].name + ": " + std::to_string(1000 - sh.room + milli) +
                    "/1000 milli used after (" + why + ")";
    Verdict v;
    v.kind = VerdictKind::kFit;
    v.placement = std::move(p);
    return v;
  }
  Plan plan;
  plan.chunks.emplace_back(pick, 1);
  std::optional<Placement> p = Materialize(plan);
  if (!p) return RunWhole();  // not expected: the node has a free GPU
  p->domain = c_.nodes[pick].name;
  p->gpu_milli = milli;
  p->explanation = what + "free GPU " + std::to_string(p->parts[0].gpus.lowest()) + " on node " +
                   c_.nodes[pick].name + " becomes shared: " + std::to_string(milli) +
                   "/1000 milli used after (" + why + ")";
  Verdict v;
  v.kind = VerdictKind::kFit;
  v.placement = std::move(*p);
  return v;
}

Verdict Search::RunWhole() {
  const job::LevelConstraint& tpc = job_.constraints.tp;
  const bool tp_required = tpc.mode == ConstraintMode::kRequired;
  std::vector<Mode> modes;
  std::vector<std::string> static_reasons;
  if (tp_ <= 1) {
    modes.push_back(Mode::kFlat);
  } else if (tp_ <= max_node_gpus_) {
    modes.push_back(Mode::kNodeTp);
    if (!tp_required) modes.push_back(Mode::kFlat);
  } else {
    if (tp_required && tpc.level == job::kLevelNode) {
      static_reasons.push_back("tp=" + std::to_string(tp_) +
                               " required node, but the largest node has " +
                               std::to_string(max_node_gpus_) + " GPUs");
    } else if (!c_.nvlink_domains.empty()) {
      modes.push_back(Mode::kNvdTp);
    } else if (tp_required && tpc.level == job::kLevelNvlinkDomain) {
      static_reasons.push_back("tp=" + std::to_string(tp_) +
                               " required nvlink-domain, but the cluster has no NVLink domain "
                               "beyond a node and the largest node has " +
                               std::to_string(max_node_gpus_) + " GPUs");
    }
    if (!tp_required) modes.push_back(Mode::kFlat);
  }

  std::vector<std::string> reasons = static_reasons;
  bool first = true;
  for (Mode m : modes) {
    mode_ = m;
    double single_score = 0;
    bool single_slower = false;
    std::optional<Verdict> single = TrySingleNode(&single_score, &single_slower);
    const job::LevelConstraint& jcon = job_.constraints.job;
    const bool node_wanted = jcon.mode != ConstraintMode::kNone && jcon.level == job::kLevelNode;
    if (single && !(single_slower && RefineOn() && !node_wanted)) return std::move(*single);
    EnsureFiltered();
    SetMode(m);
    if (single) {
      // The one node holds the job only on a slow GPU set: several nodes compete on the score.
      std::vector<std::string> ignored;
      double sc = 0;
      std::optional<Verdict> multi = TryDomains(ignored, &sc);
      if (multi && sc < single_score * (1 - 1e-9)) return std::move(*multi);
      return std::move(*single);
    }
    std::vector<std::string> mode_reasons;
    const job::LevelConstraint& jc = job_.constraints.job;
    if (jc.mode == ConstraintMode::kRequired && jc.level == job::kLevelNode) {
      int largest = 0;
      std::string name;
      for (size_t n = 0; n < nodes_.size(); ++n) {
        if (nodes_[n].cap > largest) {
          largest = nodes_[n].cap;
          name = c_.nodes[n].name;
        }
      }
      mode_reasons.push_back("needs " + std::to_string(world_) +
                             " GPUs on one node (job required node); largest free on a node is " +
                             std::to_string(largest) + (name.empty() ? "" : " (" + name + ")"));
    } else if (auto v = TryDomainsByProfile(mode_reasons)) {
      return std::move(*v);
    }
    if (!first) continue;  // explain in terms of the preferred (first) mode only
    first = false;
    if (m == Mode::kNodeTp) {
      int largest = 0;
      std::string name;
      for (size_t n = 0; n < nodes_.size(); ++n) {
        if (nodes_[n].free > largest) {
          largest = nodes_[n].free;
          name = c_.nodes[n].name;
        }
      }
      if (largest < tp_) {
        reasons.push_back("needs " + std::to_string(tp_) +
                          " GPUs on one node (tp=" + std::to_string(tp_) +
                          (tp_required ? " required " + tpc.level : std::string(" group")) +
                          "); largest free on a node is " + std::to_string(largest) +
                          (name.empty() ? "" : " (" + name + ")"));
      }
    }
    for (std::string& r : mode_reasons) reasons.push_back(std::move(r));
    int total = CapOf(ix_.all_nodes);
    if (total < world_) {
      reasons.push_back("needs " + std::to_string(world_) + " GPUs; " + std::to_string(total) +
                        " usable free in the cluster" +
                        (m == Mode::kFlat
                             ? std::string()
                             : " (in whole TP groups of " + std::to_string(tp_) + ")"));
    }
    reasons.push_back(NodeSummary());
  }
  if (reasons.empty()) reasons.push_back("no domain can hold the job whole");
  Verdict v;
  v.kind = VerdictKind::kUnschedulable;
  v.reasons = std::move(reasons);
  return v;
}

}  // namespace

const std::string& NodeGpuModel(const topo::NodeTopology& t) {
  static const std::string kEmpty;
  if (!t.gpu_model.empty()) return t.gpu_model;
  return t.gpus.empty() ? kEmpty : t.gpus[0].model;
}

bool HasRdma(const topo::NodeTopology& t) {
  for (const topo::Nic& n : t.nics) {
    if (n.health == topo::Health::kUnhealthy) continue;
    if (n.link_layer == topo::LinkLayer::kInfiniBand || n.link_layer == topo::LinkLayer::kRoCE) {
      return true;
    }
  }
  return false;
}

Status ScorePlacement(const cost::CostModel& cost, const job::Layout& l, Placement& p) {
  auto refs = [&](const std::vector<int>& ranks) {
    std::vector<cost::GpuRef> out;
    for (int r : ranks) out.push_back(cost::GpuRef{p.ranks[r].node, p.ranks[r].gpu});
    return out;
  };
  auto time = [&](cost::Collective coll, const std::vector<int>& ranks, int64_t bytes,
                  double* out) -> Status {
    *out = 0;
    if (ranks.size() < 2 || bytes <= 0) return OkStatus();
    ASSIGN_OR_RETURN(cost::Estimate e,
                     cost.Evaluate(coll, refs(ranks), static_cast<double>(bytes)));
    *out = e.time_ms;
    return OkStatus();
  };
  std::vector<int> pp_pair;
  if (l.pp > 1) pp_pair = {0, l.RankOf(0, 0, 1)};
  if (static_cast<int>(p.ranks.size()) != l.WorldSize()) {
    return InvalidArgumentError("placement has " + std::to_string(p.ranks.size()) +
                                " ranks, layout " + std::to_string(l.WorldSize()));
  }
  RETURN_IF_ERROR(time(cost::Collective::kAllReduce, l.DpGroup(0), l.dp_bytes, &p.dp_ms));
  if (cost.cluster().RailsPriced() && l.dp > 1 && l.tp * l.pp > 1 && l.dp_bytes > 0) {
    // Every DP group runs at once and the step waits for the slowest: on a rail-optimised
    // network also price the group with the most DP neighbours on different rails.
    const RailPairs rp = CountRailPairs(cost, l, p.ranks);
    std::vector<int> worst;
    if (rp.crossed > 0) {
      const int first = rp.crossed_by_class[0];
      const auto it = std::max_element(rp.crossed_by_class.begin(), rp.crossed_by_class.end());
      if (*it > first) {
        const int c = static_cast<int>(it - rp.crossed_by_class.begin());
        worst = l.DpGroup(l.RankOf(c % l.tp, 0, c / l.tp));
      }
    }
    double worst_ms = 0;
    RETURN_IF_ERROR(time(cost::Collective::kAllReduce, worst, l.dp_bytes, &worst_ms));
    p.dp_ms = std::max(p.dp_ms, worst_ms);
  }
  RETURN_IF_ERROR(time(cost::Collective::kAllReduce, l.TpGroup(0), l.tp_bytes, &p.tp_ms));
  RETURN_IF_ERROR(time(cost::Collective::kSendRecv, pp_pair, l.pp_bytes, &p.pp_ms));
  p.predicted_ms = p.dp_ms + p.tp_ms + p.pp_ms;
  return OkStatus();
}

NodeRequest NodeRequestFor(const job::Layout& l, int gpus, int tp) {
  NodeRequest req;
  req.gpus = gpus;
  req.tp = tp;
  req.dp_bytes = static_cast<double>(std::max<int64_t>(l.dp_bytes, 0));
  req.tp_bytes = static_cast<double>(std::max<int64_t>(l.tp_bytes, 0));
  return req;
}

const char* VerdictKindName(VerdictKind k) {
  switch (k) {
    case VerdictKind::kFit:
      return "fit";
    case VerdictKind::kUnschedulable:
      return "unschedulable";
    case VerdictKind::kUnresolvable:
      return "unresolvable";
  }
  return "?";
}

std::string Verdict::Explain() const {
  if (placement && kind == VerdictKind::kFit) return placement->explanation;
  std::string s;
  for (const std::string& r : reasons) s += (s.empty() ? "" : "; ") + r;
  return s;
}

double PlacementPlugins::Weight(const std::string& score) const {
  double w = 0;
  for (const ScoreWeight& s : scores) {
    if (s.name == score) w += s.weight;
  }
  return w;
}

Status PlacementPlugins::Validate() const {
  auto one_of = [](const std::string& what, const std::string& v,
                   std::initializer_list<const char*> known) -> Status {
    std::string list;
    for (const char* k : known) {
      if (v == k) return OkStatus();
      list += (list.empty() ? "" : ", ") + std::string(k);
    }
    return InvalidArgumentError("gang: unknown " + what + " plugin \"" + v + "\" (known: " + list +
                                ")");
  };
  RETURN_IF_ERROR(one_of("domain", domain, {"lowest-level", "cluster"}));
  RETURN_IF_ERROR(
      one_of("nodes", nodes, {"best-fit", "least-allocated", "in-order", "spread", "random"}));
  if ((nodes == "spread" || nodes == "random") && (gpus != "first-free" || refine != "none")) {
    return InvalidArgumentError("plugins.nodes \"" + nodes +
                                "\" places GPU by GPU: it needs gpus \"first-free\" and refine "
                                "\"none\"");
  }
  RETURN_IF_ERROR(one_of("gpus", gpus, {"cost-model", "pair-score", "first-free"}));
  RETURN_IF_ERROR(one_of("refine", refine, {"local-search", "none"}));
  RETURN_IF_ERROR(
      one_of("shares", shares, {"gpu-best-fit", "node-best-fit", "least-allocated", "in-order"}));
  for (const ScoreWeight& s : scores) {
    RETURN_IF_ERROR(one_of("score", s.name, {"comm-time", "fragmentation", "contention"}));
    if (!std::isfinite(s.weight) || s.weight < 0) {
      return InvalidArgumentError("gang: weight of score \"" + s.name +
                                  "\" must be finite and >= 0");
    }
  }
  return OkStatus();
}

Status GangPlacerOptions::Validate() const {
  RETURN_IF_ERROR(plugins.Validate());
  if (max_candidate_domains < 1 || max_candidate_domains > 1024) {
    return InvalidArgumentError("gang: max_candidate_domains must be in [1, 1024]");
  }
  if (max_node_evaluations < 1 || max_node_evaluations > 1024) {
    return InvalidArgumentError("gang: max_node_evaluations must be in [1, 1024]");
  }
  if (max_refine_evaluations < 0 || max_refine_evaluations > 100000) {
    return InvalidArgumentError("gang: max_refine_evaluations must be in [0, 100000]");
  }
  if (max_refine_nodes < 1 || max_refine_nodes > 1024) {
    return InvalidArgumentError("gang: max_refine_nodes must be in [1, 1024]");
  }
  return node_select.Validate();
}

GangPlacer::GangPlacer(const topo::Cluster& cluster, Options options)
    : cluster_(&cluster), options_(std::move(options)) {
  scatter_ = options_.plugins.nodes == "spread" ? 1 : options_.plugins.nodes == "random" ? 2 : 0;
  // A pod that cannot be split (see PlaceOn) is placed as "least-allocated" would place it.
  one_pod_options_ = options_;
  one_pod_options_.plugins.nodes = "least-allocated";
}

StatusOr<std::unique_ptr<GangPlacer>> GangPlacer::Create(const topo::Cluster& cluster,
                                                         Options options) {
  RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<GangPlacer> p(new GangPlacer(cluster, options));
  p->cost_ = std::make_unique<cost::CostModel>(cluster, options.cost_model);
  // A busy cluster asks each selector the same (free mask, request) questions over and over.
  p->selection_cache_ = std::make_unique<SelectionCache>();
  for (const topo::HardwareProfile& prof : cluster.profiles) {
    ASSIGN_OR_RETURN(std::unique_ptr<NodeSelector> sel,
                     NodeSelector::Create(prof.topology, CostModelObjective(prof.topology),
                                          options.node_select, p->selection_cache_.get()));
    p->selectors_.push_back(std::move(sel));
  }
  auto ix = std::make_shared<detail::GangIndex>();
  ix->node_profile.resize(cluster.nodes.size());
  ix->all_nodes.resize(cluster.nodes.size());
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    ix->node_profile[n] = cluster.nodes[n].profile;
    ix->all_nodes[n] = static_cast<int>(n);
    ix->max_node_gpus = std::max(
        ix->max_node_gpus, static_cast<int>(cluster.topology(static_cast<int>(n)).gpus.size()));
  }
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    const int d = cluster.nodes[n].domain;
    if (ix->runs.empty() || ix->runs.back().domain != d) {
      ix->runs.push_back(detail::GangIndex::Run{static_cast<int>(n), static_cast<int>(n), d});
    }
    ix->runs.back().end = static_cast<int>(n) + 1;
  }
  for (size_t d = 0; d < cluster.domains.size(); ++d) {
    ix->domain_nodes.push_back(cluster.NodesUnder(static_cast<int>(d)));
  }
  for (const topo::NvlinkDomain& d : cluster.nvlink_domains) {
    std::vector<int> ns = d.nodes;
    std::sort(ns.begin(), ns.end());
    ix->nvd_nodes.push_back(std::move(ns));
  }
  p->index_ = std::move(ix);
  p->baseline_ = std::make_shared<detail::BaselineCache>();
  ASSIGN_OR_RETURN(ClusterState empty, ClusterState::Create(cluster));
  p->empty_ = std::make_unique<ClusterState>(std::move(empty));
  return p;
}

Status GangPlacer::Rescore(const job::JobSpec& job, Placement& p) const {
  return ScorePlacement(*cost_, job.layout, p);
}

double NetworkMs(const Placement& p) { return p.parts.size() > 1 ? p.dp_ms + p.pp_ms : 0.0; }

void AddToLinks(LinkModel& links, const Placement& p) {
  const LinkModel::Usage u = links.UsageOf(p.parts);
  if (u.links.empty()) return;
  links.Add(u, NetworkMs(p) / links.AloneFactor(u));
}

Verdict GangPlacer::PlaceOn(const ClusterState& state, const job::JobSpec& job,
                            const LinkModel* links) const {
  const bool one_pod = job.Fractional() ||
                       job.constraints.job.mode == job::ConstraintMode::kRequired ||
                       job.constraints.tp.mode == job::ConstraintMode::kRequired;
  if (scatter_ != 0 && !one_pod) {
    Verdict v;
    std::optional<Placement> p =
        PlaceScattered(*cost_, state, job,
                       scatter_ == 1 ? ScatterRule::kSpread : ScatterRule::kRandom, options_.seed);
    if (p) {
      v.kind = VerdictKind::kFit;
      v.placement = std::move(p);
    } else {
      v.reasons.push_back("fewer than " + std::to_string(job.total_gpus) +
                          " free GPUs pass the job's filters");
    }
    return v;
  }
  if (scatter_ != 0) {
    Search s(*cluster_, state, job, one_pod_options_, *cost_, selectors_, *index_, *baseline_,
             links);
    return s.Run();
  }
  Search s(*cluster_, state, job, options_, *cost_, selectors_, *index_, *baseline_, links);
  return s.Run();
}

Verdict GangPlacer::Place(const ClusterState& state, const job::JobSpec& job,
                          const LinkModel* links) const {
  Verdict bad;
  bad.kind = VerdictKind::kUnresolvable;
  if (Status st = job.Validate(); !st.ok()) {
    bad.reasons.push_back(st.message());
    return bad;
  }
  std::vector<std::string> level_names;
  for (const topo::NetworkLevel& l : cluster_->levels) level_names.push_back(l.name);
  if (Status st = job.ValidateAgainstLevels(level_names); !st.ok()) {
    bad.reasons.push_back(st.message());
    return bad;
  }
  if (&state.cluster() != cluster_) {
    bad.reasons.push_back("the state belongs to another cluster");
    return bad;
  }
  // The same job on the empty cluster: the reference time, and the test for "never fits".
  double best_ms = 0;
  std::vector<std::string> best_reasons;
  const bool best_fit = BestOnEmpty(job, &best_ms, &best_reasons);
  if (!best_fit) {
    bad.reasons.push_back("never fits this cluster, even empty");
    for (const std::string& r : best_reasons) bad.reasons.push_back(r);
    return bad;
  }
  Verdict v = PlaceOn(state, job, links);
  if (v.fit()) {
    v.placement->best_possible_ms = best_ms;
    v.placement->explanation +=
        "; best possible " + Fmt("%.3f", v.placement->best_possible_ms) + " ms";
  }
  return v;
}

std::optional<double> GangPlacer::BestPossibleMs(const job::JobSpec& job) const {
  double ms = 0;
  std::vector<std::string> reasons;
  if (!BestOnEmpty(job, &ms, &reasons)) return std::nullopt;
  return ms;
}

bool GangPlacer::BestOnEmpty(const job::JobSpec& job, double* best_ms,
                             std::vector<std::string>* best_reasons) const {
  // Only the figure (or the reasons) are copied out of the cache, not the whole placement.
  const std::string key = PlacementShapeKey(job);
  bool known = false, best_fit = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = best_.find(key);
    if (it != best_.end()) {
      known = true;
      best_fit = it->second.fit();
      if (best_fit) {
        *best_ms = it->second.placement->predicted_ms;
      } else {
        *best_reasons = it->second.reasons;
      }
    }
  }
  if (!known) {
    Verdict b = PlaceOn(*empty_, job);
    best_fit = b.fit();
    if (best_fit) {
      *best_ms = b.placement->predicted_ms;
    } else {
      *best_reasons = b.reasons;
    }
    std::lock_guard<std::mutex> lock(mu_);
    best_.emplace(key, std::move(b));
  }
  return best_fit;
}

}  // namespace toposched::sched
