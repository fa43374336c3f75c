#include "api/kube_watch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "api/service.h"
#include "topo/hardware.h"
#include "topo/io/kube_cluster.h"

namespace toposched::api {

namespace {

using Json = nlohmann::json;

StatusOr<KubeNode> NodeFromJson(const Json& obj) {
  if (!obj.is_object()) return InvalidArgumentError("node: expected an object");
  if (obj.contains("kind") && obj["kind"] != "Node") {
    return InvalidArgumentError("kind: expected \"Node\", got " + obj["kind"].dump());
  }
  const Json* meta = obj.contains("metadata") ? &obj["metadata"] : nullptr;
  if (meta == nullptr || !meta->is_object() || !meta->contains("name") ||
      !(*meta)["name"].is_string() || (*meta)["name"].get<std::string>().empty()) {
    return InvalidArgumentError("metadata.name: expected a non-empty string");
  }
  KubeNode n;
  n.name = (*meta)["name"].get<std::string>();
  if (meta->contains("resourceVersion") && (*meta)["resourceVersion"].is_string()) {
    n.resource_version = (*meta)["resourceVersion"].get<std::string>();
  }
  if (obj.contains("spec") && obj["spec"].is_object() && obj["spec"].contains("unschedulable")) {
    const Json& u = obj["spec"]["unschedulable"];
    if (!u.is_boolean()) return InvalidArgumentError("spec.unschedulable: expected a boolean");
    n.unschedulable = u.get<bool>();
  }
  if (meta->contains("labels") && (*meta)["labels"].is_object()) {
    const Json& labels = (*meta)["labels"];
    for (const auto& [key, value] : labels.items()) {
      if (value.is_string()) n.labels[key] = value.get<std::string>();
    }
    auto it = labels.find("nvidia.com/gpu.count");
    if (it != labels.end() && it->is_string()) {
      const std::string& v = it->get_ref<const std::string&>();
      const bool digits =
          !v.empty() && v.size() <= 4 &&
          std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits && std::stoi(v) <= 1024) n.gpu_count = std::stoi(v);
    }
  }
  if (obj.contains("status") && obj["status"].is_object() && obj["status"].contains("conditions")) {
    const Json& conds = obj["status"]["conditions"];
    if (!conds.is_array()) return InvalidArgumentError("status.conditions: expected an array");
    for (const Json& c : conds) {
      if (!c.is_object() || c.value("type", Json()) != "Ready") continue;
      const Json& st = c.contains("status") ? c["status"] : Json();
      if (!st.is_string() || (st != "True" && st != "False" && st != "Unknown")) {
        return InvalidArgumentError(
            "status.conditions[Ready].status: expected \"True\", \"False\" or \"Unknown\"");
      }
      n.ready = st.get<std::string>();
      if (c.contains("reason") && c["reason"].is_string()) n.ready_reason = c["reason"];
      if (c.contains("message") && c["message"].is_string()) n.ready_message = c["message"];
    }
  }
  return n;
}

// The GPU model family a product name is (the hardware table's entry), "" when unknown. GFD's
// "-SHARED" suffix (time-slicing) is not part of the product.
std::string ProductFamily(std::string product) {
  const std::string shared = "-SHARED";
  if (product.size() > shared.size() &&
      product.compare(product.size() - shared.size(), shared.size(), shared) == 0) {
    product.resize(product.size() - shared.size());
  }
  std::optional<topo::GpuModelInfo> info = topo::HardwareTable::Default().Lookup(product);
  return info ? info->match : std::string();
}

// The first error of several.
void Keep(Status& acc, Status s) {
  if (acc.ok() && !s.ok()) acc = std::move(s);
}

std::string NotReadyWhy(const KubeNode& n) {
  std::string why = "Kubernetes: node " + n.name + " not ready (Ready=" + n.ready;
  if (!n.ready_reason.empty()) why += ", " + n.ready_reason;
  if (!n.ready_message.empty()) why += ": " + n.ready_message;
  return why + ")";
}

}  // namespace

