// Scheduler: priority changes, fair-share decay, elastic resizes, and the reaction to health
// reports (failures, degraded links). The queue pass itself is in scheduler.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <set>

#include "core/time_units.h"
#include "sched/node_network.h"
#include "sched/scheduler.h"
#include "select/rank_order.h"

namespace toposched::sched {

namespace {

using job::JobState;

std::string IdName(int64_t id) { return "job-" + std::to_string(id); }

std::string MsChange(double before, double after) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "predicted %.3f -> %.3f ms", before, after);
  return buf;
}

int CountGpus(const std::vector<NodeGpus>& parts) {
  int n = 0;
  for (const NodeGpus& p : parts) n += p.gpus.count();
  return n;
}

std::string WithReason(std::string what, const std::string& reason) {
  if (!reason.empty()) what += " (" + reason + ")";
  return what;
}

}  // namespace

void Scheduler::Accrue(int64_t now_us) {
  if (options_.fair_share_half_life_s <= 0 || now_us <= accrued_us_) {
    accrued_us_ = std::max(accrued_us_, now_us);
    return;
  }
  const double dt_s = SecondsOfUs(now_us - accrued_us_);
  const double half_life_s = static_cast<double>(options_.fair_share_half_life_s);
  const double f = std::exp2(-dt_s / half_life_s);
  for (auto& [k, v] : user_usage_) v *= f;
  for (auto& [k, v] : queue_usage_) v *= f;
  // A GPU held over the whole interval: the integral of 2^(-(dt - s)/H) ds over [0, dt].
  const double per_gpu = half_life_s / std::log(2.0) * (1 - f);
  for (const auto& [id, j_ptr] : Running()) {
    const Job& j = *j_ptr;
    if (!j.placement) continue;
    const double g = CountGpus(j.placement->parts);
    user_usage_[j.spec.user] += g * per_gpu;
    queue_usage_[j.spec.queue] += g * per_gpu;
  }
  accrued_us_ = now_us;
}

const job::JobSpec* Scheduler::Spec(JobId id) const {
  const Job* j = Find(id);
  return j == nullptr ? nullptr : &j->spec;
}

std::vector<JobId> Scheduler::JobIds() const {
  std::vector<JobId> ids;
  for (const auto& [id, j] : jobs_) ids.push_back(JobId{id});
  return ids;
}

Status Scheduler::SetPriority(JobId id, int priority, int64_t now_us) {
  Job* j = Find(id);
  if (j == nullptr) return NotFoundError("no job " + IdName(id.value));
  const JobState s = j->record.state();
  if (s != JobState::kPending && !job::HoldsResources(s)) {
    return FailedPreconditionError(IdName(id.value) +
                                   ": cannot change the priority of a job in state " +
                                   job::JobStateName(s));
  }
  Accrue(now_us);
  if (priority == j->spec.priority) return OkStatus();
  Status st = j->record.Note(
      now_us, "priority " + std::to_string(j->spec.priority) + " -> " + std::to_string(priority));
  Sync(*j);
  RETURN_IF_ERROR(st);
  j->spec.priority = priority;
  return OkStatus();
}

// --- elastic ---

bool Scheduler::ValidDp(const job::JobSpec& s, int dp) {
  const int64_t unit = int64_t{s.layout.tp} * s.layout.pp;
  if (dp < 1 || s.gpus_per_replica < 1 || dp % std::max(s.layout.ep, 1) != 0) return false;
  const int64_t gpus = unit * dp;
  if (gpus % s.gpus_per_replica != 0) return false;
  const int64_t replicas = gpus / s.gpus_per_replica;
  if (s.elastic && (replicas < s.elastic->min_replicas || replicas > s.elastic->max_replicas)) {
    return false;
  }
  return true;
}

std::vector<NodeGpus> Scheduler::PartsOfKept(const Job& j, const std::vector<int>& keep) {
  const job::Layout& l = j.spec.layout;
  std::vector<char> kept(static_cast<size_t>(l.dp), 0);
  for (int d : keep) kept[d] = 1;
  std::map<int, GpuMask> by_node;
  for (const RankSlot& r : j.placement->ranks) {
    if (kept[(r.rank / l.tp) % l.dp]) by_node[r.node].set(r.gpu);
  }
  std::vector<NodeGpus> parts;
  for (const auto& [node, m] : by_node) parts.push_back(NodeGpus{node, m});
  return parts;
}

