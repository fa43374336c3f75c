// The gang placer's search: filters, plans, materializing a plan, the whole-GPU search.
#include "placer/gang_search.h"

namespace toposched::sched::gang_internal {

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
  cap_.assign(c_.nodes.size(), 0);
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
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const int free = nodes_[n].free;
    cap_[n] = m == Mode::kNodeTp ? free / tp_ * tp_ : free;
  }
}

int Search::CapOf(const std::vector<int>& nodes) const {
  if (mode_ != Mode::kNvdTp) {
    int sum = 0;
    for (int n : nodes) sum += cap_[n];
    return sum;
  }
  std::map<int, int> per_nvd;
  for (int n : nodes) {
    int nvd = c_.nodes[n].nvlink_domain;
    if (nvd >= 0) per_nvd[nvd] += cap_[n];
  }
  int sum = 0;
  for (const auto& [nvd, f] : per_nvd) sum += f / tp_ * tp_;
  return sum;
}

Plan Search::MakePlan(const std::vector<int>& nodes) const {
  Plan plan;
  auto add = [&](int node, int k) { AddChunk(plan, node, k); };
  if (mode_ != Mode::kNvdTp) {
    std::vector<int> caps;
    for (int n : nodes) caps.push_back(cap_[n]);
    std::vector<int> take = plug_.nodes->Take(caps, world_);
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
    for (int n : members[nvd]) f += cap_[n];
    caps.push_back(f / tp_ * tp_);
  }
  std::vector<int> take = plug_.nodes->Take(caps, world_);
  for (size_t i = 0; i < take.size(); ++i) {
    if (take[i] == 0) continue;
    const std::vector<int>& m = members[nvds[i]];
    std::vector<int> ncaps;
    for (int n : m) ncaps.push_back(cap_[n]);
    std::vector<int> ntake = plug_.nodes->Take(ncaps, take[i]);
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
    if (!plug_.gpus->priced()) {
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
    if (k == world_ && NodeOrderMatters(job_.layout)) {
      // The whole job on this node: the order its layout prices best (NodeOrder).
      const std::vector<int> order = NodeOrder(node, ch.order);
      const std::vector<int> nics = AssignNics(c_.topology(node), order);
      for (int i = 0; i < k; ++i) p.ranks.push_back(RankSlot{rank++, node, order[i], nics[i]});
      continue;
    }
    for (int i = 0; i < k; ++i) {
      int nic = i < static_cast<int>(ch.layout.ranks.size()) ? ch.layout.ranks[i].nic : -1;
      p.ranks.push_back(RankSlot{rank++, node, ch.order[i], nic});
    }
  }
  if (rank != world_) return std::nullopt;
  // The selector's choice and each rail alignment of it: the fastest by the score, the later
  // (more aligned) one on a tie.
  std::vector<std::vector<RankSlot>> aligned;
  if (c_.rails.count > 0 && plan.chunks.size() > 1 && (job_.layout.dp > 1 || job_.layout.pp > 1) &&
      plug_.gpus->priced()) {
    aligned = plug_.rails->Alignments(*this, plan, p.ranks);
  }
  if (!ScoreRanks(plan, p)) return std::nullopt;
  for (std::vector<RankSlot>& ranks : aligned) {
    Placement q;
    q.ranks = std::move(ranks);
    if (ScoreRanks(plan, q) && q.predicted_ms <= p.predicted_ms) p = std::move(q);
  }
  return p;
}

bool Search::ScoreRanks(const Plan& plan, Placement& q) const {
  q.parts.clear();
  int base = 0;
  for (const auto& [node, k] : plan.chunks) {
    GpuMask m;
    for (int i = base; i < base + k; ++i) m.set(q.ranks[i].gpu);
    q.parts.push_back(NodeGpus{node, m});
    base += k;
  }
  std::sort(q.parts.begin(), q.parts.end(),
            [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  return Score(q);
}

std::vector<int> Search::BaselineGpus(int node, int k) const {
  const GpuMask& free = state_.FreeMask(node);
  std::vector<int> ids;
  for (int g = 0; g < state_.GpuCount(node); ++g) {
    if (free.test(g)) ids.push_back(g);
  }
  if (static_cast<int>(ids.size()) < k) return {};
  const GpuPlugin& gpus = *plug_.gpus;
  if (!gpus.costly() || static_cast<int>(ids.size()) == k) {
    return gpus.Choose(c_.topology(node), ids, k);
  }
  const auto key = std::make_tuple(c_.nodes[node].profile, free.lo(), free.hi(), k);
  {
    std::lock_guard<std::mutex> lock(baseline_.mu);
    auto it = baseline_.pair_score.find(key);
    if (it != baseline_.pair_score.end()) return it->second;
  }
  std::vector<int> pick = gpus.Choose(c_.topology(node), ids, k);
  std::lock_guard<std::mutex> lock(baseline_.mu);
  baseline_.pair_score.emplace(key, pick);
  return pick;
}

std::string Search::NodeSummary() const {
  int usable = 0, lack = 0;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (!nodes_[n].eligible) continue;
    if (cap_[n] > 0) {
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

bool Search::NodeTakesWork(int node) const {
  return state_.NodeHealth(node) != topo::Health::kUnhealthy && !state_.NodeDrained(node) &&
         (all_profiles_ok_ || profile_ok_[ix_.node_profile[node]]);
}

Verdict Search::Run() {
  ProfileFilter();
  if (job_.Fractional()) return RunFractional();
  return RunWhole();
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
        if (cap_[n] > largest) {
          largest = cap_[n];
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

}  // namespace toposched::sched::gang_internal