namespace {

// The drain reason GPU Feature Discovery's labels give (the model's GPU count or GPU model is not
// the node's), "" when they agree or do not say.
std::string HardwareDisagreement(const KubeNode& node, const NodeSink::View& ours) {
  const std::string has = "Kubernetes: node " + node.name + " has ";
  if (node.gpu_count && ours.gpus >= 0 && *node.gpu_count != ours.gpus) {
    return has + "nvidia.com/gpu.count=" + std::to_string(*node.gpu_count) +
           ", the cluster model " + std::to_string(ours.gpus) +
           " GPUs (a GPU off the bus, or a cluster file that does not describe the node)";
  }
  auto it = node.labels.find("nvidia.com/gpu.product");
  if (it == node.labels.end() || it->second.find("-MIG-") != std::string::npos) return "";
  const std::string theirs = ProductFamily(it->second), model = ProductFamily(ours.gpu_model);
  if (theirs.empty() || model.empty() || theirs == model) return "";
  return has + "nvidia.com/gpu.product=" + it->second + ", the cluster model " + ours.gpu_model +
         " (" + theirs + " against " + model + ": a cluster file that does not describe the node)";
}

}  // namespace

std::vector<std::vector<std::string>> NodeLabelKeys::KeysFor(
    const std::vector<std::string>& levels) const {
  std::vector<std::vector<std::string>> keys;
  for (const std::string& level : levels) {
    std::vector<std::string>& k = keys.emplace_back();
    if (auto it = level_keys.find(level); it != level_keys.end()) {
      k.push_back(it->second);
      continue;
    }
    for (const std::string& key : level_labels) {
      if (topo::io::LevelName(key) == level) k.push_back(key);
    }
  }
  return keys;
}

StatusOr<KubeNode> ReadKubeNode(std::string_view node_json) {
  const Json obj = Json::parse(node_json, nullptr, false);
  if (obj.is_discarded()) return InvalidArgumentError("node: not valid JSON");
  return NodeFromJson(obj);
}

// --- the sink over the service ---

std::optional<NodeSink::View> ServiceNodeSink::Node(const std::string& name) {
  std::optional<Service::NodeStatus> c = service_.NodeStatusOf(name);
  if (!c) return std::nullopt;
  return View{c->health, c->drained, c->gpus, c->drain_reason, c->gpu_model, c->levels};
}

Status ServiceNodeSink::SetNetwork(const std::string& name,
                                   const std::vector<std::string>& level_values,
                                   const std::optional<std::string>& clique,
                                   const std::string& reason) {
  return service_.ReportNetwork(name, level_values, clique, reason);
}

Status ServiceNodeSink::SetHealth(const std::string& name, topo::Health health,
                                  const std::string& reason) {
  return service_.ReportHealth("node", name, 0, topo::HealthName(health), reason);
}

Status ServiceNodeSink::SetDrained(const std::string& name, bool drained,
                                   const std::string& reason) {
  return service_.SetDrained(name, drained, reason);
}

// --- the rules ---

Status NodeReconciler::Seen(const KubeNode& node) {
  std::optional<NodeSink::View> ours = sink_.Node(node.name);
  if (!ours) {
    ++unknown_;
    return OkStatus();
  }
  Status st = OkStatus();
  if (node.ready != "True" && ours->health != topo::Health::kUnhealthy) {
    Keep(st, sink_.SetHealth(node.name, topo::Health::kUnhealthy, NotReadyWhy(node)));
  } else if (node.ready == "True" && ours->health == topo::Health::kUnhealthy) {
    Keep(st, sink_.SetHealth(node.name, topo::Health::kHealthy,
                             "Kubernetes: node " + node.name + " Ready"));
  }
  auto [it, first] = cordoned_.try_emplace(node.name, false);
  const bool was = it->second;
  it->second = node.unschedulable;
  bool drained = ours->drained;
  if (node.unschedulable && (first || !was) && !drained) {
    Keep(st, sink_.SetDrained(node.name, true,
                              "Kubernetes: node " + node.name + " cordoned (spec.unschedulable)"));
    drained = true;
  } else if (!node.unschedulable && !first && was && drained) {
    // Resumed unless GFD's labels keep it drained (below).
    if (HardwareDisagreement(node, *ours).empty()) {
      Keep(st, sink_.SetDrained(node.name, false, "Kubernetes: node " + node.name + " uncordoned"));
    }
    drained = false;
  }
  Keep(st, FollowHardwareLabels(node, *ours, drained));
  Keep(st, FollowNetworkLabels(node, *ours));
  return st;
}

