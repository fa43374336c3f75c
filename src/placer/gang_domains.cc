// The gang placer's candidates: one node that holds the job, then the lowest network domains.
#include "placer/gang_search.h"

namespace toposched::sched::gang_internal {

namespace {

// A (profile, free mask) already asked of a node selector.
struct Seen {
  int profile;
  uint64_t lo, hi;
};

// Whether the plan uses a node outside the candidate domain's (sorted) nodes.
bool LeavesDomain(const Plan& plan, const std::vector<int>& domain) {
  for (const auto& [n, k] : plan.chunks) {
    if (!std::binary_search(domain.begin(), domain.end(), n)) return true;
  }
  return false;
}

}  // namespace

std::optional<Verdict> Search::NodeVerdict(int node, int left, const std::string& how,
                                           double* score_out) {
  Plan plan;
  plan.chunks.emplace_back(node, world_);
  plan.frag = left;
  std::optional<Placement> p = Materialize(plan);
  if (!p) return std::nullopt;
  p->domain = c_.nodes[node].name;
  if (score_out) *score_out = WeightedMs(p->predicted_ms, left);
  return Fitted(std::move(*p), how, left, left);
}

std::optional<Verdict> Search::NodeByPlugin() {
  const int* prof = ix_.node_profile.data();
  std::vector<int> free(c_.nodes.size(), -1);
  for (int n = 0; n < static_cast<int>(c_.nodes.size()); ++n) {
    if (all_profiles_ok_ || profile_ok_[prof[n]]) free[n] = state_.FreeMask(n).count();
  }
  const int pick = plug_.nodes->OneNode(free, world_);
  if (pick < 0) return std::nullopt;
  return NodeVerdict(pick, free[pick] - world_, plug_.nodes->name() + " node", nullptr);
}

int Search::FirstBestFitNode(int* best_free) const {
  const int* prof = ix_.node_profile.data();
  *best_free = std::numeric_limits<int>::max();
  int first = -1;
  for (const detail::GangIndex::Run& r : ix_.runs) {
    if (r.domain >= 0 && state_.LargestFreeOnNode(r.domain) < world_) continue;
    for (int n = r.begin; n < r.end; ++n) {
      if (!all_profiles_ok_ && !profile_ok_[prof[n]]) continue;
      const int f = state_.FreeMask(n).count();
      if (f >= world_ && f < *best_free) {
        *best_free = f;
        first = n;
        if (f == world_) break;
      }
    }
    if (*best_free == world_) break;  // nothing fits tighter; `first` is the earliest such node
  }
  return first;
}

int Search::FastestBestFitNode(int first, int best_free, double* chosen_ms) const {
  const int* prof = ix_.node_profile.data();
  Seen seen[1025];  // max_node_evaluations ≤ 1024, plus the one that ends the scan
  int n_seen = 0;
  int chosen = -1;
  *chosen_ms = std::numeric_limits<double>::infinity();
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
  for (const detail::GangIndex::Run& r : ix_.runs) {
    if (r.end <= first) continue;
    if (r.domain >= 0 && state_.LargestFreeOnNode(r.domain) < best_free) continue;
    for (int node = std::max(r.begin, first); node < r.end; ++node) {
      if (!all_profiles_ok_ && !profile_ok_[prof[node]]) continue;
      const GpuMask& m = state_.FreeMask(node);
      if (m.count() != best_free) continue;
      const int p = prof[node];
      bool dup = false;
      for (int i = 0; i < n_seen && !dup; ++i) {
        dup = seen[i].profile == p && seen[i].lo == m.lo() && seen[i].hi == m.hi();
      }
      if (dup) continue;
      seen[n_seen++] = Seen{p, m.lo(), m.hi()};
      if (n_seen > opt_.max_node_evaluations) return chosen;
      auto ch = selectors_[p]->Select(m, req);
      if (!ch.ok() || (*ch)->fit != Fit::kFit) continue;
      if (const double ms = ChoiceMs(node, **ch); ms < *chosen_ms * (1 - 1e-9)) {
        *chosen_ms = ms;
        chosen = node;
      }
      if (n_seen >= possible) return chosen;
    }
  }
  return chosen;
}

double Search::IdealNodeMs() const {
  const NodeRequest req = ChunkRequest(world_);
  double ideal_ms = std::numeric_limits<double>::infinity();
  for (size_t pi = 0; pi < c_.profiles.size(); ++pi) {
    if (!profile_ok_[pi]) continue;
    if (static_cast<int>(c_.profiles[pi].topology.gpus.size()) < world_) continue;
    auto ideal = selectors_[pi]->Select(selectors_[pi]->healthy(), req);
    if (ideal.ok() && (*ideal)->fit == Fit::kFit && ix_.profile_node[pi] >= 0) {
      ideal_ms = std::min(ideal_ms, ChoiceMs(ix_.profile_node[pi], **ideal));
    }
  }
  return ideal_ms;
}

void Search::RoomierNodeByScore(int best_free, double chosen_ms, int* chosen,
                                int* chosen_left) const {
  const int* prof = ix_.node_profile.data();
  const NodeRequest req = ChunkRequest(world_);
  double best_score = WeightedMs(chosen_ms, *chosen_left);
  std::vector<Seen> more;
  for (int node = 0; node < static_cast<int>(c_.nodes.size()); ++node) {
    if (!all_profiles_ok_ && !profile_ok_[prof[node]]) continue;
    const GpuMask& m = state_.FreeMask(node);
    const int f = m.count();
    if (f <= best_free) continue;
    // Its extra leftover alone already costs more than the time it could save.
    if (WeightedMs(0, f - world_) >= best_score) continue;
    bool dup = false;
    for (const Seen& x : more)
      dup = dup || (x.profile == prof[node] && x.lo == m.lo() && x.hi == m.hi());
    if (dup) continue;
    more.push_back(Seen{prof[node], m.lo(), m.hi()});
    if (static_cast<int>(more.size()) > 4 * opt_.max_node_evaluations) break;
    auto ch = selectors_[prof[node]]->Select(m, req);
    if (!ch.ok() || (*ch)->fit != Fit::kFit) continue;
    const double score = WeightedMs(ChoiceMs(node, **ch), f - world_);
    if (score < best_score * (1 - 1e-9)) {
      best_score = score;
      *chosen = node;
      *chosen_left = f - world_;
    }
  }
}

// Reads free masks straight from the state: a node's free mask is empty when the node is
// unhealthy or drained, so only the per-profile constraints need checking, and the scan stops at
// the first node that fits exactly. Same result as a scan over the filtered node view.
std::optional<Verdict> Search::TrySingleNode(double* score_out, bool* slower) {
  if (slower) *slower = false;
  if (mode_ == Mode::kNvdTp || world_ > max_node_gpus_) return std::nullopt;
  if (!plug_.nodes->ScoresOneNode()) return NodeByPlugin();
  // Best fit: fewest free GPUs left on the node; ties by the node selector's predicted time,
  // evaluated once per distinct (profile, free mask). world_ is a multiple of tp_, so under
  // kNodeTp a node holds the job iff its free count does.
  int best_free = 0;
  const int first = FirstBestFitNode(&best_free);
  if (first < 0) return std::nullopt;
  const int best_left = best_free - world_;
  if (comm_w_ == 0 || !plug_.gpus->priced()) {
    // Nothing to compare the tied nodes by: the first best-fit node.
    return NodeVerdict(first, best_left, "best-fit node", nullptr);
  }
  double chosen_ms = 0;
  int chosen = FastestBestFitNode(first, best_free, &chosen_ms);
  if (chosen < 0) return std::nullopt;
  int chosen_left = best_left;
  // Best fit can force a slow GPU set (a cube-mesh's leftover GPUs without a closed NVLink
  // ring). When the chosen set is slower than the same request on a whole free node of the
  // fastest allowed profile (on a mixed cluster a best-fit node of a slow profile competes with
  // the faster ones), nodes with more free GPUs compete on the full score: comm-time +
  // fragmentation. Only then the O(nodes) scan; uniform fabrics (NVSwitch) never get here.
  const double ideal_ms = IdealNodeMs();
  if (std::isfinite(ideal_ms) &&
      chosen_ms > ideal_ms * (1 + 1e-9) + frag_w_ / std::max(comm_w_, 1e-12)) {
    RoomierNodeByScore(best_free, chosen_ms, &chosen, &chosen_left);
  }
  std::optional<Verdict> v =
      NodeVerdict(chosen, chosen_left,
                  chosen_left == best_left ? "best-fit node" : "fastest node by score", score_out);
  if (v && slower && std::isfinite(ideal_ms)) {
    *slower = v->placement->predicted_ms > ideal_ms * (1 + 1e-9);
  }
  return v;
}

std::optional<Verdict> Search::TryDomainsByProfile(std::vector<std::string>& reasons) {
  double best_score = 0;
  std::optional<Verdict> best = TryDomains(reasons, &best_score);
  if (!best || !RefineOn() || c_.profiles.size() < 2) return best;
  // A slow node in a DP group bounds the whole group: search each profile's nodes alone too.
  std::vector<int> saved(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) saved[n] = cap_[n];
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
      cap_[n] = ix_.node_profile[n] == static_cast<int>(pi) ? saved[n] : 0;
    }
    std::vector<std::string> ignored;
    double sc = 0;
    std::optional<Verdict> v = TryDomains(ignored, &sc);
    if (v && sc < best_score * (1 - 1e-9)) {
      best_score = sc;
      best = std::move(v);
    }
  }
  for (size_t n = 0; n < nodes_.size(); ++n) cap_[n] = saved[n];
  return best;
}

