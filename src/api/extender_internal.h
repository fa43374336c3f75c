// The Kubernetes extender's own state, shared by the files that implement it (extender_verbs.cc:
// options, ledger, placement, filter and prioritize, views; extender_book.cc: the gangs'
// bookkeeping and its records; extender_bind.cc: bind and pod-deleted; extender_preempt.cc: the
// preemption what-if). Not for use outside src/api/extender*.cc.
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/extender.h"
#include "api/extender_k8s.h"

namespace toposched::api {

// One pod slot (rank) of a gang.
struct Extender::Slot {
  std::string pod_id;    // "" = no pod holds the slot
  std::string pod_name;  // "<namespace>/<name>"
  std::string uid;
  int64_t alloc_id = 0;  // ClusterState allocation of the slot's GPUs, 0 = none
  int node = -1;
  sched::GpuMask gpus;
  bool bound = false;
  // Queued gangs: the start of the job's run the pod was bound for (a later run, or none, makes
  // the binding stale: the pod is evicted).
  int64_t bound_start_us = -1;
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
  int64_t job = 0;  // queued gangs: the gang's job in the owner's queue
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

namespace extender_internal {

inline constexpr const char* kPrefix = "toposched: ";

// GPU positions of a mask as a JSON array.
nlohmann::json GpusJson(const sched::GpuMask& m);
// The job of `open` pods of a gang whose other pods hold GPUs already.
job::JobSpec RemainderSpec(const job::JobSpec& full, int open, int gpus_per_pod);
// Places `open` pods of the gang on `state`; every pod whole on one node.
// The spec a queued gang's job is placed with: the gang's, named after its key, with each pod
// kept whole on one node (a one-pod gang: the job on one node; pods inside TP groups: TP groups
// on one node; otherwise TP widened to lcm(TP, GPUs per pod), as PlacePods does). InvalidArgument
// when no such spec exists on nodes of `max_node_gpus`.
StatusOr<job::JobSpec> QueueSpec(const job::JobSpec& gang, const std::string& key, int pods,
                                 int gpus_per_pod, int max_node_gpus);
sched::Verdict PlacePods(const sched::GangPlacer& placer, const sched::ClusterState& state,
                         const job::JobSpec& spec, int open, int gpus_per_pod, int max_node_gpus);

}  // namespace extender_internal
}  // namespace toposched::api