Status NodeReconciler::FollowHardwareLabels(const KubeNode& node, const NodeSink::View& ours,
                                            bool drained) {
  const std::string off = HardwareDisagreement(node, ours);
  if (!off.empty()) {
    return drained ? OkStatus() : sink_.SetDrained(node.name, true, off);
  }
  if (!drained || node.unschedulable) return OkStatus();
  // Resumed only from the labels' own drain, and only by the label it named being present.
  for (const char* key : {"nvidia.com/gpu.count", "nvidia.com/gpu.product"}) {
    const std::string prefix = "Kubernetes: node " + node.name + " has " + key + "=";
    const bool present = std::string(key) == "nvidia.com/gpu.count" ? node.gpu_count.has_value()
                                                                    : node.labels.count(key) > 0;
    if (ours.drain_reason.rfind(prefix, 0) == 0 && present) {
      return sink_.SetDrained(
          node.name, false,
          "Kubernetes: node " + node.name + " " + key + " agrees with the cluster model again");
    }
  }
  return OkStatus();
}

Status NodeReconciler::FollowNetworkLabels(const KubeNode& node, const NodeSink::View& ours) {
  // The value of the first of `keys` the node carries non-empty; "" when none.
  auto first_label = [&](const std::vector<std::string>& keys) {
    for (const std::string& k : keys) {
      auto it = node.labels.find(k);
      if (it != node.labels.end() && !it->second.empty()) return it->second;
    }
    return std::string();
  };
  // One value per level; none when a level has no key or the node lacks every one of them.
  std::vector<std::string> values;
  for (const std::vector<std::string>& candidates : keys_.KeysFor(ours.levels)) {
    std::string value = first_label(candidates);
    if (value.empty()) {
      values.clear();
      break;
    }
    values.push_back(std::move(value));
  }
  std::optional<std::string> clique;
  if (std::string c = first_label(keys_.clique_labels); !c.empty()) clique = std::move(c);
  if (values.empty() && !clique) return OkStatus();
  // A place the scheduler refused is not asked again until the labels change (a Node is
  // MODIFIED every few seconds by its kubelet's status).
  std::string asked;
  for (const std::string& v : values) asked += v + '\n';
  asked += clique ? "clique " + *clique : "-";
  if (auto it = refused_.find(node.name); it != refused_.end() && it->second == asked) {
    return OkStatus();
  }
  Status st =
      sink_.SetNetwork(node.name, values, clique, "Kubernetes: labels of node " + node.name);
  if (st.ok()) {
    refused_.erase(node.name);
    return st;
  }
  // A refusal is remembered; a failure that may pass (the store unavailable) is asked again.
  if (st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kNotFound) {
    refused_[node.name] = asked;
  }
  // Not the watch's InvalidArgument (a malformed event, which restarts the watch): the event was
  // read; the scheduler said no.
  return FailedPreconditionError("labels of node " + node.name + " not followed: " + st.message());
}

Status NodeReconciler::Deleted(const std::string& name) {
  cordoned_.erase(name);
  std::optional<NodeSink::View> ours = sink_.Node(name);
  if (!ours) {
    ++unknown_;
    return OkStatus();
  }
  if (ours->health == topo::Health::kUnhealthy) return OkStatus();
  return sink_.SetHealth(name, topo::Health::kUnhealthy,
                         "Kubernetes: node " + name + " deleted from the API");
}

Status NodeReconciler::Listed(const std::vector<KubeNode>& nodes) {
  Status st = OkStatus();
  std::set<std::string> present;
  for (const KubeNode& n : nodes) {
    present.insert(n.name);
    Keep(st, Seen(n));
  }
  std::vector<std::string> gone;
  for (const auto& [name, cordoned] : cordoned_) {
    if (!present.count(name)) gone.push_back(name);
  }
  for (const std::string& name : gone) Keep(st, Deleted(name));
  return st;
}

// --- the collections ---

Status NodeTarget::Listed(const std::vector<Json>& items) {
  std::vector<KubeNode> nodes;
  for (const Json& item : items) {
    StatusOr<KubeNode> n = NodeFromJson(item);
    if (!n.ok()) return n.status().WithPrefix("items[]");
    nodes.push_back(std::move(n).value());
  }
  return reconciler_.Listed(nodes);
}

Status NodeTarget::Changed(const std::string& type, const Json& object) {
  ASSIGN_OR_RETURN(KubeNode n, NodeFromJson(object));
  return type == "DELETED" ? reconciler_.Deleted(n.name) : reconciler_.Seen(n);
}

