#include "sim/goodput.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <set>

#include "cost/cost_model.h"
#include "placer/gang.h"
#include "placer/policy.h"
#include "plugins/price.h"
#include "sim/random.h"
#include "sim/step_model.h"
#include "state/cluster_state.h"

namespace toposched::sim {

std::vector<FailureCause> Llama3FailureCauses() {
  using S = FailureScope;
  return {
      {"faulty GPU", 148, S::kNode},
      {"GPU HBM3 memory", 72, S::kNode},
      {"software bug", 54, S::kInPlace},
      {"network switch/cable", 35, S::kNode},
      {"host maintenance", 32, S::kNode},
      {"GPU SRAM memory", 19, S::kNode},
      {"GPU system processor", 17, S::kNode},
      {"NIC", 7, S::kNode},
      {"NCCL watchdog timeouts", 7, S::kInPlace},
      {"silent data corruption", 6, S::kNode},
      {"GPU thermal interface + sensor", 6, S::kNode},
      {"SSD", 3, S::kNode},
      {"power supply", 3, S::kNode},
      {"server chassis", 2, S::kNode},
      {"IO expansion board", 2, S::kNode},
      {"dependency", 2, S::kInPlace},
      {"CPU", 2, S::kNode},
      {"system memory", 2, S::kNode},
  };
}

StatusOr<ReplacementPolicy> ReplacementPolicyNamed(const std::string& name) {
  using F = ReplaceFrom;
  // Two trays of 18 held back per NVL72 rack: 64 of its 72 GPUs train, 8 wait as spares (a TP
  // group of 8 is two trays, so a rack holds 8 whole groups and one spare group).
  if (name == "topology-spares") {
    return ReplacementPolicy{name, 2, {F::kDomainSpare, F::kDomainFree, F::kLeafFree, F::kAnyFree}};
  }
  if (name == "any-free") return ReplacementPolicy{name, 0, {F::kAnyFree}};
  if (name == "no-spares") return ReplacementPolicy{name, 0, {}};
  return InvalidArgumentError("unknown replacement policy \"" + name +
                              "\" (expected topology-spares, any-free or no-spares)");
}

std::vector<std::string> ReplacementPolicyNames() {
  return {"topology-spares", "any-free", "no-spares"};
}

Status GoodputOptions::Validate() const {
  if (!(days > 0 && days <= 3650)) return InvalidArgumentError("days must be in (0, 3650]");
  if (!(interruptions_per_gpu_day >= 0 && interruptions_per_gpu_day < 1)) {
    return InvalidArgumentError("interruption rate must be in [0, 1) per GPU-day");
  }
  if (causes.empty()) return InvalidArgumentError("failure causes: at least one is needed");
  for (const FailureCause& c : causes) {
    if (c.count < 0) return InvalidArgumentError("failure cause \"" + c.name + "\": count < 0");
  }
  if (checkpoint_interval_s <= 0 || checkpoint_save_s < 0 ||
      checkpoint_save_s >= checkpoint_interval_s) {
    return InvalidArgumentError(
        "checkpoint interval must be > 0 s and longer than the checkpoint write (save >= 0 s)");
  }
  if (restart_cost_s < 0) return InvalidArgumentError("restart cost must be >= 0 s");
  if (!(repair_mean_s > 0 && repair_mean_s < 1e9)) {
    return InvalidArgumentError("mean repair time must be in (0, 1e9) s");
  }
  if (!(busy_fraction >= 0 && busy_fraction < 1)) {
    return InvalidArgumentError("busy fraction must be in [0, 1)");
  }
  return OkStatus();
}

namespace {

using sched::GpuMask;

constexpr int64_t kGoodputJobId = 1;
constexpr int64_t kSpareIdBase = int64_t{1} << 40;  // one allocation per domain's spares
constexpr int64_t kBackgroundIdBase = int64_t{1} << 41;

// The allocation of domain `d`'s spares.
sched::AllocId SpareId(size_t d) {
  return sched::AllocId::FromKey(kSpareIdBase + static_cast<int64_t>(d));
}

struct FailureDraw {
  double at_s = 0;
  int node = 0;
  size_t cause = 0;
  double repair_s = 0;
};

// Poisson over the cluster's GPUs; the GPU, its cause and its repair time drawn per failure.
std::vector<FailureDraw> DrawGoodputFailures(const topo::Cluster& cluster,
                                             const GoodputOptions& o) {
  std::vector<int> prefix{0};
  for (const topo::ClusterNode& n : cluster.nodes) {
    prefix.push_back(prefix.back() +
                     static_cast<int>(cluster.profiles[n.profile].topology.gpus.size()));
  }
  int total_count = 0;
  for (const FailureCause& c : o.causes) total_count += c.count;
  std::vector<FailureDraw> out;
  const double rate_per_s = o.interruptions_per_gpu_day * prefix.back() / 86400.0;
  if (!(rate_per_s > 0) || total_count == 0) return out;
  std::mt19937_64 rng(o.seed);
  const double horizon = o.days * 86400.0;
  for (double t = -std::log(Uniform01(rng)) / rate_per_s; t < horizon;
       t += -std::log(Uniform01(rng)) / rate_per_s) {
    FailureDraw f;
    f.at_s = t;
    const int gpu = static_cast<int>(Uniform01(rng) * prefix.back()) % prefix.back();
    f.node =
        static_cast<int>(std::upper_bound(prefix.begin(), prefix.end(), gpu) - prefix.begin() - 1);
    int pick = static_cast<int>(Uniform01(rng) * total_count) % total_count;
    while (pick >= o.causes[f.cause].count) pick -= o.causes[f.cause++].count;
    f.repair_s = -std::log(Uniform01(rng)) * o.repair_mean_s;
    out.push_back(f);
  }
  return out;
}

GpuMask WholeNode(const sched::ClusterState& s, int node) {
  return GpuMask::FirstN(s.GpuCount(node));
}

enum class NodeRole { kFree, kJob, kSpare, kBackground };

// The run of one policy: the cluster's roles per node, the job's ranks, its price.
class GoodputRun {
 public:
  GoodputRun(const topo::Cluster& c, const job::JobSpec& job, const ReplacementPolicy& p,
             const GoodputOptions& o)
      : cluster_(c), job_(job), policy_(p), options_(o), cost_(c), rng_(o.seed ^ 0x5eedu) {}