int Scheduler::HomeDomain(const std::vector<NodeGpus>& parts) const {
  std::vector<int> nodes;
  for (const NodeGpus& p : parts) nodes.push_back(p.node);
  return placer_->cluster().LowestCommonDomain(nodes);
}

std::string Scheduler::DomainOf(const std::vector<NodeGpus>& parts) const {
  const topo::Cluster& c = placer_->cluster();
  if (parts.empty()) return "";
  if (parts.size() == 1) return c.nodes[parts[0].node].name;
  const int d = HomeDomain(parts);
  if (d >= 0) return c.domains[d].name;
  return c.name.empty() ? "cluster" : c.name;
}

std::vector<int> Scheduler::RemoteOrder(const Job& j) const {
  const topo::Cluster& c = placer_->cluster();
  const job::Layout& l = j.spec.layout;
  const int home = j.placement->ranks[0].node;
  const int levels = static_cast<int>(c.levels.size());
  auto dist = [&](int node) {
    if (node == home) return 0;
    const int nvd = c.nodes[node].nvlink_domain;
    if (nvd >= 0 && nvd == c.nodes[home].nvlink_domain) return 1;
    const int meet = c.MeetLevel(home, node);
    return meet < 0 ? 1 << 20 : 2 + levels - meet;
  };
  std::vector<int> far(static_cast<size_t>(l.dp), 0);
  for (const RankSlot& r : j.placement->ranks) {
    int& f = far[(r.rank / l.tp) % l.dp];
    f = std::max(f, dist(r.node));
  }
  std::vector<int> order(static_cast<size_t>(l.dp));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return far[a] != far[b] ? far[a] > far[b] : a > b; });
  return order;
}

Status Scheduler::Resize(Job& j, const std::vector<int>& keep, const Placement* extra, int extra_dp,
                         int64_t now_us, const std::string& why) {
  const job::Layout& l = j.spec.layout;
  const int tp = l.tp, pp = l.pp, old_dp = l.dp;
  const int kept = static_cast<int>(keep.size());
  const int new_dp = kept + extra_dp;
  job::JobSpec ns = j.spec;
  ns.layout.dp = new_dp;
  ns.total_gpus = tp * pp * new_dp;
  ns.replicas = ns.total_gpus / ns.gpus_per_replica;
  RETURN_IF_ERROR(ns.Validate());
  Placement np;
  np.ranks.resize(static_cast<size_t>(ns.total_gpus));
  for (int p = 0; p < pp; ++p) {
    for (int d = 0; d < new_dp; ++d) {
      for (int t = 0; t < tp; ++t) {
        RankSlot slot = d < kept ? j.placement->ranks[t + tp * (keep[d] + old_dp * p)]
                                 : extra->ranks[t + tp * ((d - kept) + extra_dp * p)];
        slot.rank = t + tp * (d + new_dp * p);
        np.ranks[slot.rank] = slot;
      }
    }
  }
  std::map<int, GpuMask> by_node;
  for (const RankSlot& r : np.ranks) by_node[r.node].set(r.gpu);
  for (const auto& [node, m] : by_node) np.parts.push_back(NodeGpus{node, m});
  RETURN_IF_ERROR(placer_->Rescore(ns, np));
  np.best_possible_ms =
      std::min(placer_->BestPossibleMs(ns).value_or(np.predicted_ms), np.predicted_ms);
  np.domain = DomainOf(np.parts);
  np.decision_us = now_us;
  RETURN_IF_ERROR(state_.Resize(AllocId::Job(j.id), np.parts));
  const std::string note = why + ": " + std::to_string(j.spec.replicas) + " -> " +
                           std::to_string(ns.replicas) + " replicas (" +
                           std::to_string(ns.total_gpus) + " GPUs, dp " + std::to_string(old_dp) +
                           " -> " + std::to_string(new_dp) + ") on " + np.domain + ", " +
                           MsChange(j.placement->predicted_ms, np.predicted_ms);
  np.explanation = note;
  Status st = j.record.Note(now_us, note);
  Sync(j);
  j.spec = std::move(ns);
  j.shape_id = ShapeId(j.spec);
  j.placement = std::move(np);
  return st;
}

