#include "sched/ilp_oracle.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "core/enum_names.h"
#include "placer/node_order.h"
#include "select/objective.h"
#include "select/rank_order.h"

namespace toposched::sched::ilp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Milliseconds to move `bytes` at `gbps` GB/s (the cost model's convention; 0 at +inf).
double Ms(double bytes, double gbps) {
  if (std::isinf(gbps)) return 0;
  return gbps > 0 ? bytes / (gbps * 1e9) * 1e3 : kInf;
}

// Largest per-island traffic of NCCL's double binary tree over `ni` islands (the cost model's
// tree: traffic[i] = half the tree edges at island i, summed over both trees).
double MaxTreeTraffic(int ni) {
  std::vector<std::vector<int>> parent(2, std::vector<int>(ni, -1));
  std::function<void(std::vector<int>&, int, int, int)> build = [&](std::vector<int>& par, int lo,
                                                                    int hi, int up) {
    if (lo >= hi) return;
    int mid = (lo + hi) / 2;
    par[mid] = up;
    build(par, lo, mid, mid);
    build(par, mid + 1, hi, mid);
  };
  build(parent[0], 0, ni, -1);
  std::vector<int> tmp(ni, -1);
  build(tmp, 0, ni, -1);
  for (int pos = 0; pos < ni; ++pos)
    parent[1][ni - 1 - pos] = tmp[pos] < 0 ? -1 : ni - 1 - tmp[pos];
  std::vector<double> traffic(ni, 0);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < ni; ++i) {
      if (parent[t][i] < 0) continue;
      traffic[i] += 0.5;
      traffic[parent[t][i]] += 0.5;
    }
  }
  return *std::max_element(traffic.begin(), traffic.end());
}

// A thin builder over a GLPK problem (minimisation).
class Model {
 public:
  Model() : p_(glp_create_prob()) { glp_set_obj_dir(p_, GLP_MIN); }
  ~Model() { glp_delete_prob(p_); }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  int Binary(double obj = 0) {
    int j = glp_add_cols(p_, 1);
    glp_set_col_kind(p_, j, GLP_BV);
    glp_set_obj_coef(p_, j, obj);
    return j;
  }
  int Continuous(double obj = 0) {  // ≥ 0
    int j = glp_add_cols(p_, 1);
    glp_set_col_bnds(p_, j, GLP_LO, 0, 0);
    glp_set_obj_coef(p_, j, obj);
    return j;
  }
  using Terms = std::vector<std::pair<int, double>>;
  void Row(const Terms& t, int type, double lo, double hi) {
    int i = glp_add_rows(p_, 1);
    std::vector<int> ind(1);
    std::vector<double> val(1);
    std::map<int, double> merged;
    for (const auto& [c, v] : t) merged[c] += v;
    for (const auto& [c, v] : merged) {
      if (v == 0) continue;
      ind.push_back(c);
      val.push_back(v);
    }
    glp_set_mat_row(p_, i, static_cast<int>(ind.size()) - 1, ind.data(), val.data());
    glp_set_row_bnds(p_, i, type, lo, hi);
  }
  void Ge(const Terms& t, double lo) { Row(t, GLP_LO, lo, 0); }
  void Le(const Terms& t, double hi) { Row(t, GLP_UP, 0, hi); }
  void Eq(const Terms& t, double v) { Row(t, GLP_FX, v, v); }

  // Solves to proven optimality (mip_gap 0). False with a reason when GLPK does not prove it.
  bool Solve(double time_limit_s, bool* infeasible, std::string* reason) {
    *infeasible = false;
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    parm.br_tech = GLP_BR_LFV;  // fastest on these programs in a quick comparison
    parm.bt_tech = GLP_BT_BPH;
    parm.tm_lim = static_cast<int>(time_limit_s * 1000);
    int rc = glp_intopt(p_, &parm);
    if (rc == GLP_ENOPFS) {
      *infeasible = true;
      return true;
    }
    if (rc != 0) {
      *reason = "glp_intopt returned " + std::to_string(rc);
      return false;
    }
    int st = glp_mip_status(p_);
    if (st == GLP_NOFEAS) {
      *infeasible = true;
      return true;
    }
    if (st != GLP_OPT) {
      *reason = "GLPK did not prove optimality (status " + std::to_string(st) + ")";
      return false;
    }
    return true;
  }
  void Constant(double c) { glp_set_obj_coef(p_, 0, glp_get_obj_coef(p_, 0) + c); }
  void Fix(int j, double v) { glp_set_col_bnds(p_, j, GLP_FX, v, v); }
  void Obj(int j, double coef) { glp_set_obj_coef(p_, j, glp_get_obj_coef(p_, j) + coef); }
  double Value(int j) const { return glp_mip_col_val(p_, j); }
  double Objective() const { return glp_mip_obj_val(p_); }

 private:
  glp_prob* p_;
};

// What a node contributes to a DP group's AllReduce when `m` of the group's GPUs sit on it
// (CostModel::Prepare's island fields for a one-node island).
struct Island {
  int node = 0, ki = 0, m = 0;
  int col = 0;
  double ring_gbps = kInf, sum_latency_us = 0, chain_gbps = kInf;
  double net_gbps = 0, net_latency_us = 0;
};

}  // namespace

namespace {

constexpr EnumName<OracleStatus> kOracleStatusNames[] = {
    {OracleStatus::kOptimal, "optimal"}, {OracleStatus::kUnproven, "unproven"},
    {OracleStatus::kNoFit, "no-fit"},    {OracleStatus::kUnsupported, "unsupported"},
    {OracleStatus::kError, "error"},
};

}  // namespace

const char* OracleStatusName(OracleStatus s) { return NameOf(kOracleStatusNames, s, "?"); }

cost::CostModelOptions OracleCostOptions() {
  cost::CostModelOptions o;
  o.allow_nvls_tree = false;
  return o;
}

StatusOr<std::unique_ptr<IlpOracle>> IlpOracle::Create(const topo::Cluster& cluster,
                                                       NodeSelectOptions node_select) {
  std::unique_ptr<IlpOracle> o(new IlpOracle(cluster));
  o->cost_ = std::make_unique<cost::CostModel>(cluster, OracleCostOptions());
  for (const topo::HardwareProfile& prof : cluster.profiles) {
    ASSIGN_OR_RETURN(
        std::unique_ptr<NodeSelector> sel,
        NodeSelector::Create(prof.topology, CostModelObjective(prof.topology), node_select));
    o->selectors_.push_back(std::move(sel));
  }
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    o->max_node_gpus_ = std::max(
        o->max_node_gpus_, static_cast<int>(cluster.topology(static_cast<int>(n)).gpus.size()));
  }
  return o;
}

bool IlpOracle::Score(const job::JobSpec& job, Placement& p) const {
  // The gang placer's own scoring, so both sides are compared on the same figure.
  return ScorePlacement(*cost_, job.layout, p).ok();
}

