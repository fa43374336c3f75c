// Following the Kubernetes API, not only the extender's calls: list a collection (Nodes, or the
// Pods of this scheduler), then watch it from the list's resourceVersion (with bookmarks),
// re-watch from the last version seen whenever the stream ends, and list again on "410 Gone"
// (the version fell out of the API server's history). Each Node seen is reconciled into the
// scheduler through a NodeSink:
//   - Ready condition False or Unknown → the node is unhealthy (the scheduler's failure reaction
//     requeues, shrinks or fails its jobs per their on_failure); Ready True again → healthy,
//     only where the node is unhealthy (a degraded report from elsewhere stays). Level-triggered:
//     after a restart the scheduler catches up with what happened while it was down.
//   - spec.unschedulable (kubectl cordon) → drained; uncordon → resumed. Edge-triggered: only a
//     change Kubernetes shows (or a node first seen cordoned) drains or resumes, so a node an
//     operator drained through toposched's own API is not resumed by a Node that never was
//     cordoned.
//   - a Node deleted from the API (or missing from a relist) → unhealthy.
//   - GPU Feature Discovery's nvidia.com/gpu.count label (the GPUs NVML sees) other than the
//     cluster model's GPU count → drained, naming both (a GPU off the bus, or a cluster file
//     that does not describe the node); the label agreeing again → resumed, only where that
//     drain is the node's (an operator's or a cordon's drain stays). An uncordon while the
//     count disagrees keeps the node drained for the count.
//   - GPU Feature Discovery's nvidia.com/gpu.product other than the model's GPU model for the
//     node → drained the same way, naming both (compared without case, spaces or dashes; a
//     "-SHARED" suffix of time-slicing is not part of the product; MIG products are not
//     compared); agreeing again → resumed, only where that drain is the node's.
//   - the network tier labels (NodeLabelKeys: one key per level of the model) and the NVLink
//     clique label → the node's place in the model's network (NodeSink::SetNetwork): a node the
//     labels put under another domain, or in another NVLink domain, is moved there in the
//     scheduler's model (new domains included) and its running jobs are re-scored. A node
//     lacking a tier label, or a model level without a key, leaves the tree as it is; a node
//     without a clique label keeps its NVLink domain. Level-triggered: the place is compared with
//     the model's at every event, and only a difference is an input.
// Nodes that the cluster model does not have are counted and otherwise ignored. Each Pod of
// this scheduler that is deleted, or has finished (phase Succeeded or Failed), or is missing from
// a new list while the extender still holds GPUs for it, is reported gone through a PodSink (the
// extender's pod-deleted: its GPUs are freed). Only `main` decides where the API server is
// (kube_client.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "api/extender.h"
#include "api/kube_client.h"
#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::api {

class Service;

// What the reconciler reads of a Node object.
struct KubeNode {
  std::string name;
  std::string resource_version;
  // The Ready condition: "True", "False" or "Unknown" ("Unknown" too when the Node has none yet).
  std::string ready = "Unknown";
  std::string ready_reason, ready_message;
  bool unschedulable = false;
  // metadata.labels["nvidia.com/gpu.count"]; nullopt when absent or not a whole number in
  // [0, 1024].
  std::optional<int> gpu_count;
  // Every label whose value is a string (the API server bounds their size).
  std::map<std::string, std::string> labels;
};

// Which labels give a node's place in the network. Defaults: the keys of Kueue's topology-aware
// scheduling examples and of topograph (docs.nvidia.com/topograph, "Node labels"), and GPU Feature
// Discovery's clique.
struct NodeLabelKeys {
  // The model's level name → the label key of the node's domain at that level. A level not
  // named here takes the keys of `level_labels` whose last segment is its name (the level names
  // `cluster import --kube-nodes` gives), the first the node carries.
  std::map<std::string, std::string> level_keys;
  std::vector<std::string> level_labels = {
      "network.topology.kubernetes.io/datacenter", "network.topology.kubernetes.io/spine",
      "network.topology.kubernetes.io/block",      "network.topology.nvidia.com/core",
      "network.topology.nvidia.com/datacenter",    "network.topology.nvidia.com/spine",
      "network.topology.nvidia.com/block",         "network.topology.nvidia.com/leaf"};
  // Keys naming the node's multi-node NVLink domain; the first present wins.
  std::vector<std::string> clique_labels = {"nvidia.com/gpu.clique",
                                            "network.topology.kubernetes.io/accelerator",
                                            "network.topology.nvidia.com/accelerator"};
  // The candidate keys for each of `levels` (the model's, top first); empty where none applies.
  std::vector<std::vector<std::string>> KeysFor(const std::vector<std::string>& levels) const;
};

