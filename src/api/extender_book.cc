// The extender's gang bookkeeping: the records it keeps (Record, ApplyBook, Restore), releasing
// slots, the reservation timeout, finding a pod's gang and slot (src/api/extender_internal.h).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "api/extender.h"
#include "api/extender_internal.h"
#include "api/extender_k8s.h"

namespace toposched::api {

using nlohmann::json;
using namespace extender_internal;  // NOLINT: the helpers shared by the extender files

Status Extender::Record(const std::string& op, json book, const HoldChange& change) {
  book["op"] = op;
  std::string text;
  if (ledger_->keeps_records()) {
    json payload = book;
    json rel = json::array();
    for (int64_t id : change.releases) rel.push_back(id);
    json holds = json::array();
    for (const auto& [id, part] : change.holds) {
      holds.push_back(
          {{"id", id}, {"node", cluster_.nodes[part.node].name}, {"gpus", GpusJson(part.gpus)}});
    }
    payload["releases"] = rel;
    payload["holds"] = holds;
    text = payload.dump();
  }
  if (Status st = ledger_->Commit("k8s_" + op, change, text); !st.ok()) return st;
  return ApplyBook(book, ledger_->NowUs());
}

Status Extender::ApplyBook(const json& b, int64_t time_us) {
  try {
    const std::string op = b.at("op").get<std::string>();
    const std::string key = b.at("gang").get<std::string>();
    auto it = gangs_.find(key);
    auto set_pod = [&](GangState& g, Slot& s, const json& e) {
      if (!e.contains("pod_id")) return;
      if (!s.pod_id.empty() && s.pod_id != e.at("pod_id").get<std::string>()) {
        pod_gang_.erase(s.pod_id);
        pod_gang_.erase(s.pod_name);
      }
      s.pod_id = e.at("pod_id").get<std::string>();
      s.pod_name = e.at("pod").get<std::string>();
      s.uid = e.value("uid", "");
      pod_gang_[s.pod_id] = g.key;
      pod_gang_[s.pod_name] = g.key;
    };
    auto slot_of = [&](GangState& g, const json& e) -> Slot& {
      const int rank = e.at("rank").get<int>();
      if (rank < 0 || rank >= static_cast<int>(g.slots.size())) {
        throw std::out_of_range("rank " + std::to_string(rank) + " outside gang " + g.key);
      }
      return g.slots[rank];
    };
    if (op == "reserve" || op == "queue") {
      if (it == gangs_.end()) {
        auto spec = job::ParseJobJson(b.at("spec").dump(), "spec");
        if (!spec.ok()) return Status(StatusCode::kDataLoss, spec.status().message());
        auto g = std::make_unique<GangState>();
        g->key = key;
        g->lone = b.at("lone").get<bool>();
        g->gpus_per_pod = b.at("gpus_per_pod").get<int>();
        g->spec = std::move(spec).value();
        g->slots.resize(b.at("size").get<int>());
        it = gangs_.emplace(key, std::move(g)).first;
      }
      GangState& g = *it->second;
      if (op == "queue") {
        g.job = b.at("job").get<int64_t>();
        g.touched_us = std::max(g.touched_us, time_us);
        return OkStatus();
      }
      g.domain = b.value("domain", "");
      g.predicted_ms = b.value("predicted_ms", 0.0);
      g.last_decision = b.value("decision", "");
      g.touched_us = std::max(g.touched_us, time_us);
      for (const json& e : b.at("slots")) {
        Slot& s = slot_of(g, e);
        s.alloc_id = e.at("hold").get<int64_t>();
        s.node = cluster_.FindNode(e.at("node").get<std::string>());
        if (s.node < 0) throw std::out_of_range("unknown node " + e.at("node").dump());
        s.gpus = sched::GpuMask();
        for (const json& x : e.at("gpus")) s.gpus.set(x.get<int>());
        s.bound = false;
        set_pod(g, s, e);
        next_alloc_id_ = std::max(next_alloc_id_, s.alloc_id + 1);
      }
      return OkStatus();
    }
    if (it == gangs_.end()) {
      if (op == "release") return OkStatus();  // a gang already forgotten
      return Status(StatusCode::kDataLoss, "extender record: " + op + " of unknown gang " + key);
    }
    GangState& g = *it->second;
    if (op == "bind") {
      Slot& s = slot_of(g, b);
      if (g.job != 0) {
        set_pod(g, s, b);
        s.node = cluster_.FindNode(b.at("node").get<std::string>());
        if (s.node < 0) throw std::out_of_range("unknown node " + b.at("node").dump());
        s.bound_start_us = b.at("started_us").get<int64_t>();
        s.bound = true;
        g.touched_us = std::max(g.touched_us, time_us);
        return OkStatus();
      }
      if (s.alloc_id == 0) {
        return Status(StatusCode::kDataLoss, "extender record: bind of rank " +
                                                 b.at("rank").dump() + " of " + key +
                                                 " without a reservation");
      }
      set_pod(g, s, b);
      s.bound = true;
      g.touched_us = std::max(g.touched_us, time_us);
      return OkStatus();
    }
    if (op == "release") {
      for (const json& r : b.at("ranks")) {
        Slot& s = g.slots.at(r.get<size_t>());
        s.alloc_id = 0;
        s.node = -1;
        s.gpus = sched::GpuMask();
        s.bound = false;
        s.bound_start_us = -1;
        if (b.value("clear_pods", false)) {
          pod_gang_.erase(s.pod_id);
          pod_gang_.erase(s.pod_name);
          s.pod_id.clear();
          s.pod_name.clear();
          s.uid.clear();
        }
      }
      if (b.contains("decision")) g.last_decision = b.at("decision").get<std::string>();
      if (b.value("forget", false)) {
        for (const Slot& s : g.slots) {
          if (s.pod_id.empty()) continue;
          pod_gang_.erase(s.pod_id);
          pod_gang_.erase(s.pod_name);
        }
        gangs_.erase(it);
      }
      return OkStatus();
    }
    return Status(StatusCode::kDataLoss, "extender record: unknown op \"" + op + "\"");
  } catch (const std::exception& e) {
    return Status(StatusCode::kDataLoss, std::string("extender record: ") + e.what());
  }
}

Status Extender::ReleaseRanks(GangState& g, const std::vector<int>& ranks, bool clear_pods,
                              bool forget, const std::string& decision) {
  HoldChange change;
  json rs = json::array();
  for (int r : ranks) {
    rs.push_back(r);
    if (g.slots[r].alloc_id != 0) change.releases.push_back(g.slots[r].alloc_id);
  }
  json book{{"gang", g.key}, {"ranks", rs}, {"clear_pods", clear_pods}, {"forget", forget}};
  if (!decision.empty()) book["decision"] = decision;
  if (change.releases.empty() && g.job == 0) {
    // No GPU changes hands: bookkeeping only, nothing to store (a restored gang without holds
    // is forgotten again when it expires).
    book["op"] = "release";
    return ApplyBook(book, ledger_->NowUs());
  }
  return Record("release", std::move(book), change);
}

Status Extender::ReleaseOpenSlots(GangState& g, const std::string& decision) {
  std::vector<int> open;
  for (size_t i = 0; i < g.slots.size(); ++i) {
    if (!g.slots[i].bound && g.slots[i].alloc_id != 0) open.push_back(static_cast<int>(i));
  }
  if (open.empty()) return OkStatus();
  return ReleaseRanks(g, open, false, false, decision);
}

void Extender::SweepExpired(int64_t now_us) {
  std::vector<std::string> expired;
  for (const auto& [key, g] : gangs_) {
    if (now_us - g->touched_us > options_.reservation_timeout_us) expired.push_back(key);
  }
  for (const std::string& key : expired) {
    GangState& g = *gangs_.at(key);
    if (g.job != 0) {
      if (!ExpireQueued(g, now_us).ok()) return;  // the ledger refuses changes; try again later
      continue;
    }
    bool any_bound = false;
    for (const Slot& s : g.slots) any_bound = any_bound || s.bound;
    Status st;
    if (any_bound) {
      // Bound pods keep their GPUs; the others lose their reservation and, when they come back,
      // are placed again as the rest of the gang.
      st = ReleaseOpenSlots(g, "reservation expired");
    } else {
      std::vector<int> open;
      for (size_t i = 0; i < g.slots.size(); ++i) {
        if (g.slots[i].alloc_id != 0) open.push_back(static_cast<int>(i));
      }
      st = ReleaseRanks(g, open, false, true, "reservation expired");
    }
    if (!st.ok()) return;  // the ledger refuses changes; the next call tries again
  }
}

StatusOr<Extender::GangState*> Extender::GangFor(const PodInfo& info, int64_t now_us) {
  if (!info.membership.ok()) return info.membership.status();
  const k8s::Membership& m = *info.membership;
  auto it = gangs_.find(m.key);
  if (it != gangs_.end()) {
    GangState& g = *it->second;
    if (info.pod.gpus != g.gpus_per_pod) {
      return FailedPreconditionError("pod " + info.pod.FullName() + " requests " +
                                     std::to_string(info.pod.gpus) + " " + options_.gpu_resource +
                                     " but gang " + g.key + " has " +
                                     std::to_string(g.gpus_per_pod) + " per pod");
    }
    if (m.size > 0 && m.size != static_cast<int>(g.slots.size())) {
      return FailedPreconditionError("pod " + info.pod.FullName() + " says " +
                                     options_.group_size_key + " = " + std::to_string(m.size) +
                                     " but gang " + g.key + " has " +
                                     std::to_string(g.slots.size()) + " pods");
    }
    return &g;
  }
  if (info.pod.gpus > max_node_gpus_) {
    return FailedPreconditionError("pod " + info.pod.FullName() + " requests " +
                                   std::to_string(info.pod.gpus) + " " + options_.gpu_resource +
                                   "; the largest node has " + std::to_string(max_node_gpus_));
  }
  auto spec = k8s::GangSpec(info.pod, m, options_);
  if (!spec.ok()) return spec.status();
  std::vector<std::string> levels;
  for (const topo::NetworkLevel& l : cluster_.levels) levels.push_back(l.name);
  if (Status s = spec->ValidateAgainstLevels(levels); !s.ok()) {
    return FailedPreconditionError("gang " + m.key + ": " + s.message());
  }
  auto g = std::make_unique<GangState>();
  g->key = m.key;
  g->lone = m.lone;
  g->gpus_per_pod = info.pod.gpus;
  g->spec = std::move(spec).value();
  g->slots.resize(g->spec.replicas);
  g->touched_us = now_us;
  GangState* raw = g.get();
  gangs_.emplace(m.key, std::move(g));
  return raw;
}

StatusOr<int> Extender::SlotFor(GangState& g, const PodInfo& info) {
  const std::string id = info.pod.Id();
  const std::string name = info.pod.FullName();
  for (size_t i = 0; i < g.slots.size(); ++i) {
    if (g.slots[i].pod_id == id) return static_cast<int>(i);
  }
  int slot = -1;
  const k8s::Membership& m = *info.membership;
  if (m.index >= 0) {
    if (m.index >= static_cast<int>(g.slots.size())) {
      return FailedPreconditionError("pod rank " + std::to_string(m.index) + " is outside gang " +
                                     g.key + " of " + std::to_string(g.slots.size()) + " pods");
    }
    slot = m.index;
    Slot& s = g.slots[slot];
    if (!s.pod_id.empty()) {
      // A new incarnation of the pod of this rank (its controller recreated it): the old one is
      // gone, and so are its GPUs once it was bound.
      if (s.bound) {
        if (Status st = ReleaseRanks(g, {slot}, true, false, ""); !st.ok()) return st;
      } else {
        pod_gang_.erase(s.pod_id);
        pod_gang_.erase(s.pod_name);
      }
    }
  } else {
    for (size_t i = 0; i < g.slots.size() && slot < 0; ++i) {
      if (g.slots[i].pod_id.empty()) slot = static_cast<int>(i);
    }
    if (slot < 0) {
      return FailedPreconditionError("gang " + g.key + " already has its " +
                                     std::to_string(g.slots.size()) + " pods");
    }
  }
  Slot& s = g.slots[slot];
  s.pod_id = id;
  s.pod_name = name;
  s.uid = info.pod.uid;
  pod_gang_[id] = g.key;
  pod_gang_[name] = g.key;
  return slot;
}

Status Extender::Sweep() {
  return ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    SweepExpired(ledger_->NowUs());
  });
}