  StatusOr<GoodputResult> Run();

 private:
  Status PlaceJob(sched::ClusterState& state);
  Status FillBackground(sched::ClusterState& state);
  Status Price(double& predicted_ms, double& step_ms);
  int FindReplacement(int failed, double now);
  Status Replace(int failed, int with);
  void CountTpAcross();

  bool Up(int node, double now) const { return up_at_[node] <= now; }

  const topo::Cluster& cluster_;
  const job::JobSpec& job_;
  const ReplacementPolicy& policy_;
  const GoodputOptions& options_;
  cost::CostModel cost_;
  std::mt19937_64 rng_;
  std::vector<NodeRole> role_;
  std::vector<double> up_at_;
  sched::Placement placement_;
  Workload work_;
  GoodputResult r_;
};

Status GoodputRun::PlaceJob(sched::ClusterState& state) {
  const int n = static_cast<int>(cluster_.nodes.size());
  role_.assign(n, NodeRole::kFree);
  up_at_.assign(n, 0.0);
  // Spares first, the last nodes of each NVLink domain, so that the job leaves them.
  for (size_t d = 0; d < cluster_.nvlink_domains.size(); ++d) {
    const std::vector<int>& nodes = cluster_.nvlink_domains[d].nodes;
    std::vector<sched::NodeGpus> parts;
    for (int k = 0; k < policy_.spare_nodes_per_domain && k < static_cast<int>(nodes.size()); ++k) {
      const int node = nodes[nodes.size() - 1 - k];
      parts.push_back({node, WholeNode(state, node)});
      role_[node] = NodeRole::kSpare;
    }
    std::sort(parts.begin(), parts.end(),
              [](const sched::NodeGpus& a, const sched::NodeGpus& b) { return a.node < b.node; });
    if (!parts.empty()) RETURN_IF_ERROR(state.Allocate(SpareId(d), parts));
  }
  ASSIGN_OR_RETURN(sched::GangPlacerOptions po, sched::PolicyOptions("toposched"));
  ASSIGN_OR_RETURN(std::unique_ptr<sched::GangPlacer> placer,
                   sched::GangPlacer::Create(cluster_, po));
  const sched::Verdict v = placer->Place(state, job_);
  if (!v.fit()) {
    return FailedPreconditionError("job \"" + job_.name + "\" does not fit on cluster \"" +
                                   cluster_.name + "\" with " +
                                   std::to_string(policy_.spare_nodes_per_domain) +
                                   " spare node(s) per NVLink domain: " + v.Explain());
  }
  placement_ = *v.placement;
  RETURN_IF_ERROR(state.Allocate(sched::AllocId::Job(kGoodputJobId), placement_.parts));
  std::set<int> used;
  for (const sched::NodeGpus& g : placement_.parts) {
    role_[g.node] = NodeRole::kJob;
    used.insert(cluster_.nodes[g.node].nvlink_domain);
  }
  r_.job_nodes = static_cast<int>(placement_.parts.size());
  r_.job_domains = static_cast<int>(used.size());
  // Spares of domains the job does not use go back to the background.
  for (size_t d = 0; d < cluster_.nvlink_domains.size(); ++d) {
    if (policy_.spare_nodes_per_domain == 0) break;
    if (used.count(static_cast<int>(d)) > 0) {
      for (int node : cluster_.nvlink_domains[d].nodes) {
        if (role_[node] == NodeRole::kSpare) r_.spare_gpus += state.GpuCount(node);
      }
      continue;
    }
    RETURN_IF_ERROR(state.Release(SpareId(d)));
    for (int node : cluster_.nvlink_domains[d].nodes) {
      if (role_[node] == NodeRole::kSpare) role_[node] = NodeRole::kFree;
    }
  }
  return OkStatus();
}

// Single-node jobs of 1 to all GPUs of a node on random free-role nodes until busy_fraction of
// the GPUs are held (spares count as held: they run nothing else).
Status GoodputRun::FillBackground(sched::ClusterState& state) {
  const sched::Capacity cap = state.ClusterCapacity();
  const int target = static_cast<int>(options_.busy_fraction * cap.total_gpus);
  std::vector<int> candidates;
  for (int node = 0; node < static_cast<int>(role_.size()); ++node) {
    if (role_[node] == NodeRole::kFree) candidates.push_back(node);
  }
  int held = cap.total_gpus - cap.free_gpus;
  int64_t id = kBackgroundIdBase;
  while (held < target && !candidates.empty()) {
    const size_t k = static_cast<size_t>(rng_() % candidates.size());
    const int node = candidates[k];
    const GpuMask open = state.FreeMask(node);
    const int want = std::min<int>(1 + static_cast<int>(rng_() % state.GpuCount(node)),
                                   std::min(open.count(), target - held));
    GpuMask m;
    for (int g = 0, left = want; g < state.GpuCount(node) && left > 0; ++g) {
      if (open.test(g)) {
        m.set(g);
        --left;
      }
    }
    RETURN_IF_ERROR(state.Allocate(sched::AllocId::FromKey(id++), {sched::NodeGpus{node, m}}));
    held += want;
    role_[node] = NodeRole::kBackground;
    if (state.FreeMask(node).empty()) {
      candidates[k] = candidates.back();
      candidates.pop_back();
    }
  }
  return OkStatus();
}

Status GoodputRun::Price(double& predicted_ms, double& step_ms) {
  RETURN_IF_ERROR(sched::ScorePlacement(cost_, job_.layout, placement_));
  predicted_ms = placement_.predicted_ms;
  ASSIGN_OR_RETURN(StepParts parts,
                   StepPartsOn(cost_, job_, work_, placement_.ranks, StepCatalog::Default()));
  step_ms = StepMs(parts, 1.0, StepCatalog::Default().dp_backward_overlap);
  return OkStatus();
}

// A node to replace `failed` with at `now`, by the policy's order; -1 when none.
int GoodputRun::FindReplacement(int failed, double now) {
  const int domain = cluster_.nodes[failed].nvlink_domain;
  const int leaf = cluster_.nodes[failed].domain;
  const int gpus =
      static_cast<int>(cluster_.profiles[cluster_.nodes[failed].profile].topology.gpus.size());
  auto usable = [&](int node, NodeRole want) {
    const topo::ClusterNode& n = cluster_.nodes[node];
    return role_[node] == want && Up(node, now) && n.profile == cluster_.nodes[failed].profile &&
           static_cast<int>(cluster_.profiles[n.profile].topology.gpus.size()) == gpus;
  };
  for (ReplaceFrom from : policy_.order) {
    if ((from == ReplaceFrom::kDomainSpare || from == ReplaceFrom::kDomainFree) && domain >= 0) {
      const NodeRole want = from == ReplaceFrom::kDomainSpare ? NodeRole::kSpare : NodeRole::kFree;
      for (int node : cluster_.nvlink_domains[domain].nodes) {
        if (usable(node, want)) {
          ++(from == ReplaceFrom::kDomainSpare ? r_.from_domain_spare : r_.from_domain_free);
          return node;
        }
      }
    } else if (from == ReplaceFrom::kLeafFree) {
      for (int node = 0; node < static_cast<int>(role_.size()); ++node) {
        if (cluster_.nodes[node].domain == leaf && usable(node, NodeRole::kFree)) {
          ++r_.from_leaf_free;
          return node;
        }
      }
    } else if (from == ReplaceFrom::kAnyFree) {
      std::vector<int> any;
      for (int node = 0; node < static_cast<int>(role_.size()); ++node) {
        if (usable(node, NodeRole::kFree)) any.push_back(node);
      }
      if (!any.empty()) {
        ++r_.from_any_free;
        return any[static_cast<size_t>(rng_() % any.size())];
      }
    }
  }
  return -1;
}

// The job's ranks on `failed` move to the same GPUs and NICs of `with`.
Status GoodputRun::Replace(int failed, int with) {
  for (sched::RankSlot& s : placement_.ranks) {
    if (s.node == failed) s.node = with;
  }
  for (sched::NodeGpus& g : placement_.parts) {
    if (g.node == failed) g.node = with;
  }
  std::sort(placement_.parts.begin(), placement_.parts.end(),
            [](const sched::NodeGpus& a, const sched::NodeGpus& b) { return a.node < b.node; });
  role_[with] = NodeRole::kJob;
  role_[failed] = policy_.spare_nodes_per_domain > 0 ? NodeRole::kSpare : NodeRole::kFree;
  double predicted = 0, step = 0;
  RETURN_IF_ERROR(Price(predicted, step));
  r_.predicted_ms_after = predicted;
  r_.step_ms_after = step;
  r_.step_ms_worst = std::max(r_.step_ms_worst, step);
  return OkStatus();
}

void GoodputRun::CountTpAcross() {
  r_.tp_groups_across_domains = 0;
  const std::vector<sched::RankSlot>& ranks = placement_.ranks;
  for (int rank = 0; rank < static_cast<int>(ranks.size()); rank += job_.layout.tp) {
    std::set<int> in;
    for (int q : job_.layout.TpGroup(rank)) {
      const int node = ranks[q].node;
      const int domain = cluster_.nodes[node].nvlink_domain;
      in.insert(domain >= 0 ? domain : -2 - node);  // a node without a domain is its own
    }
    r_.tp_groups_across_domains += in.size() > 1 ? 1 : 0;
  }
}

}  // namespace

namespace {

// Progress of a running stretch of `run_s` seconds that ends in a failure (`failed`) or at the
// horizon: checkpoints every interval of running time, each write stopping progress for
// save_s. Returns {productive seconds, lost seconds, checkpoint-write seconds}.
struct StretchTimes {
  double productive = 0, lost = 0, writes = 0;
};
StretchTimes SplitStretch(double run_s, bool failed, const GoodputOptions& o) {
  const double interval = static_cast<double>(o.checkpoint_interval_s);
  const double save = static_cast<double>(o.checkpoint_save_s);
  const double whole = std::floor(run_s / interval);
  StretchTimes t;
  t.writes = whole * save;
  const double rest = run_s - whole * interval;
  if (failed) {
    t.lost = rest;
    t.productive = whole * (interval - save);
  } else {
    t.productive = run_s - t.writes;
  }
  return t;
}

}  // namespace

StatusOr<GoodputResult> GoodputRun::Run() {
  RETURN_IF_ERROR(options_.Validate());
  r_.policy = policy_.name;
  ASSIGN_OR_RETURN(sched::ClusterState state, sched::ClusterState::Create(cluster_));
  RETURN_IF_ERROR(PlaceJob(state));
  RETURN_IF_ERROR(FillBackground(state));
  TraceJob tj;
  tj.name = job_.name;
  tj.gpus = job_.total_gpus;
  tj.tp = job_.layout.tp;
  tj.pp = job_.layout.pp;
  tj.dp = job_.layout.dp;
  tj.model_params = job_.model_params;
  ASSIGN_OR_RETURN(work_, WorkloadOf(tj, job_, StepCatalog::Default(), "goodput"));
  RETURN_IF_ERROR(Price(r_.predicted_ms_before, r_.step_ms_before));
  r_.predicted_ms_after = r_.predicted_ms_before;
  r_.step_ms_after = r_.step_ms_worst = r_.step_ms_before;

  const double horizon = options_.days * 86400.0;
  r_.wall_s = horizon;
  // The job is down over [down_from, resume_at): waiting for a repair until `ready`, then
  // restarting. It runs from resume_at until the next failure that hits it.
  double down_from = 0, ready = 0, resume_at = 0;
  double rate = 1;  // first step / current step
  double ran_s = 0;
  auto book_down = [&](double until) {  // the down period, up to `until`
    const double end = std::min(until, resume_at);
    const double wait_end = std::min(end, ready);
    if (wait_end > down_from) r_.repair_wait_s += wait_end - down_from;
    const double restart_from = std::max(down_from, ready);
    if (end > restart_from) r_.restart_s += end - restart_from;
  };
  auto book_run = [&](double until, bool failed) {  // the running stretch, up to `until`
    if (until <= resume_at) return;
    const StretchTimes t = SplitStretch(until - resume_at, failed, options_);
    ran_s += until - resume_at;
    r_.useful_s += t.productive * rate;
    r_.lost_work_s += t.lost;
    r_.checkpoint_s += t.writes;
  };
  const std::vector<FailureDraw> failures = DrawGoodputFailures(cluster_, options_);
  r_.cluster_failures = static_cast<int>(failures.size());
  for (const FailureDraw& f : failures) {
    const FailureCause& cause = options_.causes[f.cause];
    if (cause.scope == FailureScope::kNode) {
      up_at_[f.node] = std::max(up_at_[f.node], f.at_s + f.repair_s);
    }
    if (role_[f.node] != NodeRole::kJob) continue;
    ++r_.interruptions;
    book_down(f.at_s);
    book_run(f.at_s, true);
    // An earlier wait for a repair still holds; a restart under way starts again.
    double need = std::max(f.at_s, ready);
    if (cause.scope == FailureScope::kInPlace) {
      ++r_.in_place;
    } else if (const int with = FindReplacement(f.node, f.at_s); with >= 0) {
      RETURN_IF_ERROR(Replace(f.node, with));
      rate = r_.step_ms_after > 0 ? r_.step_ms_before / r_.step_ms_after : 1.0;
    } else {
      ++r_.waited_for_repair;
      need = std::max(need, up_at_[f.node]);
    }
    down_from = f.at_s;
    ready = need;
    resume_at = need + static_cast<double>(options_.restart_cost_s);
  }
  book_down(horizon);
  book_run(horizon, false);
  r_.goodput = r_.useful_s / horizon;
  r_.ettr = (ran_s - r_.lost_work_s - r_.checkpoint_s) / horizon;
  CountTpAcross();
  return r_;
}

StatusOr<GoodputResult> SimulateGoodput(const topo::Cluster& cluster, const job::JobSpec& job,
                                        const ReplacementPolicy& policy,
                                        const GoodputOptions& options) {
  GoodputRun run(cluster, job, policy, options);
  return run.Run();
}

}  // namespace toposched::sim
