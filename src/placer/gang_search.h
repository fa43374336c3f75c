// The gang placer's search, inside the sched module only: the lookups built once per cluster
// (detail::GangIndex, detail::BaselineCache), the plan helpers, and Search, the state of one
// GangPlacer::Place call. Its methods live in files by responsibility:
//   gang_search.cc       filters, plans, materializing and scoring a plan, whole-GPU search
//   gang_domains.cc      the single-node and per-domain candidates (TrySingleNode, TryDomains)
//   gang_refine.cc       when local search runs, and where it may move GPUs
//   gang_rails.cc        one node aligned to rails (the rail plugin asks), the rail note
//   gang_score.cc        the weighted score terms, fits and explanations
//   gang_fractional.cc   fractional GPU shares
// The choice points are plugin objects it calls (sched/*_plugins.h); the refine and rail plugins
// work on the search through RefineHandle and RailHandle (a RefineHandle with more), and the rail
// plugin's plans, placements and polish on shared rails live in its files (sched/rail_*.h).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "placer/job_views.h"
#include "placer/node_order.h"
#include "placer/options.h"
#include "placer/scatter.h"
#include "plugins/domain_plugins.h"
#include "plugins/gpu_plugins.h"
#include "plugins/node_plugins.h"
#include "plugins/price.h"
#include "plugins/rail_plugins.h"
#include "plugins/refine_plugins.h"
#include "plugins/score_plugins.h"
#include "plugins/share_plugins.h"
#include "select/pair_score.h"
#include "select/rank_order.h"
#include "state/link_model.h"

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
  std::vector<int> profile_node;               // per profile: its first node (-1: none)
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
  // ImproveNodeOrder's results by (profile, NVLink domain or -1, layout, the selector's order):
  // a scheduler pass asks for the same few sets of a profile over and over. Cleared past
  // kMaxScores.
  std::unordered_map<std::string, std::vector<int>> node_orders;
  // The times of the groups the search's scores of placements spanning nodes price
  // (plugins/price.h). One-node scores are kept whole in single_node_scores instead.
  GroupTimes group_times;
};
}  // namespace detail

