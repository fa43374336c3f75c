// The daemon's read views as JSON: a job (with its ranks, events and explanation), the job
// list, the nodes with every GPU's state, the topology, the event log. Each reads the
// scheduler's state under the service's lock (the *Locked helpers) and answers one string.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/json_text.h"
#include "api/service.h"
#include "api/transport_json.h"
#include "sched/node_network.h"
#include "topo/io/json_io.h"

namespace toposched::api {

namespace {

using json = nlohmann::ordered_json;
using job::JobState;

// `category`: the interruption's cause category (docs/diagnose.md), "" for other events.
json EventJson(const job::JobEvent& e, int64_t seq, const std::string& category) {
  return json{{"seq", seq},
              {"time_us", e.time_us},
              {"job", e.job_id},
              {"from", job::JobStateName(e.from)},
              {"to", job::JobStateName(e.to)},
              {"reason", e.reason},
              {"category", category.empty() ? json(nullptr) : json(category)}};
}

}  // namespace

json Service::RanksJsonLocked(const sched::Placement& p) const {
  json ranks = json::array();
  for (const sched::RankSlot& r : p.ranks) {
    const topo::ClusterNode& cn = cluster_->nodes[r.node];
    const topo::NodeTopology& t = sched_->OwnTopology(r.node);
    json nic = nullptr;
    if (r.nic >= 0 && static_cast<size_t>(r.nic) < t.nics.size()) nic = t.nics[r.nic].name;
    ranks.push_back({{"rank", r.rank}, {"node", cn.name}, {"gpu", r.gpu}, {"nic", nic}});
  }
  return ranks;
}

std::string Service::JobJsonLocked(int64_t id, bool with_events) const {
  const JobInfo& ji = jobs_.at(id);
  const std::optional<JobState> st = sched_->State(JobId{id});
  const job::JobSpec* cur = sched_->Spec(JobId{id});  // elastic jobs change size
  const job::JobSpec& spec = cur != nullptr ? *cur : ji.spec;
  json j{{"id", id},
         {"job_id", "job-" + std::to_string(id)},
         {"name", ji.spec.name},
         {"user", ji.spec.user},
         {"queue", ji.spec.queue},
         {"priority", ji.priority},
         {"state", st ? job::JobStateName(*st) : "UNKNOWN"},
         {"gpus", spec.total_gpus},
         {"replicas", spec.replicas},
         {"gpus_per_replica", spec.gpus_per_replica},
         {"submit_time_us", ji.submit_time_us},
         {"time_limit_s", ji.spec.time_limit_s},
         {"idempotency_key", ji.idem_key},
         {"source", ji.pod_group.empty() ? "rest" : "kubernetes"}};
  if (!ji.pod_group.empty()) j["pod_group"] = ji.pod_group;
  if (spec.estimate) {
    j["estimate"] = {{"run_s", spec.estimate->run_s}, {"comm_share", spec.estimate->comm_share}};
  }
  if (const sched::Placement* p = sched_->PlacementOf(JobId{id})) {
    json nodes = json::array();
    for (const sched::NodeGpus& part : p->parts) {
      json gpus = json::array();
      for (int g = 0; g < sched_->cluster_state().GpuCount(part.node); ++g) {
        if (part.gpus.test(g)) gpus.push_back(g);
      }
      nodes.push_back({{"node", cluster_->nodes[part.node].name}, {"gpus", gpus}});
    }
    j["placement"] = {{"domain", p->domain},
                      {"predicted_ms", p->predicted_ms},
                      {"best_possible_ms", p->best_possible_ms},
                      {"tp_ms", p->tp_ms},
                      {"pp_ms", p->pp_ms},
                      {"dp_ms", p->dp_ms},
                      {"decision_us", p->decision_us},
                      {"nodes", nodes}};
    // Its declared run on this placement, from its start (or its last checkpoint move).
    if (std::optional<int64_t> end = run_times_->ExpectedEndUs(JobId{id}, p->decision_us)) {
      j["placement"]["expected_end_us"] = *end;
    }
    // One job's view also gives each rank's node, GPU and NIC (a list grows with the job).
    if (with_events) j["placement"]["ranks"] = RanksJsonLocked(*p);
  } else {
    j["placement"] = nullptr;
  }
  if (with_events) {
    StatusOr<std::string> ex = sched_->Explain(JobId{id});
    j["explanation"] = ex.ok() ? *ex : ex.status().message();
    j["spec"] = json::parse(ji.spec_json, nullptr, false);
    json evs = json::array();
    const std::string name = "job-" + std::to_string(id);
    const auto& log = sched_->Events();
    for (size_t i = 0; i < log.size(); ++i) {
      if (log[i].job_id == name) {
        evs.push_back(EventJson(log[i], static_cast<int64_t>(i), EventCategoryLocked(i)));
      }
    }
    j["events"] = evs;
  }
  return Dump(j);
}

StatusOr<std::string> Service::JobJson(int64_t id, bool with_events) const {
  std::string out;
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (jobs_.count(id) == 0) return NotFoundError("no job job-" + std::to_string(id));
    out = JobJsonLocked(id, with_events);
    seq = applied_seq_;
  }
  RETURN_IF_ERROR(WaitDurable(seq));
  return out;
}

