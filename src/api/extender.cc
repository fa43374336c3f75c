#include "api/extender.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <numeric>
#include <utility>

#include "api/extender_k8s.h"
#include "api/extender_scan.h"
#include "core/strings.h"

namespace toposched::api {

using nlohmann::json;

// One pod slot (rank) of a gang.
struct Extender::Slot {
  std::string pod_id;    // "" = no pod holds the slot
  std::string pod_name;  // "<namespace>/<name>"
  std::string uid;
  int64_t alloc_id = 0;  // ClusterState allocation of the slot's GPUs, 0 = none
  int node = -1;
  sched::GpuMask gpus;
  bool bound = false;
};

struct Extender::GangState {
  std::string key;
  bool lone = true;
  int gpus_per_pod = 0;
  job::JobSpec spec;  // the whole gang, normalized
  std::vector<Slot> slots;
  int64_t touched_us = 0;
  std::string domain;
  double predicted_ms = 0;
  std::string last_decision;
};

struct Extender::PodInfo {
  k8s::Pod pod;
  StatusOr<k8s::Membership> membership = Status(StatusCode::kInternal, "unset");
};

// kube-scheduler's candidate nodes: full v1.Node objects (Nodes.items) or names (NodeNames).
struct Extender::Candidates {
  std::vector<std::string_view> names;  // into the request body (or `storage` when escaped)
  std::vector<int> nodes;               // cluster node id per name, -1 when not in the spec
  bool node_list = false;               // Nodes (a v1.NodeList) was given
  std::vector<std::pair<std::string, std::string_view>> list_members;  // its other members, raw
  std::vector<std::string_view> node_items;  // its items, raw, parallel to names
  std::deque<std::string> storage;           // names decoded from escapes (stable addresses)
};

struct Extender::Assignment {
  int node = -1;  // -1: the pod fits nowhere now
  bool unresolvable = false;
  std::string reason;  // for the failed nodes
};

Status ExtenderOptions::Validate() const {
  const std::pair<const std::string*, const char*> keys[] = {
      {&group_name_key, "group_name_key"},
      {&group_size_key, "group_size_key"},
      {&kubeflow_job_key, "kubeflow_job_key"},
      {&kubeflow_type_key, "kubeflow_type_key"},
      {&kubeflow_index_key, "kubeflow_index_key"},
      {&master_replicas_key, "master_replicas_key"},
      {&gpu_resource, "gpu_resource"}};
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

constexpr const char* kPrefix = "toposched: ";

int64_t SteadyNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Quoted(std::string_view s) {
  std::string out;
  k8s::AppendJsonString(out, s);
  return out;
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
    std::vector<std::pair<int64_t, std::vector<sched::NodeGpus>>> released;
    std::vector<int64_t> taken;
    Status st;
    for (int64_t id : c.releases) {
      const std::vector<sched::NodeGpus>* parts = state_.Allocation(id);
      if (parts == nullptr) {
        st = NotFoundError("hold " + std::to_string(id) + " not found");
        break;
      }
      released.emplace_back(id, *parts);
      (void)state_.Release(id);
    }
    for (size_t i = 0; st.ok() && i < c.holds.size(); ++i) {
      st = state_.Allocate(c.holds[i].first, {c.holds[i].second});
      if (st.ok()) taken.push_back(c.holds[i].first);
    }
    if (st.ok()) return st;
    for (int64_t id : taken) (void)state_.Release(id);  // all or nothing
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
  for (int64_t id : ledger.state().AllocationIds()) {
    next_alloc_id_ = std::max(next_alloc_id_, id + 1);
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
                                                           PodBinder* binder) {
  if (Status s = options.Validate(); !s.ok()) return s;
  if (ledger.state().cluster().nodes.size() != cluster.nodes.size()) {
    return InvalidArgumentError("extender: the ledger's occupancy is over another cluster");
  }
  std::unique_ptr<Extender> e(new Extender(cluster, ledger, std::move(options), binder));
  // Hold ids come from the records (Restore); allocation ids of a shared state are not ours.
  e->next_alloc_id_ = 1;
  return e;
}

namespace {

json GpusJson(const sched::GpuMask& m) {
  json a = json::array();
  for (int g : m.Positions()) a.push_back(g);
  return a;
}

}  // namespace

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
    if (op == "reserve") {
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
  if (change.releases.empty()) {
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

namespace {

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

}  // namespace

// Places `open` pods of the gang on `state`; every pod whole on one node. When the placer splits
// a pod (TP smaller than the pod), it is asked again with TP = lcm(TP, GPUs per pod) required on
// one node.
static sched::Verdict PlacePods(const sched::GangPlacer& placer, const sched::ClusterState& state,
                                const job::JobSpec& spec, int open, int gpus_per_pod,
                                int max_node_gpus) {
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
  Slot& s = g.slots[*slot];
  const std::string who = g.lone ? "pod " + info.pod.FullName()
                                 : "gang " + g.key + " (" + std::to_string(g.slots.size()) +
                                       " pods x " + std::to_string(g.gpus_per_pod) + " GPUs)";
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

std::string ErrorResult(const std::string& message) {
  return "{\"Error\":" + Quoted(message) + "}";
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
  });
  if (!st.ok()) return st;
  if (!call_binder) return answer;
  if (binder_ != nullptr) {
    Status bs = binder_->Bind(PodRef{b->pod_namespace, b->pod_name, b->pod_uid}, b->node);
    if (!bs.ok()) return ErrorResult(std::string(kPrefix) + "binding failed: " + bs.message());
  }
  st = ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gangs_.find(gang_key);
    if (it == gangs_.end() || it->second->slots[slot].alloc_id != hold ||
        it->second->slots[slot].bound) {
      answer = ErrorResult(std::string(kPrefix) + "pod " + name + " lost its reservation " +
                           "while it was being bound");
      return;
    }
    const Slot& s = it->second->slots[slot];
    json book{{"gang", gang_key},
              {"rank", slot},
              {"pod_id", s.pod_id},
              {"pod", s.pod_name},
              {"uid", s.uid}};
    Status rs = Record("bind", std::move(book), {});
    answer =
        ErrorResult(rs.ok() ? "" : std::string(kPrefix) + "recording the binding: " + rs.message());
  });
  if (!st.ok()) return st;
  return answer;
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
    // No pod of the gang left: every reservation goes and the gang is forgotten.
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
      const std::string path = what + "[" + Quoted(it.key()) + "]";
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
              const int64_t a = s.alloc_id != 0 ? ledger_->AllocationOf(s.alloc_id) : 0;
              if (a != 0 && view.HasAllocation(a)) (void)view.Release(a);
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

GangView Extender::ViewOf(const GangState& g) const {
  GangView v;
  v.key = g.key;
  v.size = static_cast<int>(g.slots.size());
  v.gpus_per_pod = g.gpus_per_pod;
  v.spec = g.spec;
  v.domain = g.domain;
  v.predicted_ms = g.predicted_ms;
  v.last_decision = g.last_decision;
  for (size_t i = 0; i < g.slots.size(); ++i) {
    const Slot& s = g.slots[i];
    GangSlotView sv;
    sv.rank = static_cast<int>(i);
    sv.pod = s.pod_name;
    if (s.node >= 0) sv.node = cluster_.nodes[s.node].name;
    sv.gpus = s.gpus.Positions();
    sv.bound = s.bound;
    v.slots.push_back(std::move(sv));
  }
  return v;
}

std::optional<GangView> Extender::Gang(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = gangs_.find(key);
  if (it == gangs_.end()) return std::nullopt;
  return ViewOf(*it->second);
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

Status Extender::Sweep() {
  return ledger_->Run([&] {
    std::lock_guard<std::mutex> lock(mu_);
    SweepExpired(ledger_->NowUs());
  });
}

Status Extender::Restore(const std::vector<std::pair<int64_t, std::string>>& records) {
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
  return OkStatus();
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