namespace gang_internal {

using job::ConstraintMode;

inline std::string Fmt(const char* fmt, double v) {
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

// Per-node view for one Place call (the GPUs the job may use there are Search::cap_).
struct NodeView {
  bool eligible = false;  // passes health/drain/model/rdma
  int free = 0;           // free GPUs (0 when not eligible)
};

using Candidate = DomainCandidate;

using Plan = GangPlan;

// The search is the refine and rail plugins' handle (plugins/refine_plugins.h,
// plugins/rail_plugins.h).
class Search final : public RailHandle {
 public:
  Search(const topo::Cluster& cluster, const ClusterState& state, const job::JobSpec& job,
         const GangPlacerOptions& options, const TypedPlugins& plugins, const cost::CostModel& cost,
         const std::vector<std::unique_ptr<NodeSelector>>& selectors,
         const detail::GangIndex& index, detail::BaselineCache& baseline, const LinkModel* links,
         double dp_hide_factor = 0)
      : c_(cluster),
        state_(state),
        job_(job),
        opt_(options),
        limits_{options.max_refine_evaluations, options.max_refine_nodes,
                options.ranks_in_node_blocks},
        plug_(plugins),
        cost_(cost),
        selectors_(selectors),
        ix_(index),
        baseline_(baseline),
        world_(job.layout.WorldSize()),
        tp_(job.layout.tp),
        max_node_gpus_(index.max_node_gpus),
        comm_w_(plugins.weight(ScoreTerm::kCommTime)),
        frag_w_(plugins.weight(ScoreTerm::kFragmentation)),
        cont_w_(links ? plugins.weight(ScoreTerm::kContention) : 0.0),
        links_(cont_w_ > 0 ? links : nullptr),
        dp_hide_factor_(dp_hide_factor) {}

  Verdict Run();

  // RefineHandle and RailHandle.
  const topo::Cluster& cluster() const override { return c_; }
  const cost::CostModel& cost() const override { return cost_; }
  const job::Layout& layout() const override { return job_.layout; }
  const SearchLimits& limits() const override { return limits_; }
  int unit() const override { return mode_ == Mode::kNodeTp ? tp_ : 1; }
  int FreeOn(int node) const override { return nodes_[node].free; }
  std::span<const int> Caps() const override { return cap_; }
  int ProfileOf(int node) const override { return ix_.node_profile[node]; }
  const GpuMask& FreeMaskOf(int node) const override { return state_.FreeMask(node); }
  bool Settled(const Plan& plan) const override { return WholeNodesOfOneKind(plan); }
  std::optional<Placement> Build(const Plan& plan) const override { return Materialize(plan); }
  double ScoreOf(const Placement& p, int frag) const override { return Weighted(p, frag); }
  bool RailsAligned() const override { return plug_.rails->aligns() && c_.RailsPriced(); }
  bool AlignNode(int node, int k, const std::vector<std::vector<int>>& want,
                 std::vector<int>& order) const override {
    return AlignRails(node, ChunkRequest(k), want, order);
  }
  int MaxNodeGpus() const override { return max_node_gpus_; }
  int GpusOn(int node) const override { return state_.GpuCount(node); }
  bool GpusPriced() const override { return plug_.gpus->priced(); }
  bool TpInNvlinkDomains() const override { return mode_ == Mode::kNvdTp; }
  bool Rescore(const Plan& plan, Placement& q) const override { return ScoreRanks(plan, q); }
  bool Price(Placement& p) const override { return Score(p); }

 private:
  Verdict RunWhole();
  // A fractional job, where the `shares` plugin says (plugins/share_plugins.h).
  Verdict RunFractional();
  // What the share plugin sees: the shared GPUs of nodes that take work, every node's free GPUs.
  ShareView MakeShareView() const;
  // The job on shared GPU `sh`, `why` in the explanation.
  Verdict OnSharedGpu(const ShareView::Shared& sh, const std::string& why) const;
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
  // The choice of k free GPUs of a node by a GPU plugin that is not priced ("first-free",
  // "pair-score"), ascending; a costly plugin's answers cached by (profile, free set, k).
  std::vector<int> BaselineGpus(int node, int k) const;
  // Rail alignment of one node's ranks (cluster with rails, "cost-model" GPU choice).
  // `order` holds the node's GPUs in rank order; `want[i]` the rails its i-th rank's peers on
  // other nodes use (for DP, those of its DP class: the same TP index and PP stage). Among
  // reorderings of the set, and sets of other free GPUs of the node, that are no slower inside
  // the node (DP AllReduce over the set plus the slowest TP group in this order) and, for
  // another set, use as many distinct NICs, takes the one where the most ranks share a rail
  // with their peers; the same set wins ties. True when `order` changed.
  bool AlignRails(int node, const NodeRequest& req, const std::vector<std::vector<int>>& want,
                  std::vector<int>& order) const;
  // "; DP neighbours across nodes on one rail: A/B" — B pairs of ranks r-TP, r (the same TP
  // index and stage, consecutive DP indexes) on different nodes, A of them with a common rail
  // among their nearest NICs. Empty without rails or such pairs.
  std::string RailNote(const Placement& p) const;
  // Rebuilds q.parts from q.ranks under `plan` and scores q.
  bool ScoreRanks(const Plan& plan, Placement& q) const;
  // What one node of a plan runs: `k` GPUs, TP groups inside it when the mode puts them there.
  NodeRequest ChunkRequest(int k) const {
    return NodeRequestFor(job_.layout, k, (mode_ == Mode::kNodeTp && tp_ > 1) ? tp_ : 1);
  }
  bool Score(Placement& p) const;
  // The caches' key for the job on one node before its GPUs: (profile, NVLink domain or -1,
  // layout); such a placement's score and order depend on nothing else.
  std::string OneNodeKey(int node) const;
  // The job whole on `node` in `order` (the selector's): where the layout makes the order matter
  // (NodeOrderMatters), ImproveNodeOrder's order, cached; else `order`.
  std::vector<int> NodeOrder(int node, const std::vector<int>& order) const;
  // What the node selector's choice of the whole job on `node` is worth: its predicted_ms, or,
  // where the order matters, the job's predicted time on the set in NodeOrder's order (the
  // selector's request prices neither pipeline sends nor strided DP groups).
  double ChoiceMs(int node, const NodeChoice& ch) const;
  // The weighted score of a scored placement that leaves `frag` GPUs free on partly used
  // nodes: the policy's score plugins (comm-time, fragmentation and, with link loads,
  // contention), weight × Ms summed in ScoreTerm order.
  double Weighted(const Placement& p, int frag) const;
  // The same for the job whole on one node before its placement is built: `predicted_ms` there
  // (no link is shared). At predicted_ms 0, a lower bound of any such node's score.
  double WeightedMs(double predicted_ms, int frag) const;
  double Summed(const ScoreInput& in) const;
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
  // TrySingleNode's steps. The job whole on `node`, `left` GPUs left free there (*score_out: its
  // weighted score, when given).
  std::optional<Verdict> NodeVerdict(int node, int left, const std::string& how, double* score_out);
  // The node plugin's own choice of one node (its OneNode: "least-allocated", "in-order").
  std::optional<Verdict> NodeByPlugin();
  // The first node with the fewest free GPUs that hold the job (-1: none); *best_free its count.
  int FirstBestFitNode(int* best_free) const;
  // Of the nodes with best_free free GPUs from `first` on, the one whose GPU set the selector
  // predicts fastest, each distinct (profile, free mask) asked once (-1: none); *chosen_ms.
  int FastestBestFitNode(int first, int best_free, double* chosen_ms) const;
  // The job's time on a whole free node of the fastest allowed profile (infinity: none holds it).
  double IdealNodeMs() const;
  // Nodes with more free GPUs than best_free against *chosen on comm-time + fragmentation.
  void RoomierNodeByScore(int best_free, double chosen_ms, int* chosen, int* chosen_left) const;
  // The lowest level with a domain that holds the job; *score is the winner's weighted score.
  std::optional<Verdict> TryDomains(std::vector<std::string>& reasons, double* score);
  // TryDomains' steps. The candidate domains, one group per level, lowest first (the job's
  // required level only, or its NVLink domains; "cluster" last where the tree has no one root).
  // The domain plugin's groups (plugins/domain_plugins.h).
  using DomainGroup = sched::DomainGroup;
  std::vector<DomainGroup> DomainGroups() const;
  // The candidates of `g` with room for the job (their cap filled in); when none has and `g` is
  // the job's required level, the reason in numbers.
  std::vector<Candidate> FeasibleCandidates(DomainGroup& g,
                                            std::vector<std::string>& reasons) const;
  // The best placement over `feasible` (one level's): starting plans per domain, the best two
  // distinct plans refined (the same plan made for two domains is refined once); nullopt when
  // no plan materialises.
  // `why` replaces "lowest <level> with room, best fit" in the explanation when given.
  std::optional<Verdict> BestOfGroup(const std::string& level, std::vector<Candidate>& feasible,
                                     double* out_score, const std::string& why = "");
  // The group of the rails' scope level above groups[below] when rails are priced (rails "align")
  // and the job spans nodes (-1: none): it competes with the lowest domain (see TryDomains).
  int RailScopeGroup(const std::vector<DomainGroup>& groups, size_t below) const;
  // TryDomains, and on a cluster of several hardware profiles also with the nodes of each
  // profile alone (with a refine plugin that refines: RefineOn); the best weighted score wins.
  std::optional<Verdict> TryDomainsByProfile(std::vector<std::string>& reasons);
  bool RefineOn() const;
  // More than 8 whole free nodes of one profile under one leaf: other count vectors only add
  // nodes or leaves, so such a plan is neither refined nor given competing starts.
  bool WholeNodesOfOneKind(const Plan& plan) const;
  // Where local search may move GPUs: the domain's nodes first, then, unless the job requires a
  // network level, every other node.
  std::vector<int> RefineRegion(const std::vector<int>& domain_nodes) const;
  // The name of the lowest network domain that holds every node of the plan.
  std::string CommonDomainName(const Plan& plan) const;
  Verdict Fitted(Placement p, const std::string& where, int spare, int frag) const;
  std::string NodeSummary() const;
  bool PreferredMet(const Placement& p) const;

  const topo::Cluster& c_;
  const ClusterState& state_;
  const job::JobSpec& job_;
  const GangPlacerOptions& opt_;  // limits and seeds; the plugins are plug_
  const SearchLimits limits_;     // opt_'s limits, as the refine and rail plugins read them
  const TypedPlugins& plug_;
  const cost::CostModel& cost_;
  const std::vector<std::unique_ptr<NodeSelector>>& selectors_;
  const detail::GangIndex& ix_;
  detail::BaselineCache& baseline_;
  const int world_;
  const int tp_;
  const int max_node_gpus_;
  const double comm_w_, frag_w_, cont_w_;
  const LinkModel* links_;       // null unless the contention score is on
  const double dp_hide_factor_;  // GangPlacer::Place's; 0 = all DP time exposed
  Mode mode_ = Mode::kFlat;
  bool filtered_ = false;
  std::vector<NodeView> nodes_;  // built by Filter only when the single-node path fails
  // Per node, the GPUs the job may use under the mode (free rounded down to TP for kNodeTp; 0
  // where it may not go): apart from nodes_ so that the plugins read it as one array (Caps).
  std::vector<int> cap_;
  std::vector<uint8_t> profile_ok_;
  bool all_profiles_ok_ = true;
  // Filter counts, for explanations.
  int n_unhealthy_ = 0, n_drained_ = 0, n_model_ = 0, n_rdma_ = 0;
};

}  // namespace gang_internal
}  // namespace toposched::sched