std::optional<Placement> IlpOracle::Materialize(const ClusterState& state, const job::JobSpec& job,
                                                const std::vector<int>& counts, int tp_unit) const {
  Placement p;
  int rank = 0;
  for (size_t n = 0; n < counts.size(); ++n) {
    const int k = counts[n];
    if (k == 0) continue;
    const int node = static_cast<int>(n);
    const NodeRequest req = NodeRequestFor(job.layout, k, tp_unit > 1 ? tp_unit : 1);
    auto choice = selectors_[cluster_->nodes[node].profile]->Select(state.FreeMask(node), req);
    if (!choice.ok() || (*choice)->fit != Fit::kFit ||
        static_cast<int>((*choice)->order.size()) != k) {
      return std::nullopt;
    }
    const NodeChoice& ch = **choice;
    p.parts.push_back(NodeGpus{node, ch.gpus});
    if (k == job.layout.WorldSize() && NodeOrderMatters(job.layout)) {
      const std::vector<int> order = ImproveNodeOrder(*cost_, job.layout, node, ch.order);
      const std::vector<int> nics = AssignNics(cluster_->topology(node), order);
      for (int i = 0; i < k; ++i) p.ranks.push_back(RankSlot{rank++, node, order[i], nics[i]});
      continue;
    }
    for (int i = 0; i < k; ++i) {
      int nic = i < static_cast<int>(ch.layout.ranks.size()) ? ch.layout.ranks[i].nic : -1;
      p.ranks.push_back(RankSlot{rank++, node, ch.order[i], nic});
    }
  }
  if (rank != job.layout.WorldSize()) return std::nullopt;
  if (!Score(job, p)) return std::nullopt;
  return p;
}

std::optional<OracleResult> IlpOracle::CheckFamily(const ClusterState& state,
                                                   const job::JobSpec& job, int* tp_unit) const {
  OracleResult r;
  for (const topo::ClusterNode& n : cluster_->nodes) {
    if (n.nvlink_domain >= 0) {
      r.status = OracleStatus::kUnsupported;
      r.reason = "multi-node NVLink domains are outside the oracle's family";
      return r;
    }
  }
  const int tp = job.layout.tp;
  const int world = job.layout.WorldSize();
  if (tp > max_node_gpus_) {
    r.status = OracleStatus::kUnsupported;
    r.reason = "TP larger than a node";
    return r;
  }
  const int t = tp > 1 ? tp : 1;
  int64_t cap = 0, free = 0;
  for (size_t n = 0; n < cluster_->nodes.size(); ++n) {
    const int node = static_cast<int>(n);
    if (state.NodeHealth(node) == topo::Health::kUnhealthy || state.NodeDrained(node)) continue;
    const int f = state.FreeMask(node).count();
    free += f;
    cap += f / t * t;
  }
  *tp_unit = t;
  if (cap >= world) return std::nullopt;
  r.tp_unit = t;
  if (free >= world) {
    r.status = OracleStatus::kUnsupported;
    r.reason = "fits only with TP groups spanning nodes (the placer's fallback)";
  } else {
    r.status = OracleStatus::kNoFit;
    r.reason = "not enough free GPUs";
  }
  return r;
}

OracleResult IlpOracle::BruteForce(const ClusterState& state, const job::JobSpec& job) const {
  int t = 1;
  if (auto r = CheckFamily(state, job, &t)) return *r;
  const int world = job.layout.WorldSize();
  const int n_nodes = static_cast<int>(cluster_->nodes.size());
  std::vector<int> cap(n_nodes, 0);
  for (int n = 0; n < n_nodes; ++n) {
    if (state.NodeHealth(n) == topo::Health::kUnhealthy || state.NodeDrained(n)) continue;
    cap[n] = state.FreeMask(n).count() / t * t;
  }
  OracleResult best;
  best.status = OracleStatus::kNoFit;
  best.tp_unit = t;
  std::vector<int> counts(n_nodes, 0);
  std::function<void(int, int)> rec = [&](int n, int rest) {
    if (n == n_nodes) {
      if (rest != 0) return;
      ++best.iterations;
      std::optional<Placement> p = Materialize(state, job, counts, t);
      if (p && (!best.placement || p->predicted_ms < best.placement->predicted_ms)) {
        best.placement = std::move(p);
        best.counts = counts;
        best.status = OracleStatus::kOptimal;
      }
      return;
    }
    for (int k = 0; k <= std::min(cap[n], rest); k += t) {
      counts[n] = k;
      rec(n + 1, rest - k);
    }
    counts[n] = 0;
  };
  rec(0, world);
  if (best.placement) best.lower_bound_ms = best.placement->predicted_ms;
  return best;
}

namespace {

// One program per way the DP AllReduce can run; the bound of a solution is the smallest of the
// programs' optima. kPlain: no DP term (DP = 1); kSingle: the DP group on the first node.
enum class Variant { kPlain, kSingle, kRing, kTree, kHier };

// Everything the programs share, computed once per Solve.
struct Shared {
  int N = 0, W = 0, DP = 1, S = 1, t = 1;
  double dp_bytes = 0, tp_bytes = 0, pp_bytes = 0;
  bool has_dp = false, has_tp = false, has_pp = false;
  double base_ms = 0;
  std::vector<std::vector<int>> K;                      // allowed counts per node, K[n][0] = 0
  std::vector<std::vector<std::vector<int>>> order;     // [n][ki] NodeSelector's rank order
  std::vector<std::vector<double>> tp_ms;               // [n][ki] first node's TP group
  std::vector<std::vector<double>> single_dp_ms;        // [n][ki] DP group on the node (K ≥ S)
  std::vector<std::vector<std::vector<double>>> pp_ms;  // [n][ki][n2] rank 0 → rank S on n2
  std::vector<Island> islands;
  // DP bounds over several nodes.
  double tr = 0, lat_min = 0, ov = 1, t3 = 1, big_l = 1;
  bool has_ml = false, has_t3 = false;
  int max_islands = 0;
  std::vector<double> net_values;  // distinct island network GB/s, descending
  std::set<int> leaves;
};

struct Program {
  Variant variant = Variant::kPlain;
  std::unique_ptr<Model> md;
  std::vector<std::vector<int>> x;
  bool solved = false, feasible = false;
  double value = 0;
  std::vector<int> chosen;  // ki per node of the optimum
};

// Builds one program, one group of columns and rows per step. Each step adds its columns and rows
// in a fixed order, and Build calls the steps in a fixed order: that order is GLPK's numbering of
// the columns, which its branching follows, so a step moved changes the search (not the optimum).
class ProgramBuilder {
 public:
  ProgramBuilder(const Shared& sh, const topo::Cluster& cluster, Program& pr)
      : sh_(sh),
        cluster_(cluster),
        K_(sh.K),
        md_(*pr.md),
        x_(pr.x),
        n_isl_(static_cast<double>(sh.islands.size()) + 1) {}

  // x[n][ki]: node n holds K[n][ki] GPUs. One count per node; the counts sum to the world size.
  void Counts() {
    x_.assign(sh_.N, {});
    Model::Terms world_row;
    for (int n = 0; n < sh_.N; ++n) {
      Model::Terms one;
      for (size_t ki = 0; ki < K_[n].size(); ++ki) {
        x_[n].push_back(md_.Binary());
        one.push_back({x_[n][ki], 1});
        world_row.push_back({x_[n][ki], static_cast<double>(K_[n][ki])});
      }
      md_.Eq(one, 1);
    }
    md_.Eq(world_row, sh_.W);
  }