namespace {

struct KubePod {
  PodRef ref;
  std::string phase, scheduler;
};

StatusOr<KubePod> PodFromJson(const Json& obj) {
  if (!obj.is_object()) return InvalidArgumentError("pod: expected an object");
  if (obj.contains("kind") && obj["kind"] != "Pod") {
    return InvalidArgumentError("kind: expected \"Pod\", got " + obj["kind"].dump());
  }
  const Json& meta = obj.contains("metadata") ? obj["metadata"] : Json();
  if (!meta.is_object() || !meta.contains("name") || !meta["name"].is_string()) {
    return InvalidArgumentError("metadata.name: expected a string");
  }
  KubePod p;
  p.ref.name = meta["name"];
  if (meta.contains("namespace") && meta["namespace"].is_string()) {
    p.ref.name_space = meta["namespace"];
  }
  if (meta.contains("uid") && meta["uid"].is_string()) p.ref.uid = meta["uid"];
  if (obj.contains("status") && obj["status"].is_object() && obj["status"].contains("phase") &&
      obj["status"]["phase"].is_string()) {
    p.phase = obj["status"]["phase"];
  }
  if (obj.contains("spec") && obj["spec"].is_object() && obj["spec"].contains("schedulerName") &&
      obj["spec"]["schedulerName"].is_string()) {
    p.scheduler = obj["spec"]["schedulerName"];
  }
  return p;
}

}  // namespace

std::string PodTarget::path() const {
  return "/api/v1/pods?fieldSelector=" +
         httplib::detail::encode_query_param("spec.schedulerName=" + scheduler_name_) + "&";
}

Status PodTarget::Gone(const PodRef& pod, const std::string& why) {
  const std::string key = pod.uid.empty() ? pod.name_space + "/" + pod.name : pod.uid;
  if (!reported_.insert(key).second) return OkStatus();
  Status st = sink_.PodGone(pod, why);
  return st.code() == StatusCode::kNotFound ? OkStatus() : st;
}

Status PodTarget::Listed(const std::vector<Json>& items) {
  Status st = OkStatus();
  std::set<std::string> present;
  for (const Json& item : items) {
    StatusOr<KubePod> p = PodFromJson(item);
    if (!p.ok()) return p.status().WithPrefix("items[]");
    if (!p->scheduler.empty() && p->scheduler != scheduler_name_) continue;
    present.insert(p->ref.name_space + "/" + p->ref.name);
    if (p->phase == "Succeeded" || p->phase == "Failed") {
      Keep(st, Gone(p->ref, "Kubernetes: pod finished (phase " + p->phase + ")"));
    }
  }
  for (const std::string& known : sink_.KnownPods()) {
    if (present.count(known)) continue;
    const size_t slash = known.find('/');
    PodRef ref{known.substr(0, slash), slash == std::string::npos ? "" : known.substr(slash + 1),
               ""};
    Keep(st, Gone(ref, "Kubernetes: pod no longer in the API"));
  }
  return st;
}

Status PodTarget::Changed(const std::string& type, const Json& object) {
  ASSIGN_OR_RETURN(KubePod p, PodFromJson(object));
  if (!p.scheduler.empty() && p.scheduler != scheduler_name_) return OkStatus();
  if (type == "DELETED") return Gone(p.ref, "Kubernetes: pod deleted");
  if (p.phase == "Succeeded" || p.phase == "Failed") {
    return Gone(p.ref, "Kubernetes: pod finished (phase " + p.phase + ")");
  }
  // A pod of that name again (recreated rank): it may be reported when it ends.
  reported_.erase(p.ref.uid.empty() ? p.ref.name_space + "/" + p.ref.name : p.ref.uid);
  return OkStatus();
}

std::vector<std::string> ServicePodSink::KnownPods() {
  std::vector<std::string> pods;
  Extender* e = service_.extender();
  if (e == nullptr) return pods;
  for (const std::string& key : e->GangKeys()) {
    std::optional<GangView> g = e->Gang(key);
    if (!g) continue;
    for (const GangSlotView& s : g->slots) {
      if (!s.pod.empty()) pods.push_back(s.pod);
    }
  }
  return pods;
}

Status ServicePodSink::PodGone(const PodRef& pod, const std::string& why) {
  Json body{{"PodName", pod.name}, {"PodNamespace", pod.name_space}};
  if (!pod.uid.empty()) body["PodUID"] = pod.uid;
  ASSIGN_OR_RETURN(std::string answer, service_.ExtenderCall("pod-deleted", body.dump()));
  const Json a = Json::parse(answer, nullptr, false);
  const std::string err = a.is_object() ? a.value("Error", std::string()) : std::string();
  if (err.find("unknown pod") != std::string::npos) return NotFoundError(err);
  if (!err.empty()) return FailedPreconditionError(err);
  spdlog::info("msg=\"pod gone\" pod={}/{} why=\"{}\"", pod.name_space, pod.name, why);
  return OkStatus();
}