std::vector<Search::DomainGroup> Search::DomainGroups() const {
  return plug_.domain->Groups(c_, DomainNodes{ix_.domain_nodes, ix_.nvd_nodes, ix_.all_nodes},
                              job_.constraints.job);
}

std::vector<Candidate> Search::FeasibleCandidates(DomainGroup& g,
                                                  std::vector<std::string>& reasons) const {
  const job::LevelConstraint& jc = job_.constraints.job;
  const bool required = jc.mode == ConstraintMode::kRequired;
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
      reasons.push_back("needs " + std::to_string(world_) + " GPUs" + unit + " in one " + g.level +
                        "; largest free in a" +
                        (std::string("aeiou").find(g.level[0]) != std::string::npos ? "n " : " ") +
                        g.level + " is " + std::to_string(std::max(largest, 0)) +
                        (largest_name.empty() ? "" : " (" + largest_name + ")"));
    }
  }
  return feasible;
}

std::optional<Verdict> Search::BestOfGroup(const std::string& level,
                                           std::vector<Candidate>& feasible, double* out_score,
                                           const std::string& why) {
  // Best fit first: fewest spare GPUs, then domain order.
  std::stable_sort(feasible.begin(), feasible.end(),
                   [](const Candidate& a, const Candidate& b) { return a.cap < b.cap; });
  const int max_cands = comm_w_ > 0 || frag_w_ > 0 ? opt_.max_candidate_domains : 1;
  if (static_cast<int>(feasible.size()) > max_cands) feasible.resize(max_cands);
  // Starting plans: the node plugin's plan per candidate domain and, with local search on, the
  // refine plugin's and the rails plugin's starts; the best two by score are refined.
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
      for (Plan& b : plug_.refine->StartPlans(*this, *cand.nodes, region_of(&cand))) {
        plans.push_back(std::move(b));
      }
      for (Plan& b : plug_.rails->StartPlans(*this, region_of(&cand), cand.nodes->size())) {
        plans.push_back(std::move(b));
      }
    }
    // A start with the same chunks as an earlier one of this domain is the same placement: it
    // is scored once, so that local search refines the best two distinct starts.
    // (Marked before any plan is moved into `starts`.)
    std::vector<char> repeat(plans.size(), 0);
    for (size_t i = 0; i < plans.size(); ++i) {
      for (size_t j = 0; j < i && !repeat[i]; ++j) repeat[i] = plans[j].chunks == plans[i].chunks;
    }
    for (size_t i = 0; i < plans.size(); ++i) {
      Plan& plan = plans[i];
      if (plan.chunks.empty() || repeat[i]) continue;
      std::optional<Placement> p = Materialize(plan);
      if (!p) continue;
      const bool away = LeavesDomain(plan, *cand.nodes);
      if (!away) home_ms = std::min(home_ms, p->predicted_ms);
      p->domain = *cand.name;
      const double score = Weighted(*p, plan.frag);
      starts.push_back(Start{score, &cand, std::move(plan), std::move(*p), away});
    }
  }
  // Beyond the domain only for real communication time (as in local search,
  // plugins/refine_plugins.h).
  starts.erase(std::remove_if(starts.begin(), starts.end(),
                              [&](const Start& st) {
                                return st.away && !(st.p.predicted_ms < home_ms * 0.99);
                              }),
               starts.end());
  if (!starts.empty()) {
    // Stable: on equal scores the best-fit plan of the best-fit domain stays first.
    std::stable_sort(starts.begin(), starts.end(),
                     [](const Start& a, const Start& b) { return a.score < b.score; });
    // The same plan made for two candidate domains (a start that leaves its domain can land on
    // the same nodes from either) is refined once: local search takes the best two distinct.
    for (size_t i = 1; i < starts.size() && i <= 2;) {
      bool same = false;
      for (size_t j = 0; j < i && !same; ++j) same = starts[j].plan.chunks == starts[i].plan.chunks;
      if (same) {
        starts.erase(starts.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    std::string how = why.empty() ? "lowest " + level + " with room, best fit" : why;
    bool refined = false;
    if (refine) {
      const double before = starts[0].score;
      const size_t n = std::min<size_t>(starts.size(), 2);
      for (size_t i = 0; i < n; ++i) {
        plug_.refine->Refine(*this, region_of(starts[i].cand), starts[i].cand->nodes->size(),
                             starts[i].plan, starts[i].p, starts[i].score);
      }
      std::stable_sort(starts.begin(), starts.begin() + static_cast<long>(n),
                       [](const Start& a, const Start& b) { return a.score < b.score; });
      refined = starts[0].score < before * (1 - 1e-9);
    }
    Start& best = starts[0];
    const bool polished = refine && plug_.rails->Polish(*this, best.plan, best.p, best.score);
    // Stages built one by one on nodes that share rails: ranks a Plan cannot express, so they
    // compete with the refined and polished best, under the same rule for nodes beyond the
    // candidate domain.
    bool staged = false;
    if (refine) {
      for (RailPlacement& rs :
           plug_.rails->StagePlacements(*this, region_of(best.cand), best.cand->nodes->size())) {
        const bool away = LeavesDomain(rs.plan, *best.cand->nodes);
        if (away && !(rs.p.predicted_ms < home_ms * 0.99)) continue;
        const double sc = Weighted(rs.p, rs.plan.frag);
        if (!(sc < best.score * (1 - 1e-9))) continue;
        best.p = std::move(rs.p);
        best.p.domain = *best.cand->name;
        best.plan = std::move(rs.plan);
        best.score = sc;
        staged = true;
      }
    }
    if (staged) {
      how += ", stages placed on nodes that share rails";
    } else {
      if (refined) how += ", refined by local search";
      if (polished) how += ", GPUs polished for rails";
    }
    best.p.contention_note = QuieterNote(best.p, best.score, starts);
    how += best.p.contention_note;
    if (LeavesDomain(best.plan, *best.cand->nodes)) {
      best.p.domain = CommonDomainName(best.plan);
      how += ", beyond " + *best.cand->name + " (faster)";
    }
    if (out_score) *out_score = best.score;
    return Fitted(std::move(best.p), how, best.cand->cap - world_, best.plan.frag);
  }
  return std::nullopt;
}

int Search::RailScopeGroup(const std::vector<DomainGroup>& groups, size_t below) const {
  // Rails whose switches span several domains of this level carry same-rail traffic between them
  // without the level's uplinks (Cluster::RailOversubscription): there, the domain of the rails'
  // scope competes with the lowest domain that holds the job.
  if (!RailsAligned() || world_ <= max_node_gpus_) return -1;
  const std::string& scope = c_.rails.scope_level;
  for (size_t gi = below + 1; gi < groups.size(); ++gi) {
    if (scope.empty() ? gi + 1 == groups.size() : groups[gi].level == scope) {
      return static_cast<int>(gi);
    }
  }
  return -1;
}

std::optional<Verdict> Search::TryDomains(std::vector<std::string>& reasons, double* out_score) {
  std::vector<DomainGroup> groups = DomainGroups();
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    std::vector<Candidate> feasible = FeasibleCandidates(groups[gi], reasons);
    if (feasible.empty()) continue;
    double score = 0;
    std::optional<Verdict> v = BestOfGroup(groups[gi].level, feasible, &score);
    if (!v) continue;
    if (const int gj = RailScopeGroup(groups, gi); gj >= 0) {
      std::vector<std::string> unused;
      std::vector<Candidate> wider = FeasibleCandidates(groups[gj], unused);
      double wider_score = 0;
      std::optional<Verdict> w = BestOfGroup(
          groups[gj].level, wider, &wider_score,
          groups[gj].level + " of the rails, faster than in one " + groups[gi].level +
              " (same-rail traffic crosses no " + groups[gi].level + " uplink), best fit");
      // As for plans beyond the domain: only for real communication time.
      if (w && w->placement->predicted_ms < v->placement->predicted_ms * 0.99) {
        v = std::move(w);
        score = wider_score;
      }
    }
    if (out_score) *out_score = score;
    return v;
  }
  return std::nullopt;
}

}  // namespace toposched::sched::gang_internal