  // g[n][ki]: node n is the first node used (holds rank 0), with K[n][ki] GPUs. `single_`: the
  // g that hold the whole of stage 0 (K ≥ S).
  void FirstNode() {
    const int N = sh_.N;
    g_.assign(N, {});
    Model::Terms g_sum;
    for (int n = 0; n < N; ++n) {
      g_[n].push_back(0);
      for (size_t ki = 1; ki < K_[n].size(); ++ki) {
        g_[n].push_back(md_.Binary());
        md_.Le({{g_[n][ki], 1}, {x_[n][ki], -1}}, 0);
        g_sum.push_back({g_[n][ki], 1});
        if (K_[n][ki] >= sh_.S) single_.push_back({g_[n][ki], 1});
      }
    }
    md_.Eq(g_sum, 1);
    for (int n = 0; n < N; ++n) {
      if (K_[n].size() < 2) continue;
      for (int m = 0; m < n; ++m) {  // nothing before the first node: Σ_k g[n] ≤ x[m][0]
        Model::Terms r;
        for (size_t ki = 1; ki < K_[n].size(); ++ki) r.push_back({g_[n][ki], 1});
        r.push_back({x_[m][0], -1});
        md_.Le(r, 0);
      }
    }
  }

  // TP: rank 0's TP group is the first t GPUs of the first node (exact).
  void TpTerm() {
    if (!sh_.has_tp) return;
    for (int n = 0; n < sh_.N; ++n) {
      for (size_t ki = 1; ki < K_[n].size(); ++ki) md_.Obj(g_[n][ki], sh_.tp_ms[n][ki]);
    }
  }

  // PP: rank 0 (first node) sends to rank S (node h); exact by a product of g and h.
  void PpTerm() {
    if (!sh_.has_pp) return;
    const int N = sh_.N;
    std::vector<int> h(N, 0);
    Model::Terms h_sum;
    for (int n = 0; n < N; ++n) {
      if (K_[n].size() < 2) continue;
      h[n] = md_.Binary();
      h_sum.push_back({h[n], 1});
      Model::Terms before, upto;
      for (int m = 0; m <= n; ++m) {
        for (size_t ki = 1; ki < K_[m].size(); ++ki) {
          if (m < n) before.push_back({x_[m][ki], static_cast<double>(K_[m][ki])});
          upto.push_back({x_[m][ki], static_cast<double>(K_[m][ki])});
        }
      }
      before.push_back({h[n], static_cast<double>(sh_.W)});
      md_.Le(before, sh_.S + sh_.W);  // h_n → GPUs before n ≤ S
      upto.push_back({h[n], -(sh_.S + 1.0)});
      md_.Ge(upto, 0);  // h_n → GPUs up to n ≥ S + 1
    }
    md_.Eq(h_sum, 1);
    for (int n = 0; n < N; ++n) {
      for (size_t ki = 1; ki < K_[n].size(); ++ki) {
        double c_max = 0;
        for (int n2 = 0; n2 < N; ++n2) {
          if (h[n2]) c_max = std::max(c_max, sh_.pp_ms[n][ki][n2]);
        }
        const int v = md_.Continuous(1);
        Model::Terms r{{v, 1}, {g_[n][ki], -c_max}};
        for (int n2 = 0; n2 < N; ++n2) {
          if (h[n2]) r.push_back({h[n2], -sh_.pp_ms[n][ki][n2]});
        }
        md_.Ge(r, -c_max);
      }
    }
  }

  // The DP group on the first node (exact).
  void SingleNodeDp() {
    md_.Eq(single_, 1);
    for (int n = 0; n < sh_.N; ++n) {
      for (size_t ki = 1; ki < K_[n].size(); ++ki) {
        if (K_[n][ki] >= sh_.S) md_.Obj(g_[n][ki], sh_.single_dp_ms[n][ki]);
      }
    }
  }

  // The DP group over several nodes: d[j], island j holds part of it, on a node whose count it
  // matches (with `hier`, only islands of ≥ 2: hierarchical needs ≥ 2 of the group on every node).
  void DpIslands(bool hier) {
    md_.Eq(single_, 0);
    d_.assign(sh_.islands.size(), 0);
    std::map<std::pair<int, int>, Model::Terms> per_count;  // (n, ki) → its island columns
    for (size_t j = 0; j < sh_.islands.size(); ++j) {
      const Island& is = sh_.islands[j];
      if (hier && is.m < 2) continue;
      d_[j] = md_.Binary();
      per_count[{is.node, is.ki}].push_back({d_[j], 1});
    }
    for (auto& [key, terms] : per_count) {
      terms.push_back({x_[key.first][key.second], -1});
      md_.Le(terms, 0);
    }
  }

  // u_n = Σ t·m·d (stage-0 GPUs on node n); b_n: stage 0 is complete after node n. Stage 0 is
  // the first S ranks: every node before the last one of stage 0 gives it all its GPUs.
  void StageZero() {
    const int N = sh_.N;
    std::vector<int> b(N);
    for (int n = 0; n < N; ++n) b[n] = md_.Binary();
    std::vector<Model::Terms> u(N);
    Model::Terms u_all;
    for (size_t j = 0; j < sh_.islands.size(); ++j) {
      if (!d_[j]) continue;
      const Island& is = sh_.islands[j];
      u[is.node].push_back({d_[j], static_cast<double>(sh_.t * is.m)});
      u_all.push_back({d_[j], static_cast<double>(sh_.t * is.m)});
      all_d_.push_back({d_[j], 1});
    }
    const double W = sh_.W;
    for (int n = 0; n < N; ++n) {
      Model::Terms r1 = u[n];
      for (size_t ki = 1; ki < K_[n].size(); ++ki) r1.push_back({x_[n][ki], -1.0 * K_[n][ki]});
      md_.Le(r1, 0);  // u ≤ k
      Model::Terms r2 = r1;
      r2.push_back({b[n], W});
      md_.Ge(r2, 0);  // u ≥ k − W·b_n
      if (n >= 1) {
        Model::Terms r3 = u[n];
        r3.push_back({b[n - 1], W});
        md_.Le(r3, W);  // u ≤ W·(1 − b_{n−1})
        md_.Ge({{b[n], 1}, {b[n - 1], -1}}, 0);
      }
    }
    md_.Eq(u_all, sh_.S);
  }

  // A new column, 1 when the group spans at least q nodes.
  int SpansAtLeast(int q) {
    int c = md_.Binary();
    Model::Terms r = all_d_;
    r.push_back({c, -n_isl_});
    md_.Le(r, q - 1);
    return c;
  }

  // ml = 1 when the group spans several leaves.
  void SeveralLeaves() {
    if (!sh_.has_ml) return;
    ml_ = md_.Binary();
    Model::Terms leaf_sum;
    for (int leaf : sh_.leaves) {
      int used = md_.Binary();
      Model::Terms r;
      for (size_t j = 0; j < sh_.islands.size(); ++j) {
        if (d_[j] && cluster_.nodes[sh_.islands[j].node].domain == leaf) r.push_back({d_[j], 1});
      }
      r.push_back({used, -n_isl_});
      md_.Le(r, 0);
      leaf_sum.push_back({used, 1});
    }
    leaf_sum.push_back({ml_, -n_isl_});
    md_.Le(leaf_sum, 1);
  }

