// The extender's preempt verb: which victims kube-scheduler's candidates would let the pod's gang
// fit, a what-if on a copy of the occupancy (src/api/extender_internal.h). Queued gangs (the
// daemon) get none: their queue preempts.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "api/extender.h"
#include "api/extender_internal.h"
#include "api/extender_k8s.h"
#include "api/extender_scan.h"

namespace toposched::api {

using nlohmann::json;
using namespace extender_internal;  // NOLINT: the helpers shared by the extender files

StatusOr<std::string> Extender::Preempt(std::string_view body) {
  auto j = k8s::ParseBody(body, "ExtenderPreemptionArgs");
  if (!j.ok()) return j.status();
  if (Status s = k8s::CheckKnownFields(*j, {"Pod", "NodeNameToVictims", "NodeNameToMetaVictims"},
                                       "ExtenderPreemptionArgs");
      !s.ok()) {
    return s;
  }
  const json* pod_j = k8s::Member(*j, "Pod");
  if (pod_j == nullptr || pod_j->is_null()) {
    return InvalidArgumentError("ExtenderPreemptionArgs: Pod: missing");
  }
  PodInfo info;
  auto p = k8s::ParsePod(*pod_j, options_.gpu_resource, "ExtenderPreemptionArgs.Pod");
  if (!p.ok()) return p.status();
  info.pod = std::move(p).value();
  info.membership = k8s::MembershipOf(info.pod, options_);

  // Victims per node: UIDs + PDB violations, from the meta form or from full pods.
  struct NodeVictims {
    std::vector<std::string> uids;
    int64_t pdb = 0;
  };
  std::map<std::string, NodeVictims> victims;
  const json* meta = k8s::Member(*j, "NodeNameToMetaVictims");
  const json* full = k8s::Member(*j, "NodeNameToVictims");
  const bool use_meta = meta != nullptr && !meta->is_null();
  const json* src = use_meta ? meta : full;
  const std::string what = std::string("ExtenderPreemptionArgs.") +
                           (use_meta ? "NodeNameToMetaVictims" : "NodeNameToVictims");
  if (src != nullptr && !src->is_null()) {
    if (!src->is_object()) return InvalidArgumentError(what + ": expected an object");
    for (auto it = src->begin(); it != src->end(); ++it) {
      const std::string path = what + "[" + k8s::JsonQuoted(it.key()) + "]";
      NodeVictims& nv = victims[it.key()];
      if (it->is_null()) continue;
      if (!it->is_object()) return InvalidArgumentError(path + ": expected an object");
      if (const json* pdb = k8s::Member(*it, "NumPDBViolations"); pdb && !pdb->is_null()) {
        if (!pdb->is_number_integer()) {
          return InvalidArgumentError(path + ".NumPDBViolations: expected an integer");
        }
        nv.pdb = pdb->get<int64_t>();
      }
      const json* pods = k8s::Member(*it, "Pods");
      if (pods == nullptr || pods->is_null()) continue;
      if (!pods->is_array()) return InvalidArgumentError(path + ".Pods: expected an array");
      for (size_t i = 0; i < pods->size(); ++i) {
        const json& v = (*pods)[i];
        const std::string vp = path + ".Pods[" + std::to_string(i) + "]";
        std::string uid;
        if (use_meta) {
          const json* u = k8s::Member(v, "UID");
          if (u == nullptr || !u->is_string()) return InvalidArgumentError(vp + ".UID: missing");
          uid = u->get<std::string>();
        } else {
          auto vpod = k8s::ParsePod(v, options_.gpu_resource, vp);
          if (!vpod.ok()) return vpod.status();
          uid = vpod->Id();
        }
        nv.uids.push_back(std::move(uid));
      }
    }
  }

  std::map<std::string, const NodeVictims*> keep;
  if (info.pod.gpus == 0) {
    for (const auto& [node, nv] : victims) keep[node] = &nv;
  } else if (ledger_->queues_gangs()) {
    // A pod group is a job in the owner's queue, which preempts by its own rules and evicts its
    // victims through the API: kube-scheduler evicts nothing for it (no victims).
  } else {
    Status run = ledger_->Run([&] {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t now = ledger_->NowUs();
      SweepExpired(now);
      auto gang = GangFor(info, now);
      if (gang.ok()) {
        GangState& g = **gang;
        int open = 0;
        for (const Slot& s : g.slots) open += s.bound ? 0 : 1;
        const job::JobSpec spec = RemainderSpec(g.spec, open, g.gpus_per_pod);
        for (const auto& [node_name, nv] : victims) {
          const int node = cluster_.FindNode(node_name);
          if (node < 0 || open == 0) continue;
          // Gang rule: a victim that belongs to a gang takes its whole gang down (its controller
          // restarts all of it), so every GPU of that gang counts as freed; the preemptor's own
          // unbound reservations are freed too. The node stays a candidate only when the
          // preemptor's gang then fits and uses this node.
          sched::ClusterState view = state();
          for (const Slot& s : g.slots) {
            if (!s.bound && s.alloc_id != 0) (void)view.Release(ledger_->AllocationOf(s.alloc_id));
          }
          for (const std::string& uid : nv.uids) {
            auto pg = pod_gang_.find(uid);
            if (pg == pod_gang_.end() || pg->second == g.key) continue;
            for (const Slot& s : gangs_.at(pg->second)->slots) {
              if (s.alloc_id == 0) continue;
              const sched::AllocId a = ledger_->AllocationOf(s.alloc_id);
              if (view.HasAllocation(a)) (void)view.Release(a);
            }
          }
          sched::Verdict v =
              PlacePods(ledger_->placer(), view, spec, open, g.gpus_per_pod, max_node_gpus_);
          if (!v.fit()) continue;
          for (const sched::NodeGpus& part : v.placement->parts) {
            if (part.node == node) keep[node_name] = &nv;
          }
        }
      }
    });
    if (!run.ok()) return run;
  }
  std::string out = "{\"NodeNameToMetaVictims\":{";
  bool first = true;
  for (const auto& [node, nv] : keep) {
    if (!first) out += ',';
    first = false;
    k8s::AppendJsonString(out, node);
    out += ":{\"Pods\":[";
    for (size_t i = 0; i < nv->uids.size(); ++i) {
      if (i) out += ',';
      out += "{\"UID\":";
      k8s::AppendJsonString(out, nv->uids[i]);
      out += '}';
    }
    out += "],\"NumPDBViolations\":" + std::to_string(nv->pdb) + "}";
  }
  out += "}}";
  return out;
}

}  // namespace toposched::api
