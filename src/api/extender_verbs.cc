// The extender's options, ledger, placement, the filter and prioritize verbs and the views (the
// class: api/extender.h; the state its files share: api/extender_internal.h).
#include <algorithm>
#include <chrono>
#include <numeric>
#include <utility>

#include "api/extender.h"
#include "api/extender_internal.h"
#include "api/extender_k8s.h"
#include "api/extender_scan.h"
#include "core/strings.h"

namespace toposched::api {

using nlohmann::json;
using namespace extender_internal;  // NOLINT: the helpers shared by the extender files

Status ExtenderOptions::Validate() const {
  const std::pair<const std::string*, const char*> keys[] = {
      {&group_name_key, "group_name_key"},
      {&group_size_key, "group_size_key"},
      {&kubeflow_job_key, "kubeflow_job_key"},
      {&kubeflow_type_key, "kubeflow_type_key"},
      {&kubeflow_index_key, "kubeflow_index_key"},
      {&master_replicas_key, "master_replicas_key"},
      {&gpu_resource, "gpu_resource"},
      {&gpus_annotation_key, "gpus_annotation_key"}};
  for (const auto& [v, name] : keys) {
    if (v->empty())
      return InvalidArgumentError(std::string("extender options: ") + name + ": empty");
  }
  for (const std::string& k : pod_index_keys) {
    if (k.empty()) return InvalidArgumentError("extender options: pod_index_keys: empty key");
  }
  if (annotation_prefix.empty() || annotation_prefix.back() != '/') {
    return InvalidArgumentError("extender options: annotation_prefix: must end in '/', got \"" +
                                annotation_prefix + "\"");
  }
  if (reservation_timeout_us <= 0) {
    return InvalidArgumentError("extender options: reservation_timeout_us: must be > 0");
  }
  if (max_score < 1 || max_score > 10) {
    return InvalidArgumentError(
        "extender options: max_score: must be in [1, 10] "
        "(kube-scheduler's MaxExtenderPriority is 10)");
  }
  return OkStatus();
}

namespace {

int64_t SteadyNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The whole pod on one node: ranks [j·g, (j+1)·g) of the placement share a node for every pod j.
bool PodsWhole(const sched::Placement& p, int pods, int gpus_per_pod) {
  for (int j = 0; j < pods; ++j) {
    const int node = p.ranks[static_cast<size_t>(j) * gpus_per_pod].node;
    for (int r = j * gpus_per_pod; r < (j + 1) * gpus_per_pod; ++r) {
      if (p.ranks[r].node != node) return false;
    }
  }
  return true;
}

}  // namespace

namespace extender_internal {

json GpusJson(const sched::GpuMask& m) {
  json a = json::array();
  for (int g : m.Positions()) a.push_back(g);
  return a;
}

// The job of `open` pods of a gang whose other pods hold GPUs already: same traffic, TP kept
// when it divides the remaining GPUs (else one TP group per pod), PP folded into DP.
job::JobSpec RemainderSpec(const job::JobSpec& full, int open, int gpus_per_pod) {
  if (open == full.replicas) return full;
  job::JobSpec s = full;
  const int total = open * gpus_per_pod;
  s.replicas = open;
  s.gpus_per_replica = gpus_per_pod;
  s.total_gpus = 0;
  s.layout.tp = total % full.layout.tp == 0 ? full.layout.tp : gpus_per_pod;
  s.layout.pp = 1;
  s.layout.dp = 0;
  s.layout.ep = 1;
  if (!s.Normalize().ok()) {
    s.layout.tp = gpus_per_pod;
    s.layout.dp = 0;
    (void)s.Normalize();
  }
  return s;
}

// Places `open` pods of the gang on `state`; every pod whole on one node. When the placer splits
// a pod (TP smaller than the pod), it is asked again with TP = lcm(TP, GPUs per pod) required on
// one node.
sched::Verdict PlacePods(const sched::GangPlacer& placer, const sched::ClusterState& state,
                         const job::JobSpec& spec, int open, int gpus_per_pod, int max_node_gpus) {
  sched::Verdict v = placer.Place(state, spec);
  if (!v.fit() || PodsWhole(*v.placement, open, gpus_per_pod)) return v;
  const int tp = std::lcm(spec.layout.tp, gpus_per_pod);
  job::JobSpec s = spec;
  s.layout.tp = tp;
  s.layout.pp = 1;
  s.layout.dp = 0;
  s.layout.ep = 1;
  s.total_gpus = 0;
  s.constraints.tp = {job::ConstraintMode::kRequired, job::kLevelNode, {}};
  if (tp <= max_node_gpus && (open * gpus_per_pod) % tp == 0 && s.Normalize().ok()) {
    sched::Verdict v2 = placer.Place(state, s);
    if (v2.fit() && PodsWhole(*v2.placement, open, gpus_per_pod)) return v2;
    if (!v2.fit()) return v2;
  }
  sched::Verdict bad;
  bad.kind = sched::VerdictKind::kUnschedulable;
  bad.reasons.push_back("no placement keeps each pod of " + std::to_string(gpus_per_pod) +
                        " GPUs on one node");
  return bad;
}

}  // namespace extender_internal

// The standalone ledger: its own ClusterState, one mutex, holds as allocations with their id.
class Extender::LocalLedger : public ExtenderLedger {
 public:
  LocalLedger(const sched::GangPlacer& placer, sched::ClusterState state, Clock clock)
      : placer_(placer), state_(std::move(state)), clock_(std::move(clock)) {}
  Status Run(const std::function<void()>& fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    fn();
    return OkStatus();
  }
  const sched::ClusterState& state() const override { return state_; }
  const sched::GangPlacer& placer() const override { return placer_; }
  int64_t NowUs() override { return clock_(); }
  bool keeps_records() const override { return false; }
  Status Commit(const std::string& kind, const HoldChange& c, const std::string& payload) override {
    (void)kind;
    (void)payload;
    std::vector<std::pair<sched::AllocId, std::vector<sched::NodeGpus>>> released;
    std::vector<sched::AllocId> taken;
    Status st;
    for (int64_t hold_id : c.releases) {
      const sched::AllocId id = AllocationOf(hold_id);
      const std::vector<sched::NodeGpus>* parts = state_.Allocation(id);
      if (parts == nullptr) {
        st = NotFoundError("hold " + std::to_string(hold_id) + " not found");
        break;
      }
      released.emplace_back(id, *parts);
      (void)state_.Release(id);
    }
    for (size_t i = 0; st.ok() && i < c.holds.size(); ++i) {
      const sched::AllocId id = AllocationOf(c.holds[i].first);
      st = state_.Allocate(id, {c.holds[i].second});
      if (st.ok()) taken.push_back(id);
    }
    if (st.ok()) return st;
    for (sched::AllocId id : taken) (void)state_.Release(id);  // all or nothing
    for (const auto& [id, parts] : released) (void)state_.Allocate(id, parts);
    return st;
  }