Status Extender::Restore(const std::vector<std::pair<int64_t, std::string>>& records,
                         int64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < records.size(); ++i) {
    json b = json::parse(records[i].second, nullptr, false);
    if (!b.is_object()) {
      return Status(StatusCode::kDataLoss,
                    "extender record " + std::to_string(i) + ": malformed payload");
    }
    for (const char* k : {"releases", "holds"}) {
      if (!b.contains(k)) continue;
      for (const json& h : b[k]) {
        const int64_t id = h.is_object() ? h.value("id", int64_t{0}) : h.get<int64_t>();
        next_alloc_id_ = std::max(next_alloc_id_, id + 1);
      }
      b.erase(k);
    }
    Status st = ApplyBook(b, records[i].first);
    if (!st.ok()) return st.WithPrefix("extender record " + std::to_string(i));
  }
  for (auto& [key, g] : gangs_) g->touched_us = std::max(g->touched_us, now_us);
  return OkStatus();
}

std::vector<int64_t> Extender::GangJobIds() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> ids;
  for (const auto& [k, g] : gangs_) {
    if (g->job != 0) ids.push_back(g->job);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int64_t> Extender::HoldIds() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> ids;
  for (const auto& [k, g] : gangs_) {
    for (const Slot& s : g->slots) {
      if (s.alloc_id != 0) ids.push_back(s.alloc_id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace toposched::api