StatusOr<bool> Scheduler::TryGrow(Job& j, int64_t now_us) {
  const job::JobSpec& s = j.spec;
  if (!s.elastic || !j.placement) return false;
  const int unit = s.layout.tp * s.layout.pp;
  const int dp = s.layout.dp;
  const int max_dp = static_cast<int>(int64_t{s.elastic->max_replicas} * s.gpus_per_replica / unit);
  std::vector<int> sizes;
  for (int d = max_dp; d > dp; --d) {
    if (ValidDp(s, d)) sizes.push_back(d);
  }
  if (sizes.empty()) return false;

  // The job's domain — the lowest network domain holding all its nodes — with every node
  // outside it blocked on a copy of the state.
  const topo::Cluster& c = placer_->cluster();
  const int home_id = HomeDomain(j.placement->parts);
  const std::string home = home_id >= 0 ? c.domains[home_id].name : "the cluster";
  std::set<int> inside_nodes;
  if (home_id >= 0) {
    for (int n : c.NodesUnder(home_id)) inside_nodes.insert(n);
  }
  ClusterState inside = state_;
  std::vector<NodeGpus> outside;
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    if (!inside_nodes.empty() && inside_nodes.count(n)) continue;
    if (!state_.FreeMask(n).empty()) outside.push_back(NodeGpus{n, state_.FreeMask(n)});
  }
  // Its own owner's space: a job's or a hold's allocation on the copy cannot collide with it.
  if (!outside.empty()) RETURN_IF_ERROR(inside.Allocate(AllocId::Block(1), outside));

  std::vector<int> keep(static_cast<size_t>(dp));
  std::iota(keep.begin(), keep.end(), 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const ClusterState& st = attempt == 0 ? inside : state_;
    const int free = st.ClusterCapacity().free_gpus;
    for (int d : sizes) {
      if ((d - dp) * unit > free) continue;
      job::JobSpec extra = s;
      extra.layout.dp = d - dp;
      extra.replicas = extra.gpus_per_replica = extra.total_gpus = 0;
      extra.elastic.reset();
      extra.on_failure = job::FailurePolicy::kRequeue;
      RETURN_IF_ERROR(extra.Normalize());
      Verdict v = placer_->Place(st, extra);
      if (!v.fit()) continue;
      RETURN_IF_ERROR(Resize(j, keep, &*v.placement, d - dp, now_us,
                             attempt == 0 ? "elastic grow inside " + home
                                          : "elastic grow beyond " + home + " (no room inside)"));
      return true;
    }
  }
  return false;
}

StatusOr<bool> Scheduler::TryShrinkOthers(Job& j, int64_t now_us) {
  std::vector<Job*> cands;
  for (const auto& [id, o_ptr] : Running()) {
    Job& o = *o_ptr;
    if (o.record.state() != JobState::kRunning || !o.spec.elastic ||
        o.spec.priority >= j.spec.priority) {
      continue;
    }
    cands.push_back(&o);
  }
  if (cands.empty()) return false;
  std::stable_sort(cands.begin(), cands.end(), [](const Job* a, const Job* b) {
    return a->spec.priority != b->spec.priority ? a->spec.priority < b->spec.priority
                                                : a->id < b->id;
  });
  ClusterState trial = state_;
  std::vector<std::pair<Job*, std::vector<int>>> plan;
  for (Job* o : cands) {
    std::vector<int> keep = RemoteOrder(*o);  // most remote first: released from the front
    for (int d = o->spec.layout.dp - 1; d >= 1; --d) {
      if (!ValidDp(o->spec, d)) continue;
      while (static_cast<int>(keep.size()) > d) keep.erase(keep.begin());
      std::vector<int> sorted = keep;
      std::sort(sorted.begin(), sorted.end());
      RETURN_IF_ERROR(trial.Resize(AllocId::Job(o->id), PartsOfKept(*o, sorted)));
      if (plan.empty() || plan.back().first != o) plan.emplace_back(o, sorted);
      plan.back().second = sorted;
      if (trial.ClusterCapacity().free_gpus < j.spec.total_gpus) continue;
      Verdict v = placer_->Place(trial, j.spec);
      if (!v.fit()) continue;
      const std::string by = "elastic shrink for " + IdName(j.id) + " (priority " +
                             std::to_string(j.spec.priority) + "), most remote replicas first";
      std::string names;
      for (auto& [victim, kept] : plan) {
        RETURN_IF_ERROR(Resize(*victim, kept, nullptr, 0, now_us, by));
        names += (names.empty() ? "" : ", ") + IdName(victim->id);
      }
      RETURN_IF_ERROR(Start(j, std::move(*v.placement), now_us,
                            "scheduled after shrinking " + names + " (" +
                                std::to_string(j.spec.total_gpus) + " GPUs)"));
      return true;
    }
  }
  return false;
}