 private:
  const sched::GangPlacer& placer_;
  sched::ClusterState state_;
  Clock clock_;
  std::mutex mu_;
};

StatusOr<HoldChange> ReadHoldChange(std::string_view payload, const topo::Cluster& cluster) {
  const json j = json::parse(payload.begin(), payload.end(), nullptr, false);
  if (!j.is_object()) return InvalidArgumentError("extender record: expected a JSON object");
  HoldChange c;
  try {
    if (j.contains("releases")) {
      for (const json& id : j.at("releases")) c.releases.push_back(id.get<int64_t>());
    }
    if (j.contains("holds")) {
      for (const json& h : j.at("holds")) {
        const std::string name = h.at("node").get<std::string>();
        const int node = cluster.FindNode(name);
        if (node < 0) {
          return InvalidArgumentError("extender record: holds: no node \"" + name + "\"");
        }
        sched::NodeGpus part{node, {}};
        for (const json& g : h.at("gpus")) part.gpus.set(g.get<int>());
        const int64_t id = h.at("id").get<int64_t>();
        if (id <= 0) return InvalidArgumentError("extender record: holds: id must be > 0");
        c.holds.emplace_back(id, part);
      }
    }
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("extender record: ") + e.what());
  }
  return c;
}

Extender::Extender(const topo::Cluster& cluster, ExtenderLedger& ledger, ExtenderOptions options,
                   PodBinder* binder)
    : cluster_(cluster), ledger_(&ledger), options_(std::move(options)), binder_(binder) {
  for (size_t n = 0; n < cluster_.nodes.size(); ++n) {
    max_node_gpus_ = std::max(max_node_gpus_, ledger.state().GpuCount(static_cast<int>(n)));
  }
  for (sched::AllocId id : ledger.state().AllocationIds()) {
    next_alloc_id_ = std::max(next_alloc_id_, id.key() + 1);
  }
}