// InvalidArgument naming the field for an object that is not a Node of this shape.
StatusOr<KubeNode> ReadKubeNode(std::string_view node_json);

// Where node changes go: the daemon's service (ServiceNodeSink), or a test's recorder.
class NodeSink {
 public:
  virtual ~NodeSink() = default;
  struct View {
    topo::Health health = topo::Health::kHealthy;
    bool drained = false;
    int gpus = -1;                    // the cluster model's GPU count for the node (-1: not known)
    std::string drain_reason;         // while drained
    std::string gpu_model;            // the model's GPU model for the node ("" not known)
    std::vector<std::string> levels;  // the model's network levels, top first
  };
  // nullopt: the cluster model has no node of that name.
  virtual std::optional<View> Node(const std::string& name) = 0;
  virtual Status SetHealth(const std::string& name, topo::Health health,
                           const std::string& reason) = 0;
  virtual Status SetDrained(const std::string& name, bool drained, const std::string& reason) = 0;
  // The node's place as its labels give it: `level_values` one label value per model level, top
  // first (empty: the tree unchanged); `clique` the NVLink clique (nullopt unchanged). A place
  // the model has already changes nothing.
  virtual Status SetNetwork(const std::string& name, const std::vector<std::string>& level_values,
                            const std::optional<std::string>& clique,
                            const std::string& reason) = 0;
};

// The service as a NodeSink (node health reports and drains, stored and replayed like every
// other input).
class ServiceNodeSink : public NodeSink {
 public:
  explicit ServiceNodeSink(Service& service) : service_(service) {}
  std::optional<View> Node(const std::string& name) override;
  Status SetHealth(const std::string& name, topo::Health health,
                   const std::string& reason) override;
  Status SetDrained(const std::string& name, bool drained, const std::string& reason) override;
  Status SetNetwork(const std::string& name, const std::vector<std::string>& level_values,
                    const std::optional<std::string>& clique, const std::string& reason) override;

 private:
  Service& service_;
};

// The rules above, without HTTP. Not thread-safe (the watcher's one thread calls it).
class NodeReconciler {
 public:
  explicit NodeReconciler(NodeSink& sink, NodeLabelKeys keys = {})
      : sink_(sink), keys_(std::move(keys)) {}
  // ADDED or MODIFIED, or one item of a list.
  Status Seen(const KubeNode& node);
  Status Deleted(const std::string& name);
  // A full list: every item is Seen; a node seen before and missing now is Deleted.
  Status Listed(const std::vector<KubeNode>& nodes);
  int64_t unknown_nodes() const { return unknown_; }

 private:
  // The drain (or resume) that GFD's count and product labels call for.
  Status FollowHardwareLabels(const KubeNode& node, const NodeSink::View& ours, bool drained);
  // The place the tier and clique labels give.
  Status FollowNetworkLabels(const KubeNode& node, const NodeSink::View& ours);
  NodeSink& sink_;
  NodeLabelKeys keys_;
  std::map<std::string, bool> cordoned_;        // last spec.unschedulable seen, per node
  std::map<std::string, std::string> refused_;  // node → the place from labels refused last
  int64_t unknown_ = 0;
};

// Where pod ends go: the daemon's extender (ServicePodSink), or a test's recorder.
class PodSink {
 public:
  virtual ~PodSink() = default;
  // Every pod the extender holds a slot for ("<namespace>/<name>").
  virtual std::vector<std::string> KnownPods() = 0;
  // The pod is gone: its GPUs are freed. NotFound when the extender does not know it (not an
  // error for the watcher: most pods of this scheduler end after their gang was forgotten).
  virtual Status PodGone(const PodRef& pod, const std::string& why) = 0;
};

class ServicePodSink : public PodSink {
 public:
  explicit ServicePodSink(Service& service) : service_(service) {}
  std::vector<std::string> KnownPods() override;
  Status PodGone(const PodRef& pod, const std::string& why) override;

 private:
  Service& service_;
};