// --- failures ---

Status Scheduler::Requeue(Job& j, JobState via_state, const std::string& why, int64_t now_us) {
  Status st = j.record.Transition(now_us, via_state, why);
  if (st.ok()) st = j.record.Transition(now_us, JobState::kRequeued, "requeued: " + why);
  if (st.ok()) st = j.record.Transition(now_us, JobState::kPending, "back in queue");
  Sync(j);
  RETURN_IF_ERROR(st);
  j.pending_reason = Words("requeued: " + why);
  return ReleaseIfStopped(j);
}

Status Scheduler::HandleFailure(Job& j, JobState fail_state, const std::string& why, int64_t now_us,
                                const std::vector<NodeGpus>& broken) {
  if (j.record.state() == JobState::kCompleting) {
    Status st = j.record.Transition(now_us, fail_state, why);
    Sync(j);
    RETURN_IF_ERROR(st);
    return ReleaseIfStopped(j);
  }
  if (j.record.state() != JobState::kRunning) return OkStatus();
  switch (j.spec.on_failure) {
    case job::FailurePolicy::kFail: {
      Status st = j.record.Transition(now_us, fail_state, why + "; on_failure: fail");
      Sync(j);
      RETURN_IF_ERROR(st);
      return ReleaseIfStopped(j);
    }
    case job::FailurePolicy::kShrink: {
      const job::Layout& l = j.spec.layout;
      std::set<int> lost;
      for (const RankSlot& r : j.placement->ranks) {
        for (const NodeGpus& b : broken) {
          if (b.node == r.node && b.gpus.test(r.gpu)) lost.insert((r.rank / l.tp) % l.dp);
        }
      }
      std::vector<int> keep;
      for (int d : RemoteOrder(j)) {
        if (!lost.count(d)) keep.push_back(d);
      }
      // keep is most remote first: drop from the front until the size is valid.
      while (!keep.empty() && !ValidDp(j.spec, static_cast<int>(keep.size()))) {
        keep.erase(keep.begin());
      }
      if (!keep.empty()) {
        std::sort(keep.begin(), keep.end());
        return Resize(j, keep, nullptr, 0, now_us, why + "; on_failure: shrink");
      }
      return Requeue(j, fail_state, why + "; cannot shrink below min_replicas", now_us);
    }
    case job::FailurePolicy::kRequeue:
      break;
  }
  return Requeue(j, fail_state, why + "; on_failure: requeue", now_us);
}

Status Scheduler::HandleDegraded(Job& j, const std::string& why, double before_ms, double after_ms,
                                 int64_t now_us) {
  if (j.record.state() != JobState::kRunning) return OkStatus();
  const std::string what = why + ", " + MsChange(before_ms, after_ms);
  if (j.spec.on_degraded == job::DegradedPolicy::kWait) {
    return Requeue(j, JobState::kPreempted,
                   what + "; on_degraded: wait, stopped to wait for a better placement", now_us);
  }
  Status st = j.record.Note(now_us, what + "; on_degraded: continue");
  Sync(j);
  return st;
}