// --- the watcher ---

Status KubeWatchOptions::Validate() const {
  RETURN_IF_ERROR(api.Validate());
  if (watch_timeout_s < 1 || watch_timeout_s > 3600) {
    return InvalidArgumentError("kube watch: watch_timeout_s: must be in [1, 3600]");
  }
  if (backoff_min_ms < 1 || backoff_max_ms < backoff_min_ms || backoff_max_ms > 600000) {
    return InvalidArgumentError(
        "kube watch: backoff: need 1 <= backoff_min_ms <= backoff_max_ms <= 600000");
  }
  if (max_event_bytes < 1024) return InvalidArgumentError("kube watch: max_event_bytes < 1024");
  return OkStatus();
}

StatusOr<std::unique_ptr<KubeWatcher>> KubeWatcher::Start(KubeWatchOptions options,
                                                          std::unique_ptr<WatchTarget> target) {
  RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<KubeWatcher> w(new KubeWatcher(std::move(options), std::move(target)));
  w->thread_ = std::thread([p = w.get()] { p->Loop(); });
  return w;
}

KubeWatcher::~KubeWatcher() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    if (client_ != nullptr) client_->stop();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

KubeWatcher::Stats KubeWatcher::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  Stats s = stats_;
  s.unknown = target_->unknown();
  return s;
}

void KubeWatcher::Fail(const Status& st) {
  spdlog::warn("msg=\"kubernetes node watch\" error=\"{}\"", st.message());
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.errors;
  stats_.last_error = st.message();
}

bool KubeWatcher::Sleep(int ms) {
  std::unique_lock<std::mutex> lk(mu_);
  return !cv_.wait_for(lk, std::chrono::milliseconds(ms), [this] { return stop_.load(); });
}

void KubeWatcher::Loop() {
  int backoff = options_.backoff_min_ms;
  bool need_list = true;
  while (!stop_) {
    if (need_list) {
      Status st = List();
      if (stop_) break;
      if (!st.ok()) {
        Fail(st);
        if (!Sleep(backoff)) break;
        backoff = std::min(backoff * 2, options_.backoff_max_ms);
        continue;
      }
      need_list = false;
      backoff = options_.backoff_min_ms;
    }
    const auto t0 = std::chrono::steady_clock::now();
    bool gone = false;
    Status st = Watch(gone);
    if (stop_) break;
    if (gone) {
      std::lock_guard<std::mutex> lk(mu_);
      ++stats_.gone;
      need_list = true;
      continue;
    }
    if (!st.ok()) {
      Fail(st);
      if (!Sleep(backoff)) break;
      backoff = std::min(backoff * 2, options_.backoff_max_ms);
      continue;
    }
    // A stream that ended at once is not re-opened in a tight loop.
    if (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1) &&
        !Sleep(options_.backoff_min_ms)) {
      break;
    }
  }
}

Status KubeWatcher::List() {
  ASSIGN_OR_RETURN(const std::string token, ReadKubeToken(options_.api));
  std::vector<Json> items;
  std::string cont, rv;
  do {
    std::unique_ptr<httplib::Client> client =
        MakeKubeClient(options_.api, token, options_.api.timeout_ms);
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stop_) return FailedPreconditionError("stopping");
      client_ = client.get();
    }
    std::string path = target_->path() + "limit=500";
    if (!cont.empty()) path += "&continue=" + httplib::detail::encode_query_param(cont);
    httplib::Result res = client->Get(path);
    {
      std::lock_guard<std::mutex> lk(mu_);
      client_ = nullptr;
    }
    if (!res) {
      return Status(StatusCode::kUnavailable,
                    "GET " + options_.api.server + path + ": " + httplib::to_string(res.error()));
    }
    if (res->status != 200) {
      return Status(StatusCode::kUnavailable, "GET " + path + ": HTTP " +
                                                  std::to_string(res->status) + ": " +
                                                  KubeStatusMessage(res->body));
    }
    const Json list = Json::parse(res->body, nullptr, false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
      return InvalidArgumentError("GET " + path + ": not a list (no \"items\" array)");
    }
    for (const Json& item : list["items"]) items.push_back(item);
    const Json& meta = list.contains("metadata") ? list["metadata"] : Json::object();
    cont = meta.is_object() ? meta.value("continue", std::string()) : "";
    if (meta.is_object() && meta.contains("resourceVersion"))
      rv = meta.value("resourceVersion", "");
  } while (!cont.empty());
  if (rv.empty()) {
    return InvalidArgumentError("GET " + target_->path() + ": list without resourceVersion");
  }
  Status st = target_->Listed(items);
  if (!st.ok()) Fail(st);
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.lists;
  stats_.resource_version = rv;
  return OkStatus();
}