std::string Service::JobsJson(const ListFilter& f) const {
  std::string out = "{\"jobs\":[";
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    int n = 0;
    for (auto it = jobs_.upper_bound(f.after_id); it != jobs_.end() && n < f.limit; ++it) {
      const JobInfo& ji = it->second;
      if (f.user && ji.spec.user != *f.user) continue;
      if (f.queue && ji.spec.queue != *f.queue) continue;
      if (f.name && ji.spec.name != *f.name) continue;
      if (f.state && sched_->State(JobId{it->first}) != f.state) continue;
      if (n++ > 0) out += ',';
      out += JobJsonLocked(it->first, false);
    }
    seq = applied_seq_;
  }
  out += "]}";
  (void)WaitDurable(seq);
  return out;
}

StatusOr<std::string> Service::ExplainJson(int64_t id) const {
  json j;
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    ASSIGN_OR_RETURN(std::string ex, sched_->Explain(JobId{id}));
    const std::optional<JobState> st = sched_->State(JobId{id});
    j = {{"id", id}, {"state", st ? job::JobStateName(*st) : "UNKNOWN"}, {"explanation", ex}};
    if (const sched::Placement* p = sched_->PlacementOf(JobId{id})) {
      j["predicted_ms"] = p->predicted_ms;
      j["best_possible_ms"] = p->best_possible_ms;
      j["dp_ms"] = p->dp_ms;
      j["tp_ms"] = p->tp_ms;
      j["pp_ms"] = p->pp_ms;
      j["placement_explanation"] = p->explanation;
      // Before it runs long: NCCL's predicted transport per hop and the environment that keeps
      // it on the ranks' NICs (docs/diagnose.md, "Before the job runs").
      if (const job::JobSpec* spec = sched_->Spec(JobId{id})) {
        AddTransportPlan(sched::PredictTransports(placer_->cost_model(), *p, spec->layout), j);
      }
    }
    seq = applied_seq_;
  }
  RETURN_IF_ERROR(WaitDurable(seq));
  return Dump(j);
}

// One GPU as the dashboard colours it. state: "unhealthy" (the GPU or its node), else
// "kubernetes" (held for pods: an extender hold or a pod group's job), "job" (a REST job),
// "reserved" (another holder), "drained" (free on a drained node) or "free". health is the
// GPU's own, nvlink_health its NVLinks' as reported; holders are the allocations' names.
json Service::GpuStateJsonLocked(int node, int gpu) const {
  const sched::ClusterState& cs = sched_->cluster_state();
  json holders = json::array();
  std::string state;
  for (const sched::AllocId id : cs.Holders(node, gpu)) {
    if (id.owner() == sched::AllocId::Owner::kJob) {
      holders.push_back("job-" + std::to_string(id.number()));
      auto ji = jobs_.find(id.number());
      const bool pods = ji != jobs_.end() && !ji->second.pod_group.empty();
      if (state.empty() || pods) state = pods ? "kubernetes" : "job";
    } else if (id.owner() == sched::AllocId::Owner::kHold) {
      auto it = hold_gang_.find(id.number());
      holders.push_back(it != hold_gang_.end() ? it->second
                                               : "hold-" + std::to_string(id.number()));
      state = "kubernetes";
    } else {
      holders.push_back("block-" + std::to_string(id.number()));
      if (state.empty()) state = "reserved";
    }
  }
  const topo::Health health = cs.GpuHealth(node, gpu);
  if (health == topo::Health::kUnhealthy || cs.NodeHealth(node) == topo::Health::kUnhealthy) {
    state = "unhealthy";
  } else if (state.empty()) {
    state = cs.NodeDrained(node) ? "drained" : "free";
  }
  return json{{"gpu", gpu},
              {"state", state},
              {"health", topo::HealthName(health)},
              {"nvlink_health", topo::HealthName(sched_->NvlinkHealth(node, gpu))},
              {"holders", holders}};
}

// The node's NICs that are not healthy, by position: name and health as reported (a "nic"
// health report), else as the topology gives it. Only those, as gpu_health: at 4,096 nodes a
// line per NIC doubled the node list (2.6 -> 5.1 MB, 0.125 -> 0.23 s to build).
json Service::NicHealthJsonLocked(int node) const {
  const topo::NodeTopology& t = sched_->OwnTopology(node);
  json out = json::array();
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const topo::Health reported = sched_->NicHealth(node, static_cast<int>(i));
    const topo::Health h = reported != topo::Health::kHealthy ? reported : t.nics[i].health;
    if (h == topo::Health::kHealthy) continue;
    out.push_back({{"nic", i}, {"name", t.nics[i].name}, {"health", topo::HealthName(h)}});
  }
  return out;
}