  // l_sel ≥ Ms(bytes, the largest island network bandwidth of the group).
  void LargestNetwork() {
    if (!(sh_.has_ml || sh_.has_t3) || sh_.net_values.empty()) return;
    l_sel_ = md_.Continuous();
    md_.Ge({{l_sel_, 1}}, Ms(sh_.dp_bytes, sh_.net_values[0]));
    for (size_t q = 1; q < sh_.net_values.size(); ++q) {
      int z = md_.Binary();  // some island of the group has net ≥ net_values[q-1]
      Model::Terms zr{{z, 1}};
      for (size_t j = 0; j < sh_.islands.size(); ++j) {
        if (d_[j] && sh_.islands[j].net_gbps >= sh_.net_values[q - 1]) zr.push_back({d_[j], -1});
      }
      md_.Le(zr, 0);
      md_.Ge({{l_sel_, 1}, {z, sh_.big_l}}, Ms(sh_.dp_bytes, sh_.net_values[q]));
    }
  }

  // var ≥ factor·ov·l_sel when the group spans several leaves.
  void LeafTerm(int var, double factor) {
    if (!sh_.has_ml || !l_sel_) return;
    md_.Ge({{var, 1}, {l_sel_, -factor * sh_.ov}, {ml_, -sh_.big_l}}, -sh_.big_l);
  }

  // Ring: base + tr·Σ alphas + tr·bytes / min over islands of (ring, net / f).
  void RingTerm() {
    const int rb = md_.Continuous(1);
    md_.Constant(sh_.base_ms);
    for (size_t j = 0; j < sh_.islands.size(); ++j) {
      const Island& is = sh_.islands[j];
      md_.Ge({{rb, 1}, {d_[j], -sh_.tr * Ms(sh_.dp_bytes, std::min(is.ring_gbps, is.net_gbps))}},
             0);
      const double alpha_us =
          (is.m >= 2 ? is.sum_latency_us * (is.m - 1) / is.m : 0) + is.net_latency_us;
      md_.Obj(d_[j], sh_.tr * alpha_us * 1e-3);
    }
    LeafTerm(rb, sh_.tr);
  }

  // Tree: base + 2·(depth·alpha_net + chain alpha) + bytes / min(chain, net / (traffic·f)).
  void TreeTerm() {
    const double lat = sh_.lat_min;
    const int tb = md_.Continuous(1), ca = md_.Continuous(2);
    md_.Constant(sh_.base_ms + 2 * 2e-3 * lat);  // depth ≥ 2
    for (size_t j = 0; j < sh_.islands.size(); ++j) {
      const Island& is = sh_.islands[j];
      md_.Ge({{tb, 1}, {d_[j], -Ms(sh_.dp_bytes, std::min(is.chain_gbps, is.net_gbps))}}, 0);
      const double chain_alpha_us = is.m >= 2 ? is.sum_latency_us * (is.m - 1) / is.m : 0;
      md_.Ge({{ca, 1}, {d_[j], -chain_alpha_us * 1e-3}}, 0);
    }
    for (int q : {4, 8, 16}) {  // depth = ceil(log2(ni + 1))
      if (sh_.max_islands >= q) md_.Obj(SpansAtLeast(q), 2e-3 * lat);
    }
    if (sh_.has_t3 && l_sel_) {
      const int three = SpansAtLeast(3);
      md_.Ge({{tb, 1}, {l_sel_, -sh_.t3}, {three, -sh_.big_l}}, -sh_.big_l);
    }
    LeafTerm(tb, 1);
  }

  // Hierarchical: base + 2·reduce-scatter + tr(ni)·bytes/(g·shard) + 2(ni−1)·alpha_net.
  void HierTerm() {
    const double lat = sh_.lat_min;
    const int rs = md_.Continuous(2), hn = md_.Continuous(1);
    md_.Constant(sh_.base_ms - 2e-3 * lat);
    for (size_t j = 0; j < sh_.islands.size(); ++j) {
      if (!d_[j]) continue;
      const Island& is = sh_.islands[j];
      const double part = (is.m - 1.0) / is.m;
      md_.Ge(
          {{rs, 1}, {d_[j], -part * (Ms(sh_.dp_bytes, is.ring_gbps) + is.sum_latency_us * 1e-3)}},
          0);
      md_.Ge({{hn, 1}, {d_[j], -Ms(sh_.dp_bytes, is.net_gbps)}}, 0);
      md_.Obj(d_[j], 2e-3 * lat);
    }
    LeafTerm(hn, 1);
    // tr(ni) = 2(ni−1)/ni ≥ 1 + 1/3·[ni≥3] + 1/6·[ni≥4] + 1/4·[ni≥8] + 1/8·[ni≥16].
    for (auto [q, c] : std::initializer_list<std::pair<int, double>>{
             {3, 1.0 / 3}, {4, 1.0 / 6}, {8, 0.25}, {16, 0.125}}) {
      if (sh_.max_islands < q) continue;
      const int w = md_.Continuous(c);
      const int spans = SpansAtLeast(q);
      md_.Ge({{w, 1}, {hn, -1}, {spans, -sh_.big_l}}, -sh_.big_l);
    }
  }

