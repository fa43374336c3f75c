// The extender's bind verb and pod-deleted: a pod bound where its slot is, a pod gone freeing its
// slot (src/api/extender_internal.h).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/extender.h"
#include "api/extender_internal.h"
#include "api/extender_k8s.h"

namespace toposched::api {

using nlohmann::json;
using namespace extender_internal;  // NOLINT: the helpers shared by the extender files

namespace {

struct BindingArgs {
  std::string pod_name, pod_namespace, pod_uid, node;
};

StatusOr<BindingArgs> ReadBinding(const json& j, const std::string& what, bool need_node) {
  const std::vector<std::string> fields =
      need_node ? std::vector<std::string>{"PodName", "PodNamespace", "PodUID", "Node"}
                : std::vector<std::string>{"PodName", "PodNamespace", "PodUID"};
  if (Status s = k8s::CheckKnownFields(j, fields, what); !s.ok()) return s;
  BindingArgs b;
  const std::pair<const char*, std::string*> all[] = {{"PodName", &b.pod_name},
                                                      {"PodNamespace", &b.pod_namespace},
                                                      {"PodUID", &b.pod_uid},
                                                      {"Node", &b.node}};
  for (const auto& [key, out] : all) {
    const json* v = k8s::Member(j, key);
    if (v == nullptr || v->is_null()) continue;
    if (!v->is_string()) return InvalidArgumentError(what + "." + key + ": expected a string");
    *out = v->get<std::string>();
  }
  if (b.pod_name.empty() && b.pod_uid.empty()) {
    return InvalidArgumentError(what + ": PodName (or PodUID) missing");
  }
  if (need_node && b.node.empty()) return InvalidArgumentError(what + ".Node: missing");
  if (b.pod_namespace.empty()) b.pod_namespace = "default";
  return b;
}

// "4,5,6,7": the indices (Gpu::index) of the GPUs at `positions` of a node, in that order.
std::string ChosenGpuList(const topo::NodeTopology& t, const std::vector<int>& positions) {
  std::string out;
  for (int pos : positions) {
    if (!out.empty()) out += ",";
    out += std::to_string(t.gpus[pos].index);
  }
  return out;
}

// The Binding's annotations for a chosen GPU list (none when it is unknown).
std::map<std::string, std::string> ChoiceAnnotations(const std::string& key,
                                                     const std::string& chosen) {
  if (chosen.empty()) return {};
  return {{key, chosen}};
}

std::string ErrorResult(const std::string& message) {
  return "{\"Error\":" + k8s::JsonQuoted(message) + "}";
}

}  // namespace

StatusOr<std::string> Extender::Bind(std::string_view body) {
  auto j = k8s::ParseBody(body, "ExtenderBindingArgs");
  if (!j.ok()) return j.status();
  auto b = ReadBinding(*j, "ExtenderBindingArgs", true);
  if (!b.ok()) return b.status();
  const std::string name = b->pod_namespace + "/" + b->pod_name;

  // Checked and touched under the lock; the API server is called outside it (it may take
  // seconds); then the binding is recorded if the reservation is still the one checked.
  std::string answer;
  bool call_binder = false;
  std::string gang_key;
  int slot = -1;
  int64_t hold = 0;
  int64_t started = -1;  // queued gangs: the run the pod is bound for
  bool queued = false;   // the pod's gang is a queued one
  bool orphan = false;   // ... and was forgotten while the pod was being bound
  std::string chosen;    // the pod's GPUs, for options_.gpus_annotation_key ("" = unknown)
  Status st = ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = ledger_->NowUs();
    SweepExpired(now);
    auto it = pod_gang_.find(b->pod_uid);
    if (b->pod_uid.empty() || it == pod_gang_.end()) it = pod_gang_.find(name);
    if (it == pod_gang_.end()) {
      answer = ErrorResult(std::string(kPrefix) + "pod " + name + " has no reservation (it was " +
                           "not filtered by this extender, or its reservation expired)");
      return;
    }
    GangState& g = *gangs_.at(it->second);
    for (size_t i = 0; i < g.slots.size() && slot < 0; ++i) {
      const Slot& s = g.slots[i];
      if ((!b->pod_uid.empty() && s.uid == b->pod_uid) || s.pod_name == name) {
        slot = static_cast<int>(i);
      }
    }
    if (slot < 0) {
      answer = ErrorResult(std::string(kPrefix) + "pod " + name + " has no slot");
      return;
    }
    Slot& s = g.slots[slot];
    const int node = cluster_.FindNode(b->node);
    if (g.job != 0) {
      const int at = QueuedNode(g, slot, &started);
      if (at < 0) {
        answer = ErrorResult(std::string(kPrefix) + "pod " + name + ": job-" +
                             std::to_string(g.job) + " of gang " + g.key + " is not running");
      } else if (at != node) {
        answer = ErrorResult(std::string(kPrefix) + "pod " + name + " runs rank " +
                             std::to_string(slot) + " of job-" + std::to_string(g.job) + " on " +
                             cluster_.nodes[at].name + ", not " + b->node);
      } else if (s.bound && s.bound_start_us == started) {
        answer = ErrorResult("");
      } else {
        g.touched_us = now;
        gang_key = g.key;
        queued = true;
        call_binder = true;
        chosen = QueuedChoice(g, slot, node);
      }
      return;
    }
    if (s.node < 0) {
      answer = ErrorResult(std::string(kPrefix) + "pod " + name + " has no reservation any " +
                           "more (expired); it is placed again on its next scheduling attempt");
      return;
    }
    if (node != s.node) {
      const std::string held = cluster_.nodes[s.node].name;
      const bool bound = s.bound;
      if (!bound) {
        // The scheduler chose differently: the plan no longer holds, so the gang's unbound pods
        // give their reservations back and are placed again.
        (void)ReleaseOpenSlots(g,
                               "bind mismatch: " + name + " to " + b->node + ", reserved " + held);
      }
      answer = ErrorResult(std::string(kPrefix) + "pod " + name + " is reserved on " + held +
                           ", not " + b->node + (bound ? " (already bound)" : "") +
                           "; the gang's unbound reservations were released");
      return;
    }
    if (s.bound) {
      answer = ErrorResult("");
      return;
    }
    g.touched_us = now;
    gang_key = g.key;
    hold = s.alloc_id;
    call_binder = true;
    chosen = ChosenGpuList(cluster_.topology(node), s.gpus.Positions());
  });
  if (!st.ok()) return st;
  if (!call_binder) return answer;
  if (binder_ != nullptr) {
    Status bs = binder_->BindAnnotated(PodRef{b->pod_namespace, b->pod_name, b->pod_uid}, b->node,
                                       ChoiceAnnotations(options_.gpus_annotation_key, chosen));
    if (!bs.ok()) return ErrorResult(std::string(kPrefix) + "binding failed: " + bs.message());
  }
  const BindTicket ticket{name, b->node, gang_key, slot, hold, started, queued};
  st = RecordBound(ticket, answer, orphan);
  if (!st.ok()) return st;
  if (orphan && evictor_ != nullptr) {
    const PodRef pod{b->pod_namespace, b->pod_name, b->pod_uid};
    if (Status es = evictor_->Evict(pod, "its pod group ended while it was bound"); !es.ok()) {
      return ErrorResult(std::string(kPrefix) + "pod " + name + " is bound to " + b->node +
                         " for a pod group that ended, and evicting it failed: " + es.message());
    }
  }
  return answer;
}