std::string Service::NodesJson() const {
  json nodes = json::array();
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    const sched::ClusterState& cs = sched_->cluster_state();
    for (size_t n = 0; n < cluster_->nodes.size(); ++n) {
      const int node = static_cast<int>(n);
      json bad = json::array();
      json states = json::array();
      std::set<sched::AllocId> holders;
      for (int g = 0; g < cs.GpuCount(node); ++g) {
        if (cs.GpuHealth(node, g) != topo::Health::kHealthy) {
          bad.push_back({{"gpu", g}, {"health", topo::HealthName(cs.GpuHealth(node, g))}});
        }
        for (const sched::AllocId h : cs.Holders(node, g)) holders.insert(h);
        states.push_back(GpuStateJsonLocked(node, g));
      }
      json jobs = json::array();
      std::set<std::string> gangs;
      for (const sched::AllocId id : holders) {
        if (id.owner() == sched::AllocId::Owner::kJob) {
          jobs.push_back("job-" + std::to_string(id.number()));
          // A pod group's job is listed under its gang too.
          if (auto ji = jobs_.find(id.number());
              ji != jobs_.end() && !ji->second.pod_group.empty()) {
            gangs.insert(ji->second.pod_group);
          }
        } else if (auto it = hold_gang_.find(id.number());
                   id.owner() == sched::AllocId::Owner::kHold && it != hold_gang_.end()) {
          gangs.insert(it->second);
        }
      }
      const topo::ClusterNode& cn = cluster_->nodes[n];
      const sched::NodeNetworkReport place =
          sched::NetworkPlaceOf(sched_->placer().cluster(), node);
      const sched::NodeNetworkReport* moved = sched_->ReportedNetwork(node);
      nodes.push_back({{"name", cn.name},
                       {"profile", cluster_->profiles[cn.profile].name},
                       {"gpus", cs.GpuCount(node)},
                       {"free", cs.FreeMask(node).count()},
                       {"allocated", cs.HeldMask(node).count()},
                       // neither free nor allocated: unhealthy, or on a drained node
                       {"unavailable",
                        cs.GpuCount(node) - cs.FreeMask(node).count() - cs.HeldMask(node).count()},
                       {"health", topo::HealthName(cs.NodeHealth(node))},
                       {"drained", cs.NodeDrained(node)},
                       {"drain_reason", sched_->NodeDrainReason(node)},
                       {"gpu_health", bad},
                       {"gpu_states", states},
                       {"nic_health", NicHealthJsonLocked(node)},
                       // "" while the node's topology is its profile's; else who reported it
                       {"topology_source", sched_->ReportedTopologySource(node)},
                       // the node's network domains top first and NVLink domain ("" none) in the
                       // model now; "network_source" "" while they are the cluster file's
                       {"network", place.domains},
                       {"nvlink_domain", place.nvlink_domain.value_or("")},
                       {"network_source", moved ? moved->source : std::string()},
                       {"jobs", jobs},
                       {"pod_gangs", gangs}});
    }
    seq = applied_seq_;
  }
  (void)WaitDurable(seq);
  return Dump(json{{"nodes", nodes}});
}

std::string Service::TopologyJson() const { return topo::io::ClusterToJson(*cluster_, -1); }

StatusOr<std::string> Service::NodeTopologyJson(const std::string& node) const {
  const int n = cluster_->FindNode(node);
  if (n < 0) return NotFoundError("node: no node \"" + node + "\"");
  std::lock_guard<std::mutex> lk(mu_);
  const topo::ClusterNode& cn = cluster_->nodes[n];
  const topo::NodeTopology& t = sched_->OwnTopology(n);
  return Dump(json{{"node", cn.name},
                   {"profile", cluster_->profiles[cn.profile].name},
                   {"source", sched_->ReportedTopologySource(n)},
                   {"topology", json::parse(topo::io::TopologyToJson(t, -1))}});
}

std::string Service::EventsJson(int64_t after, int limit, const std::string& job) const {
  json evs = json::array();
  int64_t next = after;
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    const auto& log = sched_->Events();
    int n = 0;
    for (size_t i = static_cast<size_t>(std::max<int64_t>(after, 0)); i < log.size() && n < limit;
         ++i) {
      next = static_cast<int64_t>(i) + 1;
      if (!job.empty() && log[i].job_id != job) continue;
      evs.push_back(EventJson(log[i], static_cast<int64_t>(i), EventCategoryLocked(i)));
      ++n;
    }
    seq = applied_seq_;
  }
  (void)WaitDurable(seq);
  return Dump(json{{"events", evs}, {"next", next}});
}

}  // namespace toposched::api