Extender::~Extender() = default;

StatusOr<std::unique_ptr<Extender>> Extender::Create(const sched::GangPlacer& placer,
                                                     sched::ClusterState initial,
                                                     ExtenderOptions options, Clock clock,
                                                     PodBinder* binder) {
  if (Status s = options.Validate(); !s.ok()) return s;
  if (&initial.cluster() != &placer.cluster()) {
    return InvalidArgumentError(
        "extender: the cluster state is over another cluster than the "
        "gang placer's");
  }
  if (!clock) clock = SteadyNowUs;
  auto ledger = std::make_unique<LocalLedger>(placer, std::move(initial), std::move(clock));
  std::unique_ptr<Extender> e(new Extender(placer.cluster(), *ledger, std::move(options), binder));
  e->own_ledger_ = std::move(ledger);
  return e;
}

StatusOr<std::unique_ptr<Extender>> Extender::CreateShared(const topo::Cluster& cluster,
                                                           ExtenderLedger& ledger,
                                                           ExtenderOptions options,
                                                           PodBinder* binder, PodEvictor* evictor) {
  if (Status s = options.Validate(); !s.ok()) return s;
  if (ledger.state().cluster().nodes.size() != cluster.nodes.size()) {
    return InvalidArgumentError("extender: the ledger's occupancy is over another cluster");
  }
  std::unique_ptr<Extender> e(new Extender(cluster, ledger, std::move(options), binder));
  e->evictor_ = evictor;
  // Hold ids come from the records (Restore); allocation ids of a shared state are not ours.
  e->next_alloc_id_ = 1;
  return e;
}

