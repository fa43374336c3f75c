// Kubernetes scheduler extender: answers kube-scheduler's filter, prioritize, bind and preempt
// calls (the JSON types of k8s.io/kube-scheduler/extender/v1) so that every pod of a gang lands
// where sched::GangPlacer placed the whole gang. Transport-free: a request body in, a response
// body out; the HTTP server routes POST /extender/<verb> here. Knows nothing of HTTP, sockets,
// the job store or the REST API, and never talks to the Kubernetes API server itself (binding
// goes through an injected PodBinder).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"
#include "sched/cluster_state.h"
#include "sched/gang.h"

namespace toposched::api {

// Where the extender reads gang membership and layout. Keys are looked up in the pod's labels
// first, then in its annotations (see docs/kubernetes.md for the full list and examples).
struct ExtenderOptions {
  // A pod group: name + size (pods). Gang key = "<namespace>/<name>".
  std::string group_name_key = "toposched.io/pod-group";
  std::string group_size_key = "toposched.io/group-size";
  // Rank order of a pod inside its group (0-based), first key found wins. A pod group without
  // one of these gets the lowest free rank in arrival order.
  std::vector<std::string> pod_index_keys = {"toposched.io/pod-index",
                                             "batch.kubernetes.io/job-completion-index",
                                             "apps.kubernetes.io/pod-index"};
  // Kubeflow training operator (PyTorchJob): gang key = "<namespace>/<job-name>"; rank =
  // replica-index for the head replica type (master/chief/launcher), heads + replica-index for
  // workers, heads = the master_replicas_key value (default 1).
  std::string kubeflow_job_key = "training.kubeflow.org/job-name";
  std::string kubeflow_type_key = "training.kubeflow.org/replica-type";
  std::string kubeflow_index_key = "training.kubeflow.org/replica-index";
  std::string master_replicas_key = "toposched.io/master-replicas";
  // Layout and constraint annotations: <prefix>tp, pp, dp, ep, model-params, hidden-size,
  // seq-len, micro-batch, job-constraint, tp-constraint, gpu-model, rdma-required. Any other
  // annotation or label under this prefix is an error (a typo must not pass silently).
  std::string annotation_prefix = "toposched.io/";
  // Extended resource counted as GPUs (container limits, else requests).
  std::string gpu_resource = "nvidia.com/gpu";
  // A reservation whose gang makes no progress (no pod filtered or bound) for this long is
  // released; the gang is placed again on its next pod.
  int64_t reservation_timeout_us = int64_t{300} * 1000 * 1000;
  // Score of the assigned node in prioritize (kube-scheduler's MaxExtenderPriority is 10);
  // every other node gets 0.
  int64_t max_score = 10;
  // InvalidArgument naming the field: empty keys, a prefix not ending in '/', a timeout ≤ 0,
  // max_score outside [1, 10].
  Status Validate() const;
};

// A pod as the API server names it.
struct PodRef {
  std::string name_space;
  std::string name;
  std::string uid;
};

// Creates the Binding object in the API server (the bind verb hands binding over to the
// extender). Implementations must be thread-safe. A non-OK status is returned to kube-scheduler
// as ExtenderBindingResult.Error and nothing is recorded.
class PodBinder {
 public:
  virtual ~PodBinder() = default;
  virtual Status Bind(const PodRef& pod, const std::string& node) = 0;
};

// One rank slot (one pod) of a gang, for inspection.
struct GangSlotView {
  int rank = 0;           // pod rank (replica index order)
  std::string pod;        // "<namespace>/<name>", "" when no pod holds the slot yet
  std::string node;       // reserved or bound node, "" when not placed
  std::vector<int> gpus;  // GPU positions on the node (NodeTopology::gpus)
  bool bound = false;
};

struct GangView {
  std::string key;  // "<namespace>/<group>"
  int size = 0;     // pods
  int gpus_per_pod = 0;
  job::JobSpec spec;  // as placed (normalized)
  std::vector<GangSlotView> slots;
  std::string domain;         // domain of the last placement
  double predicted_ms = 0;    // of the last placement
  std::string last_decision;  // "fit: ..." / "unschedulable: ..." / "unresolvable: ..."
};

// Thread-safe: every call takes one mutex (calls are short: O(candidate nodes) plus one
// GangPlacer::Place for the first pod of a gang). Holds its own ClusterState (the occupancy it
// was given plus every reservation and binding it made); the placer and its cluster must outlive
// it.
//
// Errors: the verbs return InvalidArgument (the server answers 400) for a body that is not the
// verb's JSON type: malformed JSON, an unknown top-level field, a missing Pod, neither Nodes nor
// NodeNames, a GPU quantity that is not a non-negative integer. Problems of a well-formed pod
// (gang size unknown, a bad layout annotation, a pod bigger than any node) are answers, not
// errors: every candidate node goes to FailedAndUnresolvableNodes with the reason, which
// kube-scheduler shows in the pod's events.
class Extender {
 public:
  using Clock = std::function<int64_t()>;  // microseconds, monotonic