Status Scheduler::SetNodeHealth(int node, topo::Health health, int64_t now_us,
                                const std::string& reason) {
  ASSIGN_OR_RETURN(std::vector<AllocId> affected, state_.SetNodeHealth(node, health));
  Accrue(now_us);
  const std::string why = WithReason(
      "node " + placer_->cluster().nodes[node].name + " " + topo::HealthName(health), reason);
  for (AllocId id : affected) {
    Job* j = Find(id.key());  // a job's key is its id; a hold's finds no job
    if (j == nullptr || !j->placement) continue;
    if (health == topo::Health::kUnhealthy) {
      std::vector<NodeGpus> broken;
      for (const NodeGpus& p : j->placement->parts) {
        if (p.node == node) broken.push_back(p);
      }
      RETURN_IF_ERROR(HandleFailure(*j, JobState::kNodeFail, why, now_us, broken));
    } else {
      RETURN_IF_ERROR(
          HandleDegraded(*j, why, j->placement->predicted_ms, j->placement->predicted_ms, now_us));
    }
  }
  return OkStatus();
}

Status Scheduler::SetGpuHealth(int node, int gpu, topo::Health health, int64_t now_us,
                               const std::string& reason) {
  ASSIGN_OR_RETURN(std::vector<AllocId> affected, state_.SetGpuHealth(node, gpu, health));
  Accrue(now_us);
  const topo::Cluster& c = placer_->cluster();
  const std::string why =
      WithReason("GPU " + std::to_string(c.topology(node).gpus[gpu].index) + " of " +
                     c.nodes[node].name + " " + topo::HealthName(health),
                 reason);
  GpuMask m;
  m.set(gpu);
  for (AllocId id : affected) {
    Job* j = Find(id.key());  // a job's key is its id; a hold's finds no job
    if (j == nullptr || !j->placement) continue;
    if (health == topo::Health::kUnhealthy) {
      RETURN_IF_ERROR(HandleFailure(*j, JobState::kFailed, why, now_us, {NodeGpus{node, m}}));
    } else {
      RETURN_IF_ERROR(
          HandleDegraded(*j, why, j->placement->predicted_ms, j->placement->predicted_ms, now_us));
    }
  }
  return OkStatus();
}

Status Scheduler::SetNodeDrained(int node, bool drained, int64_t now_us,
                                 const std::string& reason) {
  Accrue(now_us);
  RETURN_IF_ERROR(state_.SetNodeDrained(node, drained));
  if (drained) {
    drain_reasons_[node] = reason;
  } else {
    drain_reasons_.erase(node);
  }
  return OkStatus();
}

Status Scheduler::SetNicHealth(int node, int nic, topo::Health health, int64_t now_us,
                               const std::string& reason) {
  const topo::Cluster& base = base_placer_->cluster();
  if (node < 0 || node >= static_cast<int>(base.nodes.size())) {
    return InvalidArgumentError("node id " + std::to_string(node) + " out of range");
  }
  const topo::NodeTopology& t = OwnTopology(node);
  if (nic < 0 || nic >= static_cast<int>(t.nics.size())) {
    return InvalidArgumentError("node \"" + base.nodes[node].name + "\" has no NIC position " +
                                std::to_string(nic) + " (" + std::to_string(t.nics.size()) +
                                " NICs)");
  }
  Accrue(now_us);
  if (health == topo::Health::kHealthy) {
    nic_health_.erase({node, nic});
  } else {
    nic_health_[{node, nic}] = health;
  }
  return TopologyChanged(node,
                         WithReason("NIC " + t.nics[nic].name + " of " + base.nodes[node].name +
                                        " " + topo::HealthName(health),
                                    reason),
                         now_us);
}

Status Scheduler::SetNvlinkHealth(int node, int gpu, topo::Health health, int64_t now_us,
                                  const std::string& reason) {
  const topo::Cluster& base = base_placer_->cluster();
  if (node < 0 || node >= static_cast<int>(base.nodes.size())) {
    return InvalidArgumentError("node id " + std::to_string(node) + " out of range");
  }
  const topo::NodeTopology& t = OwnTopology(node);
  if (gpu < 0 || gpu >= static_cast<int>(t.gpus.size())) {
    return InvalidArgumentError("node \"" + base.nodes[node].name + "\" has no GPU position " +
                                std::to_string(gpu));
  }
  Accrue(now_us);
  if (health == topo::Health::kHealthy) {
    nvlink_health_.erase({node, gpu});
  } else {
    nvlink_health_[{node, gpu}] = health;
  }
  return TopologyChanged(node,
                         WithReason("NVLinks of GPU " + std::to_string(t.gpus[gpu].index) + " on " +
                                        base.nodes[node].name + " " + topo::HealthName(health),
                                    reason),
                         now_us);
}