sched::Verdict Extender::PlaceOpenSlots(GangState& g, const std::vector<uint8_t>* allowed) {
  std::vector<int> open;
  for (size_t i = 0; i < g.slots.size(); ++i) {
    if (!g.slots[i].bound && g.slots[i].alloc_id == 0) open.push_back(static_cast<int>(i));
  }
  sched::Verdict v;
  v.kind = sched::VerdictKind::kFit;
  if (open.empty()) return v;
  const job::JobSpec spec = RemainderSpec(g.spec, static_cast<int>(open.size()), g.gpus_per_pod);
  const sched::GangPlacer& placer = ledger_->placer();
  if (allowed == nullptr) {
    v = PlacePods(placer, state(), spec, static_cast<int>(open.size()), g.gpus_per_pod,
                  max_node_gpus_);
  } else {
    sched::ClusterState view = state();
    for (size_t n = 0; n < allowed->size(); ++n) {
      if (!(*allowed)[n]) (void)view.SetNodeDrained(static_cast<int>(n), true);
    }
    v = PlacePods(placer, view, spec, static_cast<int>(open.size()), g.gpus_per_pod,
                  max_node_gpus_);
  }
  g.last_decision = std::string(sched::VerdictKindName(v.kind)) + ": " + v.Explain();
  if (!v.fit()) return v;
  const sched::Placement& p = *v.placement;
  HoldChange change;
  json slots = json::array();
  for (size_t j = 0; j < open.size(); ++j) {
    const Slot& s = g.slots[open[j]];
    const size_t first = j * static_cast<size_t>(g.gpus_per_pod);
    sched::NodeGpus part{p.ranks[first].node, {}};
    for (int r = 0; r < g.gpus_per_pod; ++r) part.gpus.set(p.ranks[first + r].gpu);
    const int64_t id = next_alloc_id_ + static_cast<int64_t>(j);
    change.holds.emplace_back(id, part);
    json e{{"rank", open[j]},
           {"hold", id},
           {"node", cluster_.nodes[part.node].name},
           {"gpus", GpusJson(part.gpus)}};
    if (!s.pod_id.empty()) {
      e["pod_id"] = s.pod_id;
      e["pod"] = s.pod_name;
      e["uid"] = s.uid;
    }
    slots.push_back(std::move(e));
  }
  json book{
      {"gang", g.key},
      {"lone", g.lone},
      {"gpus_per_pod", g.gpus_per_pod},
      {"size", g.slots.size()},
      {"spec", ledger_->keeps_records() ? json::parse(job::JobSpecToJson(g.spec, -1)) : json()},
      {"domain", p.domain},
      {"predicted_ms", p.predicted_ms},
      {"decision", g.last_decision},
      {"slots", std::move(slots)}};
  if (Status st = Record("reserve", std::move(book), change); !st.ok()) {
    // Only a broken invariant (the placer used GPUs that are not free) or a ledger that refuses
    // changes gets here; nothing was reserved.
    sched::Verdict bad;
    bad.kind = sched::VerdictKind::kUnschedulable;
    bad.reasons.push_back("reservation failed: " + st.message());
    g.last_decision = "unschedulable: " + bad.Explain();
    return bad;
  }
  return v;
}

std::string Extender::Who(const GangState& g, const PodInfo& info) {
  return g.lone ? "pod " + info.pod.FullName()
                : "gang " + g.key + " (" + std::to_string(g.slots.size()) + " pods x " +
                      std::to_string(g.gpus_per_pod) + " GPUs)";
}

Extender::Assignment Extender::Assign(const PodInfo& info, const Candidates& cand, int64_t now_us) {
  Assignment a;
  auto gang = GangFor(info, now_us);
  if (!gang.ok()) {
    a.unresolvable = true;
    a.reason = kPrefix + gang.status().message();
    return a;
  }
  GangState& g = **gang;
  g.touched_us = now_us;
  auto slot = SlotFor(g, info);
  if (!slot.ok()) {
    a.reason = kPrefix + slot.status().message();
    return a;
  }
  // A gang restored with holds (records of an earlier build) keeps them until it is forgotten.
  bool holds = false;
  for (const Slot& x : g.slots) holds = holds || x.alloc_id != 0;
  if (ledger_->queues_gangs() && !holds) return AssignQueued(g, *slot, info, cand);
  Slot& s = g.slots[*slot];
  const std::string who = Who(g, info);
  if (!s.bound && s.alloc_id == 0) {
    sched::Verdict v = PlaceOpenSlots(g, nullptr);
    if (!v.fit()) {
      a.unresolvable = v.kind == sched::VerdictKind::kUnresolvable;
      a.reason = kPrefix + who + " does not fit" + (a.unresolvable ? " this cluster: " : " now: ") +
                 v.Explain();
      return a;
    }
  }
  bool in = std::find(cand.nodes.begin(), cand.nodes.end(), s.node) != cand.nodes.end();
  if (!in && !s.bound) {
    // kube-scheduler's own filters ruled the reserved node out (taints, ports, CPU): place the
    // unbound pods again among the nodes it allows.
    std::vector<uint8_t> allowed(cluster_.nodes.size(), 0);
    for (int n : cand.nodes) {
      if (n >= 0) allowed[n] = 1;
    }
    if (Status st = ReleaseOpenSlots(g, ""); !st.ok()) {
      a.reason = kPrefix + st.message();
      return a;
    }
    sched::Verdict v = PlaceOpenSlots(g, &allowed);
    if (!v.fit()) {
      a.reason = kPrefix + who + " does not fit on the nodes kube-scheduler allows: " + v.Explain();
      return a;
    }
    in = std::find(cand.nodes.begin(), cand.nodes.end(), s.node) != cand.nodes.end();
  }
  if (!in) {
    a.reason = kPrefix + who + " holds node " + cluster_.nodes[s.node].name + " for rank " +
               std::to_string(*slot) + ", which is not among the candidates";
    return a;
  }
  a.node = s.node;
  a.reason = g.lone ? kPrefix + who + " is placed on another node"
                    : kPrefix + who + " placed rank " + std::to_string(*slot) + " on another node";
  return a;
}