// One watched collection and what its objects do.
class WatchTarget {
 public:
  virtual ~WatchTarget() = default;
  // "/api/v1/nodes?" or "/api/v1/pods?fieldSelector=...&": the query follows.
  virtual std::string path() const = 0;
  // Every item of a complete list (all pages).
  virtual Status Listed(const std::vector<nlohmann::json>& items) = 0;
  // ADDED, MODIFIED or DELETED.
  virtual Status Changed(const std::string& type, const nlohmann::json& object) = 0;
  virtual int64_t unknown() const { return 0; }
};

// Nodes → NodeReconciler.
class NodeTarget : public WatchTarget {
 public:
  explicit NodeTarget(NodeSink& sink, NodeLabelKeys keys = {})
      : reconciler_(sink, std::move(keys)) {}
  std::string path() const override { return "/api/v1/nodes?"; }
  Status Listed(const std::vector<nlohmann::json>& items) override;
  Status Changed(const std::string& type, const nlohmann::json& object) override;
  int64_t unknown() const override { return reconciler_.unknown_nodes(); }

 private:
  NodeReconciler reconciler_;
};

// The Pods whose spec.schedulerName is `scheduler_name` → PodSink.
class PodTarget : public WatchTarget {
 public:
  PodTarget(PodSink& sink, std::string scheduler_name)
      : sink_(sink), scheduler_name_(std::move(scheduler_name)) {}
  std::string path() const override;
  Status Listed(const std::vector<nlohmann::json>& items) override;
  Status Changed(const std::string& type, const nlohmann::json& object) override;

 private:
  Status Gone(const PodRef& pod, const std::string& why);
  PodSink& sink_;
  std::string scheduler_name_;
  std::set<std::string> reported_;  // uids (or namespace/name) already reported gone
};

struct KubeWatchOptions {
  KubeApiOptions api;
  // The API server ends each watch after this long (timeoutSeconds); the watcher re-watches.
  int watch_timeout_s = 300;
  // Wait after a failed call, doubling up to the maximum (reset by a successful list).
  int backoff_min_ms = 500;
  int backoff_max_ms = 30000;
  // A single watch event (one JSON line) larger than this is refused and the watch restarted.
  size_t max_event_bytes = size_t{4} << 20;
  // Which Node labels give a node's place in the network.
  NodeLabelKeys labels;
  // InvalidArgument naming the field.
  Status Validate() const;
};

// Runs list + watch of one target on its own thread until destroyed.
class KubeWatcher {
 public:
  static StatusOr<std::unique_ptr<KubeWatcher>> Start(KubeWatchOptions options,
                                                      std::unique_ptr<WatchTarget> target);
  static StatusOr<std::unique_ptr<KubeWatcher>> Nodes(KubeWatchOptions options, NodeSink& sink) {
    NodeLabelKeys keys = options.labels;
    return Start(std::move(options), std::make_unique<NodeTarget>(sink, std::move(keys)));
  }
  static StatusOr<std::unique_ptr<KubeWatcher>> Pods(KubeWatchOptions options, PodSink& sink,
                                                     std::string scheduler_name) {
    return Start(std::move(options), std::make_unique<PodTarget>(sink, std::move(scheduler_name)));
  }
  ~KubeWatcher();

  struct Stats {
    int64_t lists = 0;    // successful lists
    int64_t watches = 0;  // watch streams opened
    int64_t events = 0;   // watch events applied (bookmarks included)
    int64_t gone = 0;     // "410 Gone" → relist
    int64_t errors = 0;   // failed calls, malformed events, refused changes
    int64_t unknown = 0;  // objects ignored (Nodes the cluster model does not have)
    std::string resource_version;
    std::string last_error;
  };
  Stats stats() const;

 private:
  KubeWatcher(KubeWatchOptions options, std::unique_ptr<WatchTarget> target)
      : options_(std::move(options)), target_(std::move(target)) {}
  void Loop();
  Status List();
  // OK when the stream ended (re-watch), with `gone` set for 410 Gone (relist).
  Status Watch(bool& gone);
  Status OnLine(std::string_view line);
  void Fail(const Status& st);
  bool Sleep(int ms);  // false when stopping

  KubeWatchOptions options_;
  std::unique_ptr<WatchTarget> target_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;  // guards stats_, client_ (for stop) and the stop wait
  std::condition_variable cv_;
  httplib::Client* client_ = nullptr;  // the call in flight, stopped on destruction
  Stats stats_;
  bool gone_ = false;  // the watch in flight saw 410 Gone (the watcher's thread only)
};

}  // namespace toposched::api