namespace {

// The reported topology, with what it leaves unknown taken from the profile's: the GPU model and
// memory (hwloc and sysfs do not always name them), and, where the NIC counts agree, each NIC's
// rate and link layer.
topo::NodeTopology MergedWithProfile(const topo::NodeTopology& profile, topo::NodeTopology t) {
  if (t.gpu_model.empty()) t.gpu_model = profile.gpu_model;
  for (size_t g = 0; g < t.gpus.size() && g < profile.gpus.size(); ++g) {
    if (t.gpus[g].model.empty()) t.gpus[g].model = profile.gpus[g].model;
    if (!t.gpus[g].memory_mib) t.gpus[g].memory_mib = profile.gpus[g].memory_mib;
  }
  if (t.nics.size() == profile.nics.size()) {
    for (size_t i = 0; i < t.nics.size(); ++i) {
      if (!t.nics[i].rate_gbps) t.nics[i].rate_gbps = profile.nics[i].rate_gbps;
      if (t.nics[i].link_layer == topo::LinkLayer::kUnknown) {
        t.nics[i].link_layer = profile.nics[i].link_layer;
      }
    }
  }
  return t;
}

}  // namespace

const topo::NodeTopology& Scheduler::OwnTopology(int node) const {
  auto it = reported_topology_.find(node);
  return it != reported_topology_.end() ? it->second.topology
                                        : base_placer_->cluster().topology(node);
}

Status Scheduler::SetNodeTopology(int node, const topo::NodeTopology& topology, int64_t now_us,
                                  const std::string& reason) {
  const topo::Cluster& base = base_placer_->cluster();
  if (node < 0 || node >= static_cast<int>(base.nodes.size())) {
    return InvalidArgumentError("node id " + std::to_string(node) + " out of range");
  }
  const std::string& name = base.nodes[node].name;
  if (Status st = topology.Validate(); !st.ok()) {
    return InvalidArgumentError("topology of node \"" + name + "\": " + st.message());
  }
  const topo::NodeTopology& profile = base.topology(node);
  if (topology.gpus.size() != profile.gpus.size()) {
    return InvalidArgumentError(
        "topology of node \"" + name + "\": " + std::to_string(topology.gpus.size()) +
        " GPUs, the cluster model has " + std::to_string(profile.gpus.size()) +
        " (a node's GPU count changes with the cluster file and a restart, not under the "
        "allocations on it)");
  }
  Accrue(now_us);
  topo::NodeTopology merged = MergedWithProfile(profile, topology);
  merged.source = profile.source;  // the same hardware whoever described it
  const bool differs = !(merged == profile);
  // NIC health reports follow their NIC by name to its position in the new topology; a NIC the
  // node no longer has loses its report.
  const topo::NodeTopology& before = OwnTopology(node);
  std::map<std::pair<int, int>, topo::Health> nic_health = nic_health_;
  for (auto it = nic_health.begin(); it != nic_health.end();) {
    if (it->first.first != node) {
      ++it;
      continue;
    }
    const size_t pos = static_cast<size_t>(it->first.second);
    const std::string nic_name = pos < before.nics.size() ? before.nics[pos].name : "";
    const topo::Health h = it->second;
    it = nic_health.erase(it);
    for (size_t k = 0; k < merged.nics.size(); ++k) {
      if (merged.nics[k].name == nic_name) nic_health[{node, static_cast<int>(k)}] = h;
    }
  }
  // Applied whole or not at all: a rebuild that fails leaves the model as it was.
  std::optional<Reported> old;
  if (auto it = reported_topology_.find(node); it != reported_topology_.end()) old = it->second;
  std::swap(nic_health_, nic_health);
  reported_topology_[node] = Reported{std::move(merged), reason, differs};
  Status st = TopologyChanged(node, "topology of " + name + " from " + reason, now_us);
  if (!st.ok()) {
    std::swap(nic_health_, nic_health);
    if (old) {
      reported_topology_[node] = *old;
    } else {
      reported_topology_.erase(node);
    }
    (void)TopologyChanged(node, "topology report of " + name + " undone", now_us);
  }
  return st;
}