namespace {

// Reads Pod and the candidate nodes of an ExtenderArgs body. The body is checked and walked
// with the raw scanner (no DOM for thousands of nodes); only the Pod is parsed into JSON.
template <typename PodInfoT, typename CandidatesT>
Status ReadArgs(std::string_view body, const ExtenderOptions& o, const topo::Cluster& cluster,
                PodInfoT& info, CandidatesT& cand) {
  std::string err;
  if (!scan::Validate(body, &err)) {
    return InvalidArgumentError("ExtenderArgs: malformed JSON: " + err);
  }
  const std::string_view top = Trim(body);
  if (top[0] != '{') {
    return InvalidArgumentError(std::string("ExtenderArgs: expected a JSON object, got ") +
                                scan::KindOf(top));
  }
  std::string_view pod_raw, nodes_raw, names_raw;
  Status st = scan::ForEachMember(top, [&](std::string_view key, std::string_view value) {
    if (k8s::EqualFold(key, "Pod")) {
      pod_raw = value;
    } else if (k8s::EqualFold(key, "Nodes")) {
      nodes_raw = value;
    } else if (k8s::EqualFold(key, "NodeNames")) {
      names_raw = value;
    } else {
      std::string quoted;
      k8s::AppendJsonString(quoted, key);
      return InvalidArgumentError("ExtenderArgs: unknown field " + quoted +
                                  " (known: Pod, Nodes, NodeNames)");
    }
    return OkStatus();
  });
  if (!st.ok()) return st;
  if (pod_raw.empty() || pod_raw == "null") {
    return InvalidArgumentError("ExtenderArgs: Pod: missing");
  }
  const json pod = json::parse(pod_raw.begin(), pod_raw.end(), nullptr, false);
  auto p = k8s::ParsePod(pod, o.gpu_resource, "ExtenderArgs.Pod");
  if (!p.ok()) return p.status();
  info.pod = std::move(p).value();
  info.membership = k8s::MembershipOf(info.pod, o);

  if (!nodes_raw.empty() && nodes_raw != "null") {
    if (nodes_raw[0] != '{') {
      return InvalidArgumentError("ExtenderArgs.Nodes: expected a v1.NodeList object");
    }
    cand.node_list = true;
    std::string_view items;
    st = scan::ForEachMember(nodes_raw, [&](std::string_view key, std::string_view value) {
      if (k8s::EqualFold(key, "items")) {
        items = value;
      } else {
        cand.list_members.emplace_back(std::string(key), value);
      }
      return OkStatus();
    });
    if (!st.ok()) return st;
    if (!items.empty() && items != "null") {
      if (items[0] != '[')
        return InvalidArgumentError("ExtenderArgs.Nodes.items: expected an array");
      size_t i = 0;
      st = scan::ForEachElement(items, [&](std::string_view item) {
        std::string_view name;
        if (item[0] == '{') {
          // Stops at metadata.name (the API server writes metadata before spec and status).
          static const Status kFound(StatusCode::kAlreadyExists, "found");
          (void)scan::ForEachMember(item, [&](std::string_view key, std::string_view meta) {
            if (!k8s::EqualFold(key, "metadata") || meta[0] != '{') return OkStatus();
            (void)scan::ForEachMember(meta, [&](std::string_view k, std::string_view v) {
              if (!k8s::EqualFold(k, "name") || v[0] != '"') return OkStatus();
              cand.storage.emplace_back();
              name = scan::StringValue(v, cand.storage.back());
              return kFound;
            });
            return kFound;
          });
        }
        if (name.empty()) {
          return InvalidArgumentError("ExtenderArgs.Nodes.items[" + std::to_string(i) +
                                      "].metadata.name: missing");
        }
        cand.names.push_back(name);
        cand.node_items.push_back(item);
        ++i;
        return OkStatus();
      });
      if (!st.ok()) return st;
    }
  } else if (!names_raw.empty() && names_raw != "null") {
    if (names_raw[0] != '[') {
      return InvalidArgumentError("ExtenderArgs.NodeNames: expected an array of strings");
    }
    size_t i = 0;
    st = scan::ForEachElement(names_raw, [&](std::string_view v) {
      std::string_view name;
      if (v[0] == '"') {
        cand.storage.emplace_back();
        name = scan::StringValue(v, cand.storage.back());
      }
      if (name.empty()) {
        return InvalidArgumentError("ExtenderArgs.NodeNames[" + std::to_string(i) +
                                    "]: expected a node name");
      }
      cand.names.push_back(name);
      ++i;
      return OkStatus();
    });
    if (!st.ok()) return st;
  } else {
    return InvalidArgumentError(
        "ExtenderArgs: neither Nodes nor NodeNames given (one of them is required)");
  }
  cand.nodes.reserve(cand.names.size());
  std::string key;
  for (std::string_view n : cand.names) {
    key.assign(n);
    cand.nodes.push_back(cluster.FindNode(key));
  }
  return OkStatus();
}

void AppendReasonMap(std::string& out,
                     const std::vector<std::pair<std::string_view, const std::string*>>& m) {
  if (m.empty()) {
    out += "{}";
    return;
  }
  out += '{';
  // Most entries share one reason: escape it once.
  const std::string* last = nullptr;
  std::string escaped;
  for (size_t i = 0; i < m.size(); ++i) {
    if (i) out += ',';
    k8s::AppendJsonString(out, m[i].first);
    out += ':';
    if (m[i].second != last) {
      last = m[i].second;
      escaped.clear();
      k8s::AppendJsonString(escaped, *last);
    }
    out += escaped;
  }
  out += '}';
}

}  // namespace