  // InvalidArgument for invalid options or a state over another cluster than the placer's.
  // `clock` defaults to std::chrono::steady_clock; `binder` may be null (bind then only
  // records; for tests and for setups where kube-scheduler binds).
  static StatusOr<std::unique_ptr<Extender>> Create(const sched::GangPlacer& placer,
                                                    sched::ClusterState initial,
                                                    ExtenderOptions options = {},
                                                    Clock clock = nullptr,
                                                    PodBinder* binder = nullptr);

  // ExtenderArgs → ExtenderFilterResult. A GPU pod passes exactly its assigned node.
  StatusOr<std::string> Filter(std::string_view body);
  // ExtenderArgs → HostPriorityList: the assigned node max_score, the others 0.
  StatusOr<std::string> Prioritize(std::string_view body);
  // ExtenderBindingArgs → ExtenderBindingResult.
  StatusOr<std::string> Bind(std::string_view body);
  // ExtenderPreemptionArgs → ExtenderPreemptionResult (rule in docs/kubernetes.md).
  StatusOr<std::string> Preempt(std::string_view body);
  // Not a kube-scheduler verb: the pod is gone (deleted, evicted, finished). Body: {"PodUID",
  // "PodName", "PodNamespace"} (UID, or namespace + name). Frees its GPUs. Answers {"Error": ""}
  // or {"Error": "..."} for an unknown pod.
  StatusOr<std::string> PodDeleted(std::string_view body);

  std::optional<GangView> Gang(const std::string& key) const;
  std::vector<std::string> GangKeys() const;
  sched::ClusterState StateSnapshot() const;

  ~Extender();

 private:
  struct Slot;
  struct GangState;
  struct PodInfo;
  struct Candidates;
  struct Assignment;

  Extender(const sched::GangPlacer& placer, sched::ClusterState state, ExtenderOptions options,
           Clock clock, PodBinder* binder);

  int64_t Now() const;
  void SweepExpired(int64_t now_us);
  // The gang of a GPU pod (created on its first pod), or the reason it has none.
  StatusOr<GangState*> GangFor(const PodInfo& pod, int64_t now_us);
  // The slot the pod holds (assigned on first sight), or the reason it gets none.
  StatusOr<int> SlotFor(GangState& gang, const PodInfo& pod);
  // Places every open slot of the gang (one Place call) and reserves their GPUs. `allowed`:
  // when not null, nodes outside it are treated as drained.
  sched::Verdict PlaceOpenSlots(GangState& gang, const std::vector<uint8_t>* allowed);
  void ReleaseOpenSlots(GangState& gang);
  void ReleaseSlot(GangState& gang, int slot);
  Assignment Assign(const PodInfo& pod, const Candidates& cand, int64_t now_us);
  GangView ViewOf(const GangState& g) const;

  const sched::GangPlacer& placer_;
  const topo::Cluster& cluster_;
  ExtenderOptions options_;
  Clock clock_;
  PodBinder* binder_;
  int max_node_gpus_ = 0;

  mutable std::mutex mu_;
  sched::ClusterState state_;
  int64_t next_alloc_id_ = 1;
  std::map<std::string, std::unique_ptr<GangState>> gangs_;
  // Pod id (UID, else "<namespace>/<name>") → gang key.
  std::unordered_map<std::string, std::string> pod_gang_;
};

}  // namespace toposched::api