Status Scheduler::SetNodeNetwork(const NodeNetworkReport& report, int64_t now_us) {
  const topo::Cluster& base = base_placer_->cluster();
  const int node = report.node;
  if (node < 0 || node >= static_cast<int>(base.nodes.size())) {
    return InvalidArgumentError("node id " + std::to_string(node) + " out of range");
  }
  const std::string& name = base.nodes[node].name;
  if (report.nvlink_domain && !report.nvlink_domain->empty() && report.nvlink_gbps < 0) {
    return InvalidArgumentError("node \"" + name + "\": nvlink_gbps must be >= 0");
  }
  // What reports said of the node, merged; a part no report gave stays the cluster file's (a
  // node attached above the lowest level keeps its place when only its clique is reported).
  const NodeNetworkReport at_base = NetworkPlaceOf(base, node);
  auto it = network_.find(node);
  NodeNetworkReport merged;
  if (it != network_.end()) merged = it->second;
  if (!report.domains.empty()) merged.domains = report.domains;
  if (report.nvlink_domain) {
    merged.nvlink_domain = report.nvlink_domain;
    merged.nvlink_gbps = report.nvlink_gbps;
  }
  merged.node = node;
  merged.source = report.source;
  const NodeNetworkReport now = NetworkPlaceOf(placer_->cluster(), node);
  if (AtPlace(merged, now)) return OkStatus();  // where the model has it already
  Accrue(now_us);
  std::optional<NodeNetworkReport> old;
  if (it != network_.end()) old = it->second;
  if (AtPlace(merged, at_base)) {
    network_.erase(node);  // back where the cluster file put it
  } else {
    network_[node] = merged;
  }
  consolidated_.clear();  // domain sizes change
  const std::string why = "network place of " + name + " from " +
                          (report.source.empty() ? "a node network report" : report.source) + ": " +
                          PlaceWords(merged) + " (was " + PlaceWords(now) + ")";
  Status st = TopologyChanged(node, why, now_us);
  if (!st.ok()) {
    if (old) {
      network_[node] = *old;
    } else {
      network_.erase(node);
    }
    (void)TopologyChanged(node, "network report of " + name + " undone", now_us);
    consolidated_.clear();
  }
  return st;
}