StatusOr<std::string> Extender::Filter(std::string_view body) {
  PodInfo info;
  Candidates cand;
  if (Status s = ReadArgs(body, options_, cluster_, info, cand); !s.ok()) return s;

  static const std::string kNotInSpec = std::string(kPrefix) + "node is not in the cluster spec";
  std::vector<size_t> pass;
  std::vector<std::pair<std::string_view, const std::string*>> failed, unresolvable;
  Assignment a;
  if (info.pod.gpus == 0) {
    // Not a GPU pod: not ours to restrict.
    for (size_t i = 0; i < cand.names.size(); ++i) pass.push_back(i);
  } else {
    Status st = ledger_->Run([&] {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t now = ledger_->NowUs();
      SweepExpired(now);
      a = Assign(info, cand, now);
    });
    if (!st.ok()) return st;
    for (size_t i = 0; i < cand.names.size(); ++i) {
      if (cand.nodes[i] < 0) {
        unresolvable.emplace_back(cand.names[i], &kNotInSpec);
      } else if (cand.nodes[i] == a.node) {
        pass.push_back(i);
      } else {
        (a.unresolvable ? unresolvable : failed).emplace_back(cand.names[i], &a.reason);
      }
    }
  }

  std::string out;
  out.reserve(64 + 48 * cand.names.size() + a.reason.size());
  out += "{\"Nodes\":";
  if (cand.node_list) {
    out += '{';
    for (const auto& [key, value] : cand.list_members) {
      k8s::AppendJsonString(out, key);
      out += ':';
      out += value;
      out += ',';
    }
    out += "\"items\":[";
    for (size_t k = 0; k < pass.size(); ++k) {
      if (k) out += ',';
      out += cand.node_items[pass[k]];
    }
    out += "]}";
    out += ",\"NodeNames\":null";
  } else {
    out += "null,\"NodeNames\":[";
    for (size_t k = 0; k < pass.size(); ++k) {
      if (k) out += ',';
      k8s::AppendJsonString(out, cand.names[pass[k]]);
    }
    out += ']';
  }
  out += ",\"FailedNodes\":";
  AppendReasonMap(out, failed);
  out += ",\"FailedAndUnresolvableNodes\":";
  AppendReasonMap(out, unresolvable);
  out += ",\"Error\":\"\"}";
  return out;
}