Status KubeWatcher::OnLine(std::string_view line) {
  const Json ev = Json::parse(line, nullptr, false);
  if (!ev.is_object() || !ev.contains("type") || !ev["type"].is_string() ||
      !ev.contains("object") || !ev["object"].is_object()) {
    return InvalidArgumentError("watch: malformed event");
  }
  const std::string type = ev["type"];
  const Json& obj = ev["object"];
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.events;
  }
  if (type == "ERROR") {
    if (obj.value("code", 0) == 410) {
      gone_ = true;
      return FailedPreconditionError("410 Gone");
    }
    return Status(StatusCode::kUnavailable,
                  "watch: ERROR event: " + obj.value("message", std::string("(no message)")));
  }
  std::string rv;
  if (obj.contains("metadata") && obj["metadata"].is_object()) {
    rv = obj["metadata"].value("resourceVersion", "");
  }
  Status st = OkStatus();
  if (type == "ADDED" || type == "MODIFIED" || type == "DELETED") {
    st = target_->Changed(type, obj);
    if (st.code() == StatusCode::kInvalidArgument) return st.WithPrefix("watch: " + type);
  } else if (type != "BOOKMARK") {
    return InvalidArgumentError("watch: unknown event type \"" + type + "\"");
  }
  if (!rv.empty()) {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.resource_version = rv;
  }
  if (!st.ok()) Fail(st);  // the scheduler refused a change: logged, the watch goes on
  return OkStatus();
}

Status KubeWatcher::Watch(bool& gone) {
  gone_ = false;
  ASSIGN_OR_RETURN(const std::string token, ReadKubeToken(options_.api));
  std::string rv;
  {
    std::lock_guard<std::mutex> lk(mu_);
    rv = stats_.resource_version;
  }
  // The server ends the watch after timeoutSeconds; reads wait a little longer than that.
  std::unique_ptr<httplib::Client> client =
      MakeKubeClient(options_.api, token, (options_.watch_timeout_s + 30) * 1000);
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) return FailedPreconditionError("stopping");
    client_ = client.get();
    ++stats_.watches;
  }
  const std::string path = target_->path() + "watch=1&allowWatchBookmarks=true&resourceVersion=" +
                           httplib::detail::encode_query_param(rv) +
                           "&timeoutSeconds=" + std::to_string(options_.watch_timeout_s);
  std::string buf;
  Status outcome = OkStatus();
  int http_status = 0;
  httplib::Result res = client->Get(
      path, httplib::Headers{},
      [&](const httplib::Response& r) {
        http_status = r.status;
        return r.status == 200;
      },
      [&](const char* data, size_t n) {
        buf.append(data, n);
        size_t start = 0;
        for (size_t eol; (eol = buf.find('\n', start)) != std::string::npos; start = eol + 1) {
          std::string_view line(buf.data() + start, eol - start);
          if (line.empty()) continue;
          outcome = OnLine(line);
          if (!outcome.ok()) return false;
        }
        buf.erase(0, start);
        if (buf.size() > options_.max_event_bytes) {
          outcome = InvalidArgumentError("watch: an event longer than " +
                                         std::to_string(options_.max_event_bytes) + " bytes");
          return false;
        }
        return true;
      });
  {
    std::lock_guard<std::mutex> lk(mu_);
    client_ = nullptr;
  }
  gone = gone_ || http_status == 410;
  if (gone) return OkStatus();
  if (!outcome.ok()) return outcome;
  if (http_status != 0 && http_status != 200) {
    return Status(StatusCode::kUnavailable,
                  "GET " + path + ": HTTP " + std::to_string(http_status));
  }
  if (!res && res.error() != httplib::Error::Read) {
    return Status(StatusCode::kUnavailable,
                  "GET " + options_.api.server + path + ": " + httplib::to_string(res.error()));
  }
  return OkStatus();
}

}  // namespace toposched::api