Status Extender::RecordBound(const BindTicket& t, std::string& answer, bool& orphan) {
  return ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gangs_.find(t.gang_key);
    if (it != gangs_.end() && it->second->job != 0) {
      GangState& g = *it->second;
      int64_t now_started = -1;
      const bool moved = QueuedNode(g, t.slot, &now_started) != cluster_.FindNode(t.node) ||
                         now_started != t.started;
      const Slot& s = g.slots[t.slot];
      // The Binding exists in the API server either way: it is recorded for the run it was made
      // for, so that a run that ended meanwhile gets the pod evicted (Reconcile).
      json book{{"gang", t.gang_key},     {"rank", t.slot}, {"pod_id", s.pod_id},
                {"pod", s.pod_name},      {"uid", s.uid},   {"node", t.node},
                {"started_us", t.started}};
      Status rs = Record("bind", std::move(book), {});
      if (moved) {
        answer = ErrorResult(std::string(kPrefix) + "pod " + t.pod + " lost its place " +
                             "(its job stopped) while it was being bound; it will be evicted");
      } else {
        answer = ErrorResult(
            rs.ok() ? "" : std::string(kPrefix) + "recording the binding: " + rs.message());
      }
      return;
    }
    if (t.queued) {
      // The gang was forgotten while the pod was being bound: nobody holds GPUs for it.
      orphan = true;
      answer = ErrorResult(std::string(kPrefix) + "pod " + t.pod + " lost its place " +
                           "(its pod group ended) while it was being bound; it will be evicted");
      return;
    }
    if (it == gangs_.end() || it->second->slots[t.slot].alloc_id != t.hold ||
        it->second->slots[t.slot].bound) {
      answer = ErrorResult(std::string(kPrefix) + "pod " + t.pod + " lost its reservation " +
                           "while it was being bound");
      return;
    }
    const Slot& s = it->second->slots[t.slot];
    json book{{"gang", t.gang_key},
              {"rank", t.slot},
              {"pod_id", s.pod_id},
              {"pod", s.pod_name},
              {"uid", s.uid}};
    Status rs = Record("bind", std::move(book), {});
    answer =
        ErrorResult(rs.ok() ? "" : std::string(kPrefix) + "recording the binding: " + rs.message());
  });
}