StatusOr<std::string> Extender::Prioritize(std::string_view body) {
  PodInfo info;
  Candidates cand;
  if (Status s = ReadArgs(body, options_, cluster_, info, cand); !s.ok()) return s;
  int node = -1;
  if (info.pod.gpus > 0) {
    Status st = ledger_->Run([&] {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t now = ledger_->NowUs();
      SweepExpired(now);
      node = Assign(info, cand, now).node;
    });
    if (!st.ok()) return st;
  }
  std::string out;
  out.reserve(2 + 32 * cand.names.size());
  out += '[';
  for (size_t i = 0; i < cand.names.size(); ++i) {
    if (i) out += ',';
    out += "{\"Host\":";
    k8s::AppendJsonString(out, cand.names[i]);
    out += ",\"Score\":";
    out += node >= 0 && cand.nodes[i] == node ? std::to_string(options_.max_score) : "0";
    out += '}';
  }
  out += ']';
  return out;
}

GangView Extender::ViewOf(const GangState& g) const {
  GangView v;
  v.key = g.key;
  v.size = static_cast<int>(g.slots.size());
  v.gpus_per_pod = g.gpus_per_pod;
  v.spec = g.spec;
  v.domain = g.domain;
  v.predicted_ms = g.predicted_ms;
  v.last_decision = g.last_decision;
  v.job = g.job;
  // A queued gang's slots are where its job runs now (nowhere while it waits).
  GangJobState js;
  if (g.job != 0) {
    js = ledger_->GangJob(g.job);
    if (js.phase == GangJobState::Phase::kRunning) {
      v.domain = js.placement->domain;
      v.predicted_ms = js.placement->predicted_ms;
    }
  }
  for (size_t i = 0; i < g.slots.size(); ++i) {
    const Slot& s = g.slots[i];
    GangSlotView sv;
    sv.rank = static_cast<int>(i);
    sv.pod = s.pod_name;
    if (g.job == 0) {
      if (s.node >= 0) sv.node = cluster_.nodes[s.node].name;
      sv.gpus = s.gpus.Positions();
      sv.bound = s.bound;
    } else if (js.phase == GangJobState::Phase::kRunning) {
      const size_t first = i * static_cast<size_t>(g.gpus_per_pod);
      for (int r = 0; r < g.gpus_per_pod && first + r < js.placement->ranks.size(); ++r) {
        const sched::RankSlot& rs = js.placement->ranks[first + r];
        if (r == 0) sv.node = cluster_.nodes[rs.node].name;
        sv.gpus.push_back(rs.gpu);
      }
      std::sort(sv.gpus.begin(), sv.gpus.end());
      sv.bound = s.bound && s.bound_start_us == js.started_us;
    }
    v.slots.push_back(std::move(sv));
  }
  return v;
}

std::optional<GangView> Extender::Gang(const std::string& key) const {
  std::optional<GangView> view;
  // Under the ledger too: a queued gang's view reads its job.
  Status st = ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gangs_.find(key);
    if (it != gangs_.end()) view = ViewOf(*it->second);
  });
  if (!st.ok()) return std::nullopt;
  return view;
}

std::vector<std::string> Extender::GangKeys() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> keys;
  for (const auto& [k, g] : gangs_) keys.push_back(k);
  return keys;
}

sched::ClusterState Extender::StateSnapshot() const {
  std::optional<sched::ClusterState> copy;
  (void)ledger_->Run([&] { copy = state(); });
  return std::move(*copy);
}

}  // namespace toposched::api