Status Scheduler::TopologyChanged(int node, const std::string& why, int64_t now_us) {
  const topo::Cluster& base = base_placer_->cluster();
  const bool reports = std::any_of(reported_topology_.begin(), reported_topology_.end(),
                                   [](const auto& r) { return r.second.differs; });
  if (nic_health_.empty() && nvlink_health_.empty() && !reports && network_.empty()) {
    RETURN_IF_ERROR(state_.Rebind(base));
    placer_ = base_placer_;
    overlay_placer_.reset();
    overlay_cluster_.reset();
  } else {
    auto c = std::make_unique<topo::Cluster>(base);
    if (!network_.empty()) RETURN_IF_ERROR(PlaceInNetwork(network_, *c));
    std::map<int, topo::HardwareProfile> changed;
    auto profile_of = [&](int n) -> topo::HardwareProfile& {
      auto it = changed.find(n);
      if (it != changed.end()) return it->second;
      topo::HardwareProfile p = base.profiles[base.nodes[n].profile];
      p.name += "~" + base.nodes[n].name;
      return changed.emplace(n, std::move(p)).first->second;
    };
    // Nodes with a reported topology and no health report of their own share one profile per
    // distinct topology (a fleet of identical nodes stays one profile for the placer); nodes with
    // health reports get a copy each (profile_of), starting from their reported topology.
    std::set<int> own;
    for (const auto& [key, h] : nic_health_) own.insert(key.first);
    for (const auto& [key, h] : nvlink_health_) own.insert(key.first);
    std::vector<std::pair<const topo::NodeTopology*, int>> shared;
    for (const auto& [n, r] : reported_topology_) {
      if (!r.differs) continue;
      if (own.count(n)) {
        profile_of(n).topology = r.topology;
        continue;
      }
      const topo::NodeTopology& reported = r.topology;  // (clang 14: no capture of bindings)
      auto it = std::find_if(shared.begin(), shared.end(),
                             [&](const auto& s) { return *s.first == reported; });
      if (it == shared.end()) {
        topo::HardwareProfile p = base.profiles[base.nodes[n].profile];
        p.name += "~reported-by-" + base.nodes[n].name;
        p.topology = r.topology;
        c->profiles.push_back(std::move(p));
        it = shared.insert(shared.end(), {&r.topology, static_cast<int>(c->profiles.size()) - 1});
      }
      c->nodes[n].profile = it->second;
    }
    for (const auto& [key, h] : nic_health_) {
      profile_of(key.first).topology.nics[key.second].health = h;
    }
    for (const auto& [key, h] : nvlink_health_) {
      topo::NodeTopology& t = profile_of(key.first).topology;
      const int g = key.second;
      for (int o = 0; o < static_cast<int>(t.gpus.size()); ++o) {
        if (o == g) continue;
        topo::Path p = t.gpu_gpu(g, o);
        if (p.cls != topo::PathClass::kNV) continue;
        if (h == topo::Health::kUnhealthy) {
          const bool same_numa =
              t.gpus[g].numa && t.gpus[o].numa && *t.gpus[g].numa == *t.gpus[o].numa;
          p = topo::Path{same_numa ? topo::PathClass::kNODE : topo::PathClass::kSYS, 0};
        } else {
          p.nvlinks = std::max(1, p.nvlinks / 2);
        }
        t.set_path(t.gpu_dev(g), t.gpu_dev(o), p);
      }
      int& ports = t.gpus[g].nvlink_ports;
      ports = h == topo::Health::kUnhealthy ? 0 : std::max(ports > 0 ? 1 : 0, ports / 2);
    }
    for (auto& [n, p] : changed) {
      c->profiles.push_back(std::move(p));
      c->nodes[n].profile = static_cast<int>(c->profiles.size()) - 1;
    }
    ASSIGN_OR_RETURN(std::unique_ptr<GangPlacer> placer,
                     GangPlacer::Create(*c, base_placer_->options()));
    RETURN_IF_ERROR(state_.Rebind(*c));
    overlay_cluster_ = std::move(c);
    overlay_placer_ = std::move(placer);
    placer_ = overlay_placer_.get();
  }

  // Re-score the running jobs on the node: NICs re-assigned on the new topology.
  const topo::NodeTopology& t = placer_->cluster().topology(node);
  for (const auto& [id, j_ptr] : Running()) {
    Job& j = *j_ptr;
    if (j.record.state() != JobState::kRunning || !j.placement) continue;
    std::vector<size_t> local;
    for (size_t r = 0; r < j.placement->ranks.size(); ++r) {
      if (j.placement->ranks[r].node == node) local.push_back(r);
    }
    if (local.empty()) continue;
    Placement np = *j.placement;
    std::vector<int> order;
    for (size_t r : local) order.push_back(np.ranks[r].gpu);
    const std::vector<int> nics = AssignNics(t, order);
    for (size_t i = 0; i < local.size(); ++i) np.ranks[local[i]].nic = nics[i];
    RETURN_IF_ERROR(placer_->Rescore(j.spec, np));
    np.domain = DomainOf(np.parts);  // the node may have moved in the network
    const double before = j.placement->predicted_ms, after = np.predicted_ms;
    j.placement = std::move(np);
    if (after > before * (1 + 1e-9)) {
      RETURN_IF_ERROR(HandleDegraded(j, why, before, after, now_us));
    } else if (after < before * (1 - 1e-9)) {
      Status st = j.record.Note(now_us, why + ", " + MsChange(before, after));
      Sync(j);
      RETURN_IF_ERROR(st);
    }
  }
  return OkStatus();
}

}  // namespace toposched::sched