 private:
  const Shared& sh_;
  const topo::Cluster& cluster_;
  const std::vector<std::vector<int>>& K_;
  Model& md_;
  std::vector<std::vector<int>>& x_;
  const double n_isl_;               // islands + 1: more than any count of islands
  std::vector<std::vector<int>> g_;  // [n][ki] first node (g_[n][0] = 0: no column)
  Model::Terms single_;              // the g with K ≥ S
  std::vector<int> d_;               // [j] island j in the DP group (0: no column)
  Model::Terms all_d_;               // Σ d
  int ml_ = 0;                       // several leaves (0: no column)
  int l_sel_ = 0;                    // largest island network time (0: no column)
};

void Build(const Shared& sh, const topo::Cluster& cluster, Program& pr) {
  pr.md = std::make_unique<Model>();
  ProgramBuilder b(sh, cluster, pr);
  b.Counts();
  b.FirstNode();
  b.TpTerm();
  b.PpTerm();
  if (pr.variant == Variant::kPlain) return;
  if (pr.variant == Variant::kSingle) {
    b.SingleNodeDp();
    return;
  }
  b.DpIslands(pr.variant == Variant::kHier);
  b.StageZero();
  b.SeveralLeaves();
  b.LargestNetwork();
  if (pr.variant == Variant::kRing) {
    b.RingTerm();
  } else if (pr.variant == Variant::kTree) {
    b.TreeTerm();
  } else {
    b.HierTerm();
  }
}

// The cost model's time for `c` over `g`, +inf where it rejects the group.
double EvalMs(const cost::CostModel& cost_model, cost::Collective c,
              const std::vector<cost::GpuRef>& g, double bytes) {
  auto e = cost_model.Evaluate(c, g, bytes);
  return e.ok() ? e->time_ms : kInf;
}

// The job's figures: sizes, bytes and which terms it has.
Shared JobFigures(const topo::Cluster& cluster, const cost::CostModel& cost_model,
                  const job::Layout& l, int t) {
  Shared sh;
  sh.t = t;
  sh.N = static_cast<int>(cluster.nodes.size());
  sh.W = l.WorldSize();
  sh.DP = l.dp;
  sh.S = t * l.dp;
  sh.dp_bytes = static_cast<double>(std::max<int64_t>(l.dp_bytes, 0));
  sh.tp_bytes = static_cast<double>(std::max<int64_t>(l.tp_bytes, 0));
  sh.pp_bytes = static_cast<double>(std::max<int64_t>(l.pp_bytes, 0));
  sh.has_dp = l.dp >= 2 && sh.dp_bytes > 0;
  sh.has_tp = l.tp >= 2 && sh.tp_bytes > 0;
  sh.has_pp = l.pp >= 2 && sh.pp_bytes > 0;
  sh.base_ms = cost_model.tables().base_latency_us * 1e-3;
  return sh;
}

// The counts each node can hold (multiples of t up to its free GPUs), NodeSelector's rank order
// for each, and the exact TP time (first node) and one-node DP time of each.
void ChooseCounts(const topo::Cluster& cluster, const cost::CostModel& cost_model,
                  const std::vector<std::unique_ptr<NodeSelector>>& selectors,
                  const ClusterState& state, const job::Layout& l, Shared& sh) {
  const int N = sh.N, t = sh.t;
  sh.K.assign(N, {0});
  sh.order.assign(N, {{}});
  sh.tp_ms.assign(N, {0});
  sh.single_dp_ms.assign(N, {0});
  sh.pp_ms.assign(N, {{}});
  for (int n = 0; n < N; ++n) {
    if (state.NodeHealth(n) == topo::Health::kUnhealthy || state.NodeDrained(n)) continue;
    const int cap = std::min(state.FreeMask(n).count() / t * t, sh.W);
    for (int k = t; k <= cap; k += t) {
      NodeRequest req;
      req.gpus = k;
      req.tp = t > 1 ? t : 1;
      req.dp_bytes = sh.dp_bytes;
      req.tp_bytes = sh.tp_bytes;
      auto ch = selectors[cluster.nodes[n].profile]->Select(state.FreeMask(n), req);
      if (!ch.ok() || (*ch)->fit != Fit::kFit) continue;
      // The job whole on one node takes the order the placer gives it (placer/node_order.h).
      const std::vector<int> o = k == sh.W && NodeOrderMatters(l)
                                     ? ImproveNodeOrder(cost_model, l, n, (*ch)->order)
                                     : (*ch)->order;
      sh.K[n].push_back(k);
      sh.order[n].push_back(o);
      double tp_ms = 0, dp_ms = 0;
      if (sh.has_tp) {
        std::vector<cost::GpuRef> grp;
        for (int i = 0; i < t; ++i) grp.push_back({n, o[i]});
        tp_ms = EvalMs(cost_model, cost::Collective::kAllReduce, grp, sh.tp_bytes);
      }
      if (sh.has_dp && k >= sh.S) {
        std::vector<cost::GpuRef> grp;
        for (int i = 0; i < sh.DP; ++i) grp.push_back({n, o[i * t]});
        dp_ms = EvalMs(cost_model, cost::Collective::kAllReduce, grp, sh.dp_bytes);
      }
      sh.tp_ms[n].push_back(tp_ms);
      sh.single_dp_ms[n].push_back(dp_ms);
      sh.pp_ms[n].emplace_back();
    }
  }
}

// PP: rank 0 on node n (count ki) to rank S on node n2. A cross-node Send/Recv depends on the
// receiving GPU only through NET/Socket; take the cheapest over one GPU of each network transport
// of the receiving node.
void PricePipelineHeads(const cost::CostModel& cost_model, Shared& sh) {
  const int N = sh.N;
  std::vector<std::vector<int>> receivers(N);
  for (int n = 0; n < N; ++n) {
    const cost::NodeCostModel& nm = cost_model.node_model(n);
    std::set<int> seen;
    for (int gpu = 0; gpu < nm.num_gpus(); ++gpu) {
      if (seen.insert(static_cast<int>(nm.NetTransport(gpu))).second) {
        receivers[n].push_back(gpu);
      }
    }
  }
  for (int n = 0; n < N; ++n) {
    for (size_t ki = 1; ki < sh.K[n].size(); ++ki) {
      const int rank0 = sh.order[n][ki][0];
      std::vector<double>& c = sh.pp_ms[n][ki];
      c.assign(N, 0);
      for (int n2 = 0; n2 < N; ++n2) {
        if (sh.K[n2].size() < 2) continue;
        if (n2 == n) {
          if (sh.K[n][ki] > sh.S) {
            c[n2] = EvalMs(cost_model, cost::Collective::kSendRecv,
                           {{n, rank0}, {n, sh.order[n][ki][sh.S]}}, sh.pp_bytes);
          }
          continue;
        }
        c[n2] = kInf;
        for (int r : receivers[n2]) {
          c[n2] = std::min(c[n2], EvalMs(cost_model, cost::Collective::kSendRecv,
                                         {{n, rank0}, {n2, r}}, sh.pp_bytes));
        }
      }
    }
  }
}

// Node n (count ki) holding m of the DP group (positions 0, t, .., (m−1)t of its rank order),
// with CostModel::Prepare's figures for a one-node island.
Island OneNodeIsland(const cost::CostModel& cost_model, const Shared& sh, int n, size_t ki, int m) {
  const cost::NodeCostModel& nm = cost_model.node_model(n);
  const cost::CostTables& tables = cost_model.tables();
  Island is;
  is.node = n;
  is.ki = static_cast<int>(ki);
  is.m = m;
  std::vector<int> pos;
  for (int i = 0; i < m; ++i) pos.push_back(sh.order[n][ki][i * sh.t]);
  if (m >= 2) {
    cost::NodeCostModel::Ring ring = nm.BestRing(pos);
    is.ring_gbps = ring.gbps;
    is.sum_latency_us = ring.sum_latency_us;
    is.chain_gbps = cost::NodeCostModel::ChainGbps(ring, m);
  }
  // ComputeNet on one node: each distinct NIC once, at the best rate a member gets through it;
  // NET/Socket capped per node.
  std::map<int, double> nic_gbps;
  bool socket = false;
  for (int gpu : pos) {
    std::vector<int> nics = nm.NicsOf(gpu);
    if (nics.empty()) nics.push_back(-1);
    for (int c : nics) {
      auto [it, ins] = nic_gbps.emplace(c, nm.NicGbps(gpu, c));
      if (!ins) it->second = std::max(it->second, nm.NicGbps(gpu, c));
    }
    socket = socket || nm.NetTransport(gpu) == cost::Transport::kNetSocket;
  }
  for (const auto& [c, v] : nic_gbps) is.net_gbps += v;
  if (socket) is.net_gbps = std::min(is.net_gbps, tables.socket_max_gbps_per_node);
  is.net_latency_us =
      tables.LatencyUs(socket ? cost::Transport::kNetSocket : cost::Transport::kNetIB);
  return is;
}

// The figures the multi-node DP bounds share: ring factor, smallest network latency, distinct
// network bandwidths, leaves and their oversubscription, tree traffic and the big-M constant.
void DpBoundFigures(const topo::Cluster& cluster, Shared& sh) {
  const int N = sh.N;
  sh.tr = 2.0 * (sh.DP - 1) / sh.DP;
  sh.lat_min = sh.islands.empty() ? 0 : kInf;
  for (const Island& is : sh.islands) {
    sh.lat_min = std::min(sh.lat_min, is.net_latency_us);
    sh.net_values.push_back(is.net_gbps);
  }
  std::sort(sh.net_values.begin(), sh.net_values.end(), std::greater<double>());
  sh.net_values.erase(std::unique(sh.net_values.begin(), sh.net_values.end()), sh.net_values.end());
  double ov = kInf;
  for (int a = 0; a < N; ++a) {
    sh.leaves.insert(cluster.nodes[a].domain);
    for (int c = a + 1; c < N; ++c) {
      if (cluster.nodes[a].domain != cluster.nodes[c].domain) {
        ov = std::min(ov, cluster.RailOversubscription(a, c).same_rail);
      }
    }
  }
  sh.has_ml = sh.leaves.size() > 1 && std::isfinite(ov) && ov > 1;
  sh.ov = sh.has_ml ? ov : 1;
  sh.max_islands = std::min(sh.DP, N);
  double t3 = kInf;
  for (int ni = 3; ni <= sh.max_islands; ++ni) t3 = std::min(t3, MaxTreeTraffic(ni));
  sh.has_t3 = std::isfinite(t3) && t3 > 1;
  sh.t3 = sh.has_t3 ? t3 : 1;
  const double ms_worst = sh.net_values.empty() ? 0 : Ms(sh.dp_bytes, sh.net_values.back());
  sh.big_l = (2 + 2 * sh.ov + sh.t3) * ms_worst + 1;
}

// Counts, in-node choices, exact TP/PP/one-node DP times and island figures for a job.
Shared Prepare(const topo::Cluster& cluster, const cost::CostModel& cost_model,
               const std::vector<std::unique_ptr<NodeSelector>>& selectors,
               const ClusterState& state, const job::JobSpec& job, int t) {
  Shared sh = JobFigures(cluster, cost_model, job.layout, t);
  ChooseCounts(cluster, cost_model, selectors, state, job.layout, sh);
  if (sh.has_pp) PricePipelineHeads(cost_model, sh);
  if (sh.has_dp) {
    for (int n = 0; n < sh.N; ++n) {
      for (size_t ki = 1; ki < sh.K[n].size(); ++ki) {
        for (int m = 1; m <= std::min(sh.K[n][ki] / t, sh.DP); ++m) {
          sh.islands.push_back(OneNodeIsland(cost_model, sh, n, ki, m));
        }
      }
    }
    DpBoundFigures(cluster, sh);
  }
  return sh;
}

}  // namespace