std::string Extender::QueuedChoice(const GangState& g, int slot, int node) const {
  const GangJobState js = ledger_->GangJob(g.job);
  if (js.placement == nullptr) return "";
  std::vector<int> positions;
  for (int i = 0; i < g.gpus_per_pod; ++i) {
    const size_t r = static_cast<size_t>(slot) * g.gpus_per_pod + i;
    if (r >= js.placement->ranks.size() || js.placement->ranks[r].node != node) return "";
    positions.push_back(js.placement->ranks[r].gpu);
  }
  return ChosenGpuList(cluster_.topology(node), positions);
}

StatusOr<std::string> Extender::PodDeleted(std::string_view body) {
  auto j = k8s::ParseBody(body, "PodDeleted");
  if (!j.ok()) return j.status();
  auto b = ReadBinding(*j, "PodDeleted", false);
  if (!b.ok()) return b.status();
  const std::string name = b->pod_namespace + "/" + b->pod_name;
  std::string answer;
  Status st = ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pod_gang_.find(b->pod_uid);
    if (b->pod_uid.empty() || it == pod_gang_.end()) it = pod_gang_.find(name);
    if (it == pod_gang_.end()) {
      answer = ErrorResult(std::string(kPrefix) + "unknown pod " + name);
      return;
    }
    GangState& g = *gangs_.at(it->second);
    std::vector<int> ranks;
    bool any = false;
    for (size_t i = 0; i < g.slots.size(); ++i) {
      const Slot& s = g.slots[i];
      if ((!b->pod_uid.empty() && s.uid == b->pod_uid) ||
          (!b->pod_name.empty() && s.pod_name == name)) {
        ranks.push_back(static_cast<int>(i));
      } else {
        any = any || !s.pod_id.empty();
      }
    }
    // No pod of the gang left: a queued gang's job ends (completed when it ran with a bound
    // pod, else cancelled); every reservation goes and the gang is forgotten.
    if (!any && g.job != 0) {
      const GangJobState js = ledger_->GangJob(g.job);
      bool ran = false, stale = false;
      for (int r : ranks) {
        const bool live =
            js.phase == GangJobState::Phase::kRunning && g.slots[r].bound_start_us == js.started_us;
        ran = ran || (g.slots[r].bound && live);
        stale = stale || (g.slots[r].bound && !live);
      }
      // A pod evicted because its group's job stopped (going before Reconcile saw it): the job
      // waits for the group's pods to come back; a lone pod's comes back as another gang.
      if (stale && !g.lone && js.phase == GangJobState::Phase::kPending) {
        Status rs = ReleaseRanks(g, ranks, true, false, "pod gone after its run ended");
        answer = ErrorResult(rs.ok() ? "" : std::string(kPrefix) + rs.message());
        return;
      }
      if (js.phase != GangJobState::Phase::kEnded) {
        if (Status es = ledger_->EndGang(g.job, ran); !es.ok()) {
          answer = ErrorResult(std::string(kPrefix) + es.message());
          return;
        }
      }
    }
    if (!any) {
      for (size_t i = 0; i < g.slots.size(); ++i) {
        if (g.slots[i].alloc_id != 0 &&
            std::find(ranks.begin(), ranks.end(), static_cast<int>(i)) == ranks.end()) {
          ranks.push_back(static_cast<int>(i));
        }
      }
    }
    Status rs = ReleaseRanks(g, ranks, true, !any, "");
    answer = ErrorResult(rs.ok() ? "" : std::string(kPrefix) + rs.message());
  });
  if (!st.ok()) return st;
  return answer;
}

}  // namespace toposched::api
