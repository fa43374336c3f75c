#include "api/input_codec.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "api/json_text.h"
#include "job/job_spec.h"
#include "topo/io/json_io.h"

namespace toposched::api {

namespace {

using Json = nlohmann::json;

StatusOr<int> NodeNamed(const topo::Cluster& cluster, const Json& p) {
  const std::string name = p.at("node").get<std::string>();
  const int node = cluster.FindNode(name);
  if (node < 0) return NotFoundError("no node \"" + name + "\" in the cluster");
  return node;
}

// A report's drain: {"drain_node": name, "drain_reason"}, absent when none.
Status DecodeDrain(const topo::Cluster& cluster, const Json& p, int* node, std::string* reason) {
  if (!p.contains("drain_node")) return OkStatus();
  const std::string name = p.at("drain_node").get<std::string>();
  *node = cluster.FindNode(name);
  if (*node < 0) return NotFoundError("drain_node: no node \"" + name + "\" in the cluster");
  *reason = p.at("drain_reason").get<std::string>();
  return OkStatus();
}

void EncodeDrain(const topo::Cluster& cluster, int node, const std::string& reason, Json& p) {
  if (node < 0) return;
  p["drain_node"] = cluster.nodes.at(node).name;
  p["drain_reason"] = reason;
}

StatusOr<sched::Input> DecodePayload(const store::InputRecord& rec, const topo::Cluster& cluster,
                                     const std::string& where) {
  const sched::JobId job{rec.job_id};
  if (rec.kind == "submit") {
    ASSIGN_OR_RETURN(job::JobSpec spec, job::ParseJobJson(rec.payload, where));
    return sched::Input{sched::SubmitJob{std::move(spec)}};
  }
  if (rec.kind == "cancel") return sched::Input{sched::CancelJob{job}};
  if (rec.kind == "tick") return sched::Input{sched::Tick{}};
  if (rec.kind == "schedule") return sched::Input{sched::SchedulePass{}};
  if (rec.kind == "pass") return sched::Input{sched::Pass{}};
  const Json p = Json::parse(rec.payload, nullptr, false);
  if (!p.is_object()) return InvalidArgumentError("malformed payload");
  if (rec.kind == "complete") {
    // Earlier builds wrote "{}"; a failed job's exit report adds its reason, a fatal GPU fault
    // in it the node drained with it.
    sched::Input in{std::in_place_type<sched::CompleteJob>};
    auto& c = std::get<sched::CompleteJob>(in);
    c.job = job;
    if (p.contains("failure")) c.failure = p.at("failure").get<std::string>();
    RETURN_IF_ERROR(DecodeDrain(cluster, p, &c.drain_node, &c.drain_reason));
    // Later: a platform cause (the job follows its on_failure) and the node reporting it.
    if (p.contains("platform")) c.platform = p.at("platform").get<bool>();
    if (p.contains("failed_node")) {
      const std::string name = p.at("failed_node").get<std::string>();
      c.failed_node = cluster.FindNode(name);
      if (c.failed_node < 0) {
        return NotFoundError("failed_node: no node \"" + name + "\" in the cluster");
      }
    }
    return in;
  }
  if (rec.kind == "job_degraded") {
    sched::Input in{std::in_place_type<sched::JobDegraded>};
    auto& d = std::get<sched::JobDegraded>(in);
    d.job = job;
    d.reason = p.at("reason").get<std::string>();
    d.after_ms = p.at("after_ms").get<double>();
    RETURN_IF_ERROR(DecodeDrain(cluster, p, &d.drain_node, &d.drain_reason));
    return in;
  }
  if (rec.kind == "submit_pod_group") {
    const Json& spec = p.at("spec");
    if (!spec.is_object()) return InvalidArgumentError("spec: expected an object");
    ASSIGN_OR_RETURN(job::JobSpec s, job::ParseJobJson(Dump(spec), where + ": spec"));
    sched::Input in{std::in_place_type<sched::SubmitPodGroup>};
    auto& g = std::get<sched::SubmitPodGroup>(in);
    g.group = p.at("group").get<std::string>();
    if (g.group.empty()) return InvalidArgumentError("group: empty");
    g.spec = std::move(s);
    return in;
  }
  if (rec.kind == "priority") {
    return sched::Input{sched::SetJobPriority{job, p.at("priority").get<int>()}};
  }
  if (rec.kind == "drain") {
    ASSIGN_OR_RETURN(int node, NodeNamed(cluster, p));
    return sched::Input{
        sched::DrainNode{node, p.at("drained").get<bool>(), p.value("reason", std::string())}};
  }
  if (rec.kind == "health") {
    ASSIGN_OR_RETURN(int node, NodeNamed(cluster, p));
    ASSIGN_OR_RETURN(sched::HealthTarget target,
                     sched::ParseHealthTarget(p.at("component").get<std::string>()));
    StatusOr<topo::Health> h = topo::ParseHealth(p.at("health").get<std::string>());
    if (!h.ok()) return h.status().WithPrefix("health");
    return sched::Input{sched::HealthReport{target, node, p.value("index", 0), *h,
                                            p.value("reason", std::string())}};
  }
  if (rec.kind == "node_topology") {
    ASSIGN_OR_RETURN(int node, NodeNamed(cluster, p));
    const Json& t = p.at("topology");
    if (!t.is_object()) return InvalidArgumentError("topology: expected an object");
    ASSIGN_OR_RETURN(topo::NodeTopology topology,
                     topo::io::TopologyFromJson(Dump(t), where + ": topology"));
    return sched::Input{
        sched::NodeTopologyReport{node, std::move(topology), p.at("source").get<std::string>()}};
  }
  if (rec.kind == "node_network") {
    ASSIGN_OR_RETURN(int node, NodeNamed(cluster, p));
    sched::NodeNetworkReport r;
    r.node = node;
    r.domains = p.value("domains", std::vector<std::string>());
    if (p.contains("nvlink_domain")) r.nvlink_domain = p.at("nvlink_domain").get<std::string>();
    r.nvlink_gbps = p.value("nvlink_gbps", 0.0);
    r.source = p.value("source", std::string());
    return sched::Input{std::move(r)};
  }
  return InvalidArgumentError("unknown input kind (written by a newer build?)");
}

}  // namespace

store::InputRecord EncodeInput(const sched::Input& in, const topo::Cluster& cluster,
                               const std::string& submit_json) {
  store::InputRecord rec;
  rec.kind = sched::InputKind(in);
  rec.payload = "{}";
  std::visit(sched::Overload{
                 [&](const sched::SubmitJob& s) {
                   rec.payload = submit_json.empty() ? job::JobSpecToJson(s.spec, -1) : submit_json;
                 },
                 [&](const sched::SubmitPodGroup& s) {
                   rec.payload = Dump(Json{{"group", s.group},
                                           {"spec", Json::parse(job::JobSpecToJson(s.spec, -1))}});
                 },
                 [&](const sched::CancelJob& c) { rec.job_id = c.job.value; },
                 [&](const sched::CompleteJob& c) {
                   rec.job_id = c.job.value;
                   Json p = Json::object();
                   if (!c.failure.empty()) p["failure"] = c.failure;
                   EncodeDrain(cluster, c.drain_node, c.drain_reason, p);
                   if (c.platform) p["platform"] = true;
                   if (c.failed_node >= 0) p["failed_node"] = cluster.nodes.at(c.failed_node).name;
                   if (!p.empty()) rec.payload = Dump(p);
                 },
                 [&](const sched::SetJobPriority& p) {
                   rec.job_id = p.job.value;
                   rec.payload = Dump(Json{{"priority", p.priority}});
                 },
                 [&](const sched::DrainNode& d) {
                   rec.payload = Dump(Json{{"node", cluster.nodes.at(d.node).name},
                                           {"drained", d.drained},
                                           {"reason", d.reason}});
                 },
                 [&](const sched::HealthReport& h) {
                   rec.payload = Dump(Json{{"component", sched::HealthTargetName(h.target)},
                                           {"node", cluster.nodes.at(h.node).name},
                                           {"index", h.index},
                                           {"health", topo::HealthName(h.health)},
                                           {"reason", h.reason}});
                 },
                 [](const sched::Tick&) {},
                 [](const sched::SchedulePass&) {},
                 [](const sched::Pass&) {},
                 [&](const sched::NodeTopologyReport& r) {
                   rec.payload = Dump(
                       Json{{"node", cluster.nodes.at(r.node).name},
                            {"source", r.source},
                            {"topology", Json::parse(topo::io::TopologyToJson(r.topology, -1))}});
                 },
                 [&](const sched::NodeNetworkReport& r) {
                   Json p{{"node", cluster.nodes.at(r.node).name},
                          {"domains", r.domains},
                          {"source", r.source}};
                   if (r.nvlink_domain) {
                     p["nvlink_domain"] = *r.nvlink_domain;
                     p["nvlink_gbps"] = r.nvlink_gbps;
                   }
                   rec.payload = Dump(p);
                 },
                 [&](const sched::JobDegraded& d) {
                   rec.job_id = d.job.value;
                   Json p{{"reason", d.reason}, {"after_ms", d.after_ms}};
                   EncodeDrain(cluster, d.drain_node, d.drain_reason, p);
                   rec.payload = Dump(p);
                 },
             },
             in);
  return rec;
}

StatusOr<sched::Input> DecodeInput(const store::InputRecord& rec, const topo::Cluster& cluster) {
  const std::string where = "input " + std::to_string(rec.seq) + " (" + rec.kind + ")";
  StatusOr<sched::Input> in = [&]() -> StatusOr<sched::Input> {
    try {
      return DecodePayload(rec, cluster, where);
    } catch (const std::exception& e) {
      return InvalidArgumentError(std::string("malformed payload: ") + e.what());
    }
  }();
  if (!in.ok()) {
    std::string m = in.status().message();
    if (m.rfind(where, 0) != 0) m = where + ": " + m;
    return Status(StatusCode::kDataLoss, m);
  }
  return in;
}

}  // namespace toposched::api