OracleResult IlpOracle::Solve(const ClusterState& state, const job::JobSpec& job,
                              const OracleOptions& options) const {
  int t = 1;
  if (auto r = CheckFamily(state, job, &t)) return *r;
  OracleResult res;
  res.tp_unit = t;
  Shared sh = Prepare(*cluster_, *cost_, selectors_, state, job, t);
  const int N = sh.N;
  std::vector<Program> programs;
  if (!sh.has_dp) {
    programs.emplace_back().variant = Variant::kPlain;
  } else {
    for (Variant v : {Variant::kSingle, Variant::kRing, Variant::kTree, Variant::kHier}) {
      programs.emplace_back().variant = v;
    }
  }
  for (Program& pr : programs) Build(sh, *cluster_, pr);

  std::optional<Placement> best;
  double bound = 0;
  for (;;) {
    Program* low = nullptr;
    for (Program& pr : programs) {
      if (!pr.solved) {
        bool infeasible = false;
        std::string why;
        const bool ok = pr.md->Solve(options.ilp_time_limit_s, &infeasible, &why);
        if (!ok) {
          res.status = OracleStatus::kUnproven;
          res.reason = why;
          res.lower_bound_ms = 0;
          res.placement = std::move(best);
          return res;
        }
        pr.solved = true;
        pr.feasible = !infeasible;
        if (pr.feasible) {
          pr.value = pr.md->Objective();
          pr.chosen.assign(N, 0);
          for (int n = 0; n < N; ++n) {
            for (size_t ki = 0; ki < pr.x[n].size(); ++ki) {
              if (pr.md->Value(pr.x[n][ki]) > 0.5) pr.chosen[n] = static_cast<int>(ki);
            }
          }
        }
      }
      if (pr.feasible && (!low || pr.value < low->value)) low = &pr;
    }
    if (!low) {
      bound = best ? best->predicted_ms : 0;
      break;
    }
    bound = low->value;
    if (best && bound >= best->predicted_ms * (1 - options.rel_gap)) break;
    if (res.iterations >= options.max_iterations) {
      res.status = OracleStatus::kUnproven;
      res.reason = "stopped after " + std::to_string(res.iterations) + " placements";
      res.lower_bound_ms = best ? std::min(best->predicted_ms, bound) : bound;
      res.placement = std::move(best);
      return res;
    }
    const std::vector<int> chosen = low->chosen;
    std::vector<int> counts(N, 0);
    for (int n = 0; n < N; ++n) counts[n] = sh.K[n][chosen[n]];
    ++res.iterations;
    std::optional<Placement> p = Materialize(state, job, counts, t);
    if (!p) {
      res.status = OracleStatus::kError;
      res.reason = "a solution of the program does not materialise";
      return res;
    }
    if (bound > p->predicted_ms * (1 + 1e-7) + 1e-9) {
      res.status = OracleStatus::kError;
      res.reason = "lower bound " + std::to_string(bound) + " ms above the score " +
                   std::to_string(p->predicted_ms) + " ms of its own solution";
      return res;
    }
    if (!best || p->predicted_ms < best->predicted_ms) {
      best = std::move(p);
      res.counts = counts;
    }
    // The programs price rank 0's groups (the head); the score also prices every stage's
    // groups, so other solutions with the same head may score lower: cut this solution alone
    // from every program; re-solve the programs whose optimum it was.
    const int head = N - 1;
    for (Program& pr : programs) {
      Model::Terms cut;
      for (int n = 0; n <= head; ++n) cut.push_back({pr.x[n][chosen[n]], 1});
      pr.md->Le(cut, head);
      if (!pr.feasible) continue;
      bool same = true;
      for (int n = 0; n <= head && same; ++n) same = pr.chosen[n] == chosen[n];
      if (same) pr.solved = false;
    }
  }
  if (!best) {
    res.status = OracleStatus::kNoFit;
    res.reason = "no placement of the family";
    return res;
  }
  res.status = OracleStatus::kOptimal;
  res.lower_bound_ms = std::min(best->predicted_ms, bound);
  res.placement = std::move(best);
  return res;
}

