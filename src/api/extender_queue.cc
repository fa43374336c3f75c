// Queued gangs (ExtenderLedger::queues_gangs, the daemon): a gang is a job in the owner's queue.
// Its first pod submits it; filter and prioritize answer from the job's phase (pending: its place
// in the queue and the scheduler's reason; running: the node of the pod's rank in the job's
// placement); pods bound for a run that is over are evicted (Reconcile). See
// src/api/extender_internal.h for the shared state.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "api/extender.h"
#include "api/extender_internal.h"
#include "api/extender_k8s.h"

namespace toposched::api {

using nlohmann::json;
using namespace extender_internal;  // NOLINT: the helpers shared by the extender files

StatusOr<int64_t> ExtenderLedger::SubmitGang(const std::string&, const job::JobSpec&) {
  return Status(StatusCode::kUnimplemented, "this ledger does not queue gangs");
}

GangJobState ExtenderLedger::GangJob(int64_t) const {
  GangJobState s;
  s.why = "this ledger does not queue gangs";
  return s;
}

std::string ExtenderLedger::PendingReason(int64_t) const { return "not queued here"; }

Status ExtenderLedger::EndGang(int64_t, bool) {
  return Status(StatusCode::kUnimplemented, "this ledger does not queue gangs");
}

namespace extender_internal {

StatusOr<job::JobSpec> QueueSpec(const job::JobSpec& gang, const std::string& key, int pods,
                                 int gpus_per_pod, int max_node_gpus) {
  job::JobSpec s = gang;
  const job::LevelConstraint on_node{job::ConstraintMode::kRequired, job::kLevelNode, {}};
  if (gpus_per_pod <= 1) return s;
  if (pods == 1) {
    s.constraints.job = on_node;
  } else if (s.layout.tp % gpus_per_pod == 0 && s.layout.tp <= max_node_gpus) {
    s.constraints.tp = on_node;
  } else {
    const int tp = std::lcm(s.layout.tp, gpus_per_pod);
    if (tp > max_node_gpus || (pods * gpus_per_pod) % tp != 0) {
      return InvalidArgumentError("gang " + key + ": no layout keeps each pod of " +
                                  std::to_string(gpus_per_pod) + " GPUs on one node (TP " +
                                  std::to_string(gang.layout.tp) + ")");
    }
    s.layout.tp = tp;
    s.layout.pp = 1;
    s.layout.dp = 0;
    s.layout.ep = 1;
    s.total_gpus = 0;
    s.layout.tp_bytes = s.layout.pp_bytes = s.layout.dp_bytes = s.layout.ep_bytes = -1;
    s.constraints.tp = on_node;
  }
  if (Status st = s.Normalize(); !st.ok()) return st.WithPrefix("gang " + key);
  return s;
}

}  // namespace extender_internal

int Extender::RankNode(const GangState& g, int slot, const GangJobState& js) {
  if (js.phase != GangJobState::Phase::kRunning || js.placement == nullptr) return -1;
  const size_t first = static_cast<size_t>(slot) * g.gpus_per_pod;
  if (first >= js.placement->ranks.size()) return -1;
  return js.placement->ranks[first].node;
}

int Extender::QueuedNode(const GangState& g, int slot, int64_t* started_us) const {
  const GangJobState js = ledger_->GangJob(g.job);
  const int node = RankNode(g, slot, js);
  if (node >= 0 && started_us != nullptr) *started_us = js.started_us;
  return node;
}

Extender::Assignment Extender::AssignQueued(GangState& g, int slot, const PodInfo& info,
                                            const Candidates& cand) {
  Assignment a;
  const std::string who = Who(g, info);
  GangJobState js;
  if (g.job != 0) js = ledger_->GangJob(g.job);
  if (g.job == 0 || js.phase == GangJobState::Phase::kEnded) {
    auto spec =
        QueueSpec(g.spec, g.key, static_cast<int>(g.slots.size()), g.gpus_per_pod, max_node_gpus_);
    if (!spec.ok()) {
      a.unresolvable = true;
      a.reason = kPrefix + spec.status().message();
      return a;
    }
    auto id = ledger_->SubmitGang(g.key, *spec);
    if (!id.ok()) {
      a.unresolvable = id.status().code() == StatusCode::kInvalidArgument;
      a.reason = kPrefix + who + ": not queued: " + id.status().message();
      return a;
    }
    json book{{"gang", g.key},
              {"lone", g.lone},
              {"gpus_per_pod", g.gpus_per_pod},
              {"size", g.slots.size()},
              {"spec", json::parse(job::JobSpecToJson(g.spec, -1))},
              {"job", *id}};
    if (Status st = Record("queue", std::move(book), {}); !st.ok()) {
      a.reason = kPrefix + who + ": " + st.message();
      return a;
    }
    js = ledger_->GangJob(g.job);
  }
  const std::string job_name = "job-" + std::to_string(g.job);
  if (js.phase == GangJobState::Phase::kPending) {
    const std::string why = ledger_->PendingReason(g.job);
    g.last_decision = "pending: " + why;
    a.reason = kPrefix + who + " (" + job_name + "): pending, " + why;
    return a;
  }
  if (js.phase != GangJobState::Phase::kRunning) {
    a.reason = kPrefix + who + " (" + job_name + "): " + js.why;
    return a;
  }
  g.domain = js.placement->domain;
  g.predicted_ms = js.placement->predicted_ms;
  g.last_decision = "running: " + js.placement->domain;
  const int node = RankNode(g, slot, js);
  const Slot& s = g.slots[slot];
  if (s.bound && s.bound_start_us != js.started_us) {
    a.reason = kPrefix + who + ": rank " + std::to_string(slot) + " was bound for an earlier run " +
               "of " + job_name + " and is being evicted";
    return a;
  }
  if (node < 0) {
    a.reason = kPrefix + who + " (" + job_name + "): rank " + std::to_string(slot) +
               " has no place in the job's placement";
    return a;
  }
  if (std::find(cand.nodes.begin(), cand.nodes.end(), node) == cand.nodes.end()) {
    a.reason = kPrefix + who + " (" + job_name + ") runs rank " + std::to_string(slot) + " on " +
               cluster_.nodes[node].name + ", which is not among the candidates";
    return a;
  }
  a.node = node;
  a.reason =
      kPrefix + who + " (" + job_name + ") runs rank " + std::to_string(slot) + " on another node";
  return a;
}

Status Extender::ExpireQueued(GangState& g, int64_t now_us) {
  bool any_pod = false;
  for (const Slot& s : g.slots) {
    if (s.bound) return OkStatus();
    any_pod = any_pod || !s.pod_id.empty();
  }
  const GangJobState js = ledger_->GangJob(g.job);
  if (js.phase == GangJobState::Phase::kPending && any_pod) {
    g.touched_us = now_us;  // waiting in the queue is not idling on GPUs
    return OkStatus();
  }
  // A job that started since the gang's last progress is idle only from its start.
  if (js.phase == GangJobState::Phase::kRunning &&
      now_us - std::max(g.touched_us, js.started_us) <= options_.reservation_timeout_us) {
    return OkStatus();
  }
  // Running with no pod bound, or waiting with no pod left (its pods were evicted and never came
  // back): the job goes.
  if (js.phase != GangJobState::Phase::kEnded) {
    RETURN_IF_ERROR(ledger_->EndGang(g.job, /*completed=*/false));
  }
  std::vector<int> all(g.slots.size());
  std::iota(all.begin(), all.end(), 0);
  return ReleaseRanks(g, all, true, true,
                      js.phase == GangJobState::Phase::kPending
                          ? "no pod of the group left while it waited"
                          : "reservation expired: no pod bound");
}

StatusOr<int> Extender::Reconcile() {
  if (!ledger_->queues_gangs()) return 0;
  struct Stale {
    std::string gang;
    int rank = 0;
    int64_t bound_start_us = 0;
    PodRef pod;
    std::string why;
  };
  std::vector<Stale> stale;
  Status st = ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> over;
    for (const auto& [key, gp] : gangs_) {
      const GangState& g = *gp;
      if (g.job == 0) continue;
      const GangJobState js = ledger_->GangJob(g.job);
      bool any_bound = false;
      for (size_t i = 0; i < g.slots.size(); ++i) {
        const Slot& s = g.slots[i];
        if (!s.bound) continue;
        any_bound = true;
        if (js.phase == GangJobState::Phase::kRunning && js.started_us == s.bound_start_us) {
          continue;
        }
        const size_t slash = s.pod_name.find('/');
        PodRef ref{s.pod_name.substr(0, slash),
                   slash == std::string::npos ? s.pod_name : s.pod_name.substr(slash + 1), s.uid};
        const std::string why =
            "job-" + std::to_string(g.job) + " " +
            (js.phase == GangJobState::Phase::kRunning ? "runs again elsewhere"
             : js.phase == GangJobState::Phase::kPending
                 ? "was stopped and waits in the queue (" + ledger_->PendingReason(g.job) + ")"
                 : "is over (" + js.why + ")");
        stale.push_back({key, static_cast<int>(i), s.bound_start_us, std::move(ref), why});
      }
      if (!any_bound && js.phase == GangJobState::Phase::kEnded) over.push_back(key);
    }
    for (const std::string& key : over) {
      GangState& g = *gangs_.at(key);
      std::vector<int> all(g.slots.size());
      std::iota(all.begin(), all.end(), 0);
      if (Status rs = ReleaseRanks(g, all, true, true, "job ended"); !rs.ok()) {
        spdlog::error("msg=\"forgetting gang {}\" error=\"{}\"", key, rs.message());
      }
    }
  });
  if (!st.ok()) return st;
  std::vector<const Stale*> done;
  for (const Stale& s : stale) {
    if (evictor_ == nullptr) {
      spdlog::warn("msg=\"pod {}/{} must go ({}) but no evictor is configured: its slot is freed\"",
                   s.pod.name_space, s.pod.name, s.why);
      done.push_back(&s);
      continue;
    }
    Status es = evictor_->Evict(s.pod, s.why);
    if (es.ok()) {
      spdlog::info("msg=\"pod evicted\" pod={}/{} why=\"{}\"", s.pod.name_space, s.pod.name, s.why);
      done.push_back(&s);
    } else {
      spdlog::warn("msg=\"eviction refused, retried after the next pass\" pod={}/{} error=\"{}\"",
                   s.pod.name_space, s.pod.name, es.message());
    }
  }
  if (done.empty()) return 0;
  int evicted = 0;
  st = ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Stale* s : done) {
      auto it = gangs_.find(s->gang);
      if (it == gangs_.end()) continue;
      GangState& g = *it->second;
      if (s->rank >= static_cast<int>(g.slots.size())) continue;
      const Slot& slot = g.slots[s->rank];
      if (!slot.bound || slot.bound_start_us != s->bound_start_us || slot.uid != s->pod.uid) {
        continue;
      }
      if (Status rs = ReleaseRanks(g, {s->rank}, true, false, "evicted: " + s->why); rs.ok()) {
        ++evicted;
      }
      // A lone pod's controller recreates it under another name, which is another gang: this
      // one's job is over when its pod is.
      if (g.lone && ledger_->GangJob(g.job).phase != GangJobState::Phase::kEnded) {
        if (Status es = ledger_->EndGang(g.job, false); !es.ok()) {
          spdlog::error("msg=\"ending job-{}\" error=\"{}\"", g.job, es.message());
        }
      }
    }
  });
  if (!st.ok()) return st;
  return evicted;
}

}  // namespace toposched::api