namespace {

// Look-ahead for the DP group: to place the R0 stage-0 GPUs still missing on nodes n.., the
// group's worst island is at least the smallest θ with Σ_{n' ≥ n} (most GPUs one island of n'
// holds with value ≤ θ) ≥ R0. One table per algorithm: value of an island for ring
// Ms(min(ring, net)), tree Ms(min(chain, net)), hierarchical Ms(net) (islands of ≥ 2 only).
struct DpLookAhead {
  std::vector<double> theta;          // sorted distinct values
  std::vector<std::vector<int>> cap;  // [n][i]: Σ_{n' ≥ n} GPUs coverable at theta[i]
};

// SolveByBranchAndBound's depth-first search over the counts in node-id order. The partial
// placement (counts, ranks placed, the DP group's islands, exact times of completed groups) is
// kept in members, set on the way down and restored on the way back.
class CountSearch {
 public:
  CountSearch(const IlpOracle& oracle, const Shared& sh, const ClusterState& state,
              const job::JobSpec& job, const OracleOptions& options)
      : oracle_(oracle),
        sh_(sh),
        state_(state),
        lay_(job.layout),
        job_(job),
        options_(options),
        keep_(1 - options.rel_gap),
        ki_of_(sh.N, 0) {
    res_.tp_unit = sh.t;
    IndexIslands();
    if (sh_.has_dp) BuildLookAhead();
  }

  OracleResult Run() {
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::microseconds(static_cast<int64_t>(options_.search_time_limit_s * 1e6));
    Visit(0, 0);
    return Result();
  }

 private:
  // island_of_[n][ki][m]: index into sh.islands; suffix_cap_[n]: most GPUs nodes n.. can hold.
  void IndexIslands() {
    const int N = sh_.N;
    island_of_.resize(N);
    for (int n = 0; n < N; ++n) island_of_[n].resize(sh_.K[n].size());
    for (size_t j = 0; j < sh_.islands.size(); ++j) {
      const Island& is = sh_.islands[j];
      auto& v = island_of_[is.node][is.ki];
      if (static_cast<int>(v.size()) <= is.m) v.resize(is.m + 1, -1);
      v[is.m] = static_cast<int>(j);
    }
    suffix_cap_.assign(N + 1, 0);
    for (int n = N - 1; n >= 0; --n) suffix_cap_[n] = suffix_cap_[n + 1] + sh_.K[n].back();
  }

  // An island's value for algorithm `alg` (0 ring, 1 tree, 2 hierarchical; +inf: not usable).
  double IslandValue(int alg, const Island& is) const {
    if (alg == 0) return Ms(sh_.dp_bytes, std::min(is.ring_gbps, is.net_gbps));
    if (alg == 1) return Ms(sh_.dp_bytes, std::min(is.chain_gbps, is.net_gbps));
    return is.m >= 2 ? Ms(sh_.dp_bytes, is.net_gbps) : kInf;
  }

  void BuildLookAhead() {
    const int N = sh_.N;
    for (int alg = 0; alg < 3; ++alg) {
      DpLookAhead& a = ahead_[alg];
      for (const Island& is : sh_.islands) {
        const double v = IslandValue(alg, is);
        if (std::isfinite(v)) a.theta.push_back(v);
      }
      std::sort(a.theta.begin(), a.theta.end());
      a.theta.erase(std::unique(a.theta.begin(), a.theta.end()), a.theta.end());
      const size_t V = a.theta.size();
      a.cap.assign(N + 1, std::vector<int>(V, 0));
      for (int n = N - 1; n >= 0; --n) {
        std::vector<int> own(V, 0);
        for (const Island& is : sh_.islands) {
          if (is.node != n) continue;
          const double v = IslandValue(alg, is);
          if (!std::isfinite(v)) continue;
          size_t i = std::lower_bound(a.theta.begin(), a.theta.end(), v) - a.theta.begin();
          own[i] = std::max(own[i], sh_.t * is.m);
        }
        for (size_t i = 1; i < V; ++i) own[i] = std::max(own[i], own[i - 1]);
        for (size_t i = 0; i < V; ++i) a.cap[n][i] = a.cap[n + 1][i] + own[i];
      }
    }
  }

  // Smallest worst-island value to place r0 more stage-0 GPUs on nodes n.. (0: none needed).
  double Future(int alg, int n, int r0) const {
    if (r0 <= 0) return 0.0;
    const DpLookAhead& a = ahead_[alg];
    const std::vector<int>& c = a.cap[n];
    auto it = std::lower_bound(c.begin(), c.end(), r0);
    if (it == c.end()) return kInf;
    return a.theta[it - c.begin()];
  }

  // Lower bound of the multi-node DP AllReduce from the islands placed so far (monotone in
  // added islands): the smallest over ring, tree and hierarchical of the bounds the program
  // uses, without the terms that need the whole group.
  double DpBound(int n, int r0) const {
    const int ni = static_cast<int>(isl_.size());
    const int nis = std::max(ni, 2);
    double ring_bw = 0, ring_alpha = 0, tree_bw = 0, chain_alpha = 0, rs = 0, hier_bw = 0;
    bool hier_ok = true;
    for (int j : isl_) {
      const Island& is = sh_.islands[j];
      ring_bw = std::max(ring_bw, Ms(sh_.dp_bytes, std::min(is.ring_gbps, is.net_gbps)));
      const double a = is.m >= 2 ? is.sum_latency_us * (is.m - 1) / is.m : 0;
      ring_alpha += a + is.net_latency_us;
      tree_bw = std::max(tree_bw, Ms(sh_.dp_bytes, std::min(is.chain_gbps, is.net_gbps)));
      chain_alpha = std::max(chain_alpha, a);
      if (is.m < 2) hier_ok = false;
      if (is.m >= 2) {
        rs = std::max(
            rs, (is.m - 1.0) / is.m * (Ms(sh_.dp_bytes, is.ring_gbps) + is.sum_latency_us * 1e-3));
      }
      hier_bw = std::max(hier_bw, Ms(sh_.dp_bytes, is.net_gbps));
    }
    ring_bw = std::max(ring_bw, Future(0, n, r0));
    tree_bw = std::max(tree_bw, Future(1, n, r0));
    hier_bw = std::max(hier_bw, Future(2, n, r0));
    const double ring = sh_.base_ms + sh_.tr * ring_alpha * 1e-3 + sh_.tr * ring_bw;
    const int depth = static_cast<int>(std::ceil(std::log2(nis + 1.0)));
    const double tree = sh_.base_ms + 2 * (depth * sh_.lat_min + chain_alpha) * 1e-3 + tree_bw;
    double best_alg = std::min(ring, tree);
    if (hier_ok) {
      const double tr_ni = 2.0 * (nis - 1) / nis;
      best_alg = std::min(
          best_alg, sh_.base_ms + 2 * rs + tr_ni * hier_bw + 2.0 * (nis - 1) * sh_.lat_min * 1e-3);
    }
    return best_alg;
  }

  // Exact DP time of the islands placed (the whole group), as the placer would score it.
  double DpTime() const {
    std::vector<cost::GpuRef> grp;
    for (int j : isl_) {
      const Island& is = sh_.islands[j];
      for (int i = 0; i < is.m; ++i) {
        grp.push_back({is.node, sh_.order[is.node][is.ki][i * sh_.t]});
      }
    }
    return EvalMs(oracle_.cost_model(), cost::Collective::kAllReduce, grp, sh_.dp_bytes);
  }

  // Exact time of `c` over the GPUs of `ranks` (all placed).
  double ExactMs(cost::Collective c, const std::vector<int>& ranks, double bytes) const {
    std::vector<cost::GpuRef> grp;
    for (int r : ranks) grp.push_back(placed_[r]);
    return EvalMs(oracle_.cost_model(), c, grp, bytes);
  }

  // The groups that ScorePlacement prices beyond rank 0's DP group and that ranks [from, to)
  // complete: each later stage's DP group through TP index 0 and each pair of stage heads
  // (s·S → (s+1)·S).
  void Complete(int from, int to) {
    const int S = sh_.S;
    for (int s = 1; s < lay_.pp; ++s) {
      const int last = (s + 1) * S - 1;  // the stage's last rank
      if (sh_.has_dp && last >= from && last < to) {
        tail_dp_ = std::max(tail_dp_, ExactMs(cost::Collective::kAllReduce,
                                              lay_.DpGroup(lay_.RankOf(0, 0, s)), sh_.dp_bytes));
      }
      if (sh_.has_pp && s * S >= from && s * S < to) {
        tail_pp_ = std::max(
            tail_pp_, ExactMs(cost::Collective::kSendRecv, {(s - 1) * S, s * S}, sh_.pp_bytes));
      }
    }
  }

  // Bound of what is fixed so far, with `cum` GPUs on nodes before n.
  double FixedBound(int n, int cum) const {
    const int S = sh_.S;
    double lb = tail_pp_;
    if (first_ >= 0) {
      const int fki = ki_of_[first_];
      if (sh_.has_tp) lb += sh_.tp_ms[first_][fki];
      if (sh_.has_dp) {
        lb += std::max(tail_dp_, dp_exact_ >= 0 ? dp_exact_ : DpBound(n, S - std::min(cum, S)));
      }
    }
    return lb;
  }

  // Every GPU is placed on nodes before n: score the placement (bound `lb`).
  void ScoreLeaf(int n, double lb) {
    std::vector<int> counts(sh_.N, 0);
    for (int m = 0; m < n; ++m) counts[m] = sh_.K[m][ki_of_[m]];
    ++res_.iterations;
    std::optional<Placement> p = oracle_.Materialize(state_, job_, counts, sh_.t);
    if (!p) {
      failed_ = true;
      return;
    }
    if (lb > p->predicted_ms * (1 + 1e-7) + 1e-9) {
      failed_ = true;  // a bound above a score: a bug
      res_.reason = "bound " + std::to_string(lb) + " ms above the score " +
                    std::to_string(p->predicted_ms) + " ms";
      return;
    }
    if (p->predicted_ms < best_ms_) {
      best_ms_ = p->predicted_ms;
      best_ = std::move(p);
      res_.counts = counts;
    }
  }

  void Visit(int n, int cum) {
    if (failed_ || capped_) return;
    if (++visited_ > options_.max_search_nodes ||
        ((visited_ & 255) == 0 && std::chrono::steady_clock::now() > deadline_)) {
      capped_ = true;
      return;
    }
    if (sh_.W - cum > suffix_cap_[n]) return;  // the rest cannot fit
    const double lb = FixedBound(n, cum);
    if (lb >= best_ms_ * keep_) return;
    if (cum == sh_.W) {
      ScoreLeaf(n, lb);
      return;
    }
    if (n == sh_.N) return;
    if (res_.iterations >= options_.max_node_scores) {
      capped_ = true;
      return;
    }
    for (int ki = static_cast<int>(sh_.K[n].size()) - 1; ki >= 0; --ki) {
      if (sh_.K[n][ki] > sh_.W - cum) continue;
      Descend(n, ki, cum);
    }
  }

  // Node n takes count ki: place its ranks, search the nodes after it, and undo.
  void Descend(int n, int ki, int cum) {
    const int k = sh_.K[n][ki];
    const int S = sh_.S;
    ki_of_[n] = ki;
    const int saved_first = first_;
    const double saved_dp = dp_exact_, saved_tail_dp = tail_dp_, saved_tail_pp = tail_pp_;
    const size_t saved_isl = isl_.size();
    for (int i = 0; i < k; ++i) placed_.push_back({n, sh_.order[n][ki][i]});
    Complete(cum, cum + k);
    if (k > 0) {
      if (first_ < 0) first_ = n;
      if (sh_.has_dp) {
        const int s0 = std::min(cum, S);
        const int u = std::min(k, S - s0);
        if (n == first_ && k >= S) {
          dp_exact_ = sh_.single_dp_ms[n][ki];
        } else if (u > 0) {
          isl_.push_back(island_of_[n][ki][u / sh_.t]);
          if (s0 + u == S) dp_exact_ = DpTime();
        }
      }
    }
    Visit(n + 1, cum + k);
    first_ = saved_first;
    dp_exact_ = saved_dp;
    tail_dp_ = saved_tail_dp;
    tail_pp_ = saved_tail_pp;
    placed_.resize(placed_.size() - k);
    isl_.resize(saved_isl);
    ki_of_[n] = 0;
  }

  OracleResult Result() {
    OracleResult& res = res_;
    if (failed_) {
      res.status = OracleStatus::kError;
      if (res.reason.empty()) res.reason = "a placement of the family does not materialise";
      return res;
    }
    if (!best_ && capped_) {
      res.status = OracleStatus::kUnproven;
      res.reason = "stopped after " + std::to_string(visited_) + " search nodes, none scored";
      return res;
    }
    if (!best_) {
      res.status = OracleStatus::kNoFit;
      res.reason = "no placement of the family";
      return res;
    }
    res.status = capped_ ? OracleStatus::kUnproven : OracleStatus::kOptimal;
    res.lower_bound_ms = capped_ ? 0 : best_->predicted_ms;
    if (capped_) {
      res.reason = "stopped after " + std::to_string(visited_) + " search nodes and " +
                   std::to_string(res.iterations) + " placements";
    }
    res.placement = std::move(best_);
    return res;
  }

  const IlpOracle& oracle_;
  const Shared& sh_;
  const ClusterState& state_;
  const job::Layout& lay_;
  const job::JobSpec& job_;
  const OracleOptions& options_;
  const double keep_;  // prune a bound ≥ best · keep
  std::chrono::steady_clock::time_point deadline_;
  std::vector<std::vector<std::vector<int>>> island_of_;
  std::vector<int> suffix_cap_;
  DpLookAhead ahead_[3];  // ring, tree, hierarchical

  OracleResult res_;
  std::vector<int> ki_of_;            // count index per node fixed so far
  std::vector<int> isl_;              // islands of the DP group so far
  std::vector<cost::GpuRef> placed_;  // the GPU of every rank placed so far
  int first_ = -1;                    // first node used (holds rank 0)
  double dp_exact_ = -1;              // DP time once stage 0 is placed (or on the first node)
  double tail_dp_ = 0, tail_pp_ = 0;  // exact times of the groups completed so far
  std::optional<Placement> best_;
  double best_ms_ = kInf;
  bool failed_ = false, capped_ = false;
  int64_t visited_ = 0;
};

}  // namespace

OracleResult IlpOracle::SolveByBranchAndBound(const ClusterState& state, const job::JobSpec& job,
                                              const OracleOptions& options) const {
  int t = 1;
  if (auto r = CheckFamily(state, job, &t)) return *r;
  const Shared sh = Prepare(*cluster_, *cost_, selectors_, state, job, t);
  return CountSearch(*this, sh, state, job, options).Run();
}

}  // namespace toposched::sched::ilp
