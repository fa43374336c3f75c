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
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "state/cluster_state.h"

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
  // The annotation the bind verb writes on the pod, through the Binding itself (the API server
  // copies a Binding's annotations onto its pod), naming the GPUs the gang placement chose for
  // it: their indices on the node (Gpu::index, nvidia-smi's numbering) in rank order, "4,5,6,7".
  // The device plugin (`toposched device-plugin --choice-annotation`) reads it back when the
  // kubelet admits the pod. Ignored when the extender reads a pod's layout keys.
  std::string gpus_annotation_key = "toposched.io/gpus";
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
  // The same Binding carrying `annotations` for the pod (the API server sets them on the pod in
  // the same write that binds it). A binder that cannot carry annotations binds without them
  // (the default): the device plugin then makes its own choice (docs/kubernetes.md).
  virtual Status BindAnnotated(const PodRef& pod, const std::string& node,
                               const std::map<std::string, std::string>& annotations) {
    (void)annotations;
    return Bind(pod, node);
  }
};

// Evicts a pod through the API server (the Eviction subresource, so PodDisruptionBudgets are
// honoured). OK when the pod is gone or going (also when it no longer exists); a non-OK status
// (e.g. a budget refusing it for now) is retried later. Implementations must be thread-safe.
class PodEvictor {
 public:
  virtual ~PodEvictor() = default;
  virtual Status Evict(const PodRef& pod, const std::string& reason) = 0;
};

// The GPU part of an extender record.
struct HoldChange {
  std::vector<int64_t> releases;                           // freed first
  std::vector<std::pair<int64_t, sched::NodeGpus>> holds;  // then taken (id > 0)
};

// A gang's job in its owner's queue, as the extender needs to see it (ExtenderLedger::GangJob).
struct GangJobState {
  enum class Phase { kPending, kRunning, kEnded };
  Phase phase = Phase::kEnded;
  const sched::Placement* placement = nullptr;  // kRunning: valid inside the ledger's Run only
  int64_t started_us = -1;                      // kRunning: when this run started
  std::string why;  // kEnded: the final state (kPending: ExtenderLedger::PendingReason)
};

// Where the extender's GPUs live. Every pod reservation and binding is a *hold*: an allocation
// in an occupancy the extender may share with others (the daemon's scheduler, so that REST jobs
// and pods never get the same GPU). Each change the extender makes is one record: a kind
// ("k8s_reserve", "k8s_bind", "k8s_release") and a JSON payload holding the holds it takes
// ("holds": [{"id", "node", "gpus"}]), the holds it frees ("releases": [id]) and the extender's
// own bookkeeping (gang, ranks, pods); the owner may store the records and hand them back to
// Extender::Restore after a restart. Implementations must be thread-safe in Run.
class ExtenderLedger {
 public:
  virtual ~ExtenderLedger() = default;
  // Runs `fn` with the occupancy locked (no other change of it happens during fn), then returns
  // once every record fn committed is durable. Unavailable when the owner refuses changes or a
  // record could not be stored.
  virtual Status Run(const std::function<void()>& fn) = 0;
  // Inside Run only: the occupancy to place against, its placer (may be a degraded-topology
  // view of the cluster, same nodes), the clock (µs, non-decreasing).
  virtual const sched::ClusterState& state() const = 0;
  virtual const sched::GangPlacer& placer() const = 0;
  virtual int64_t NowUs() = 0;
  // Inside Run only: frees `change.releases`, takes `change.holds` (all or nothing) and keeps
  // the record (`payload` holds the same GPU lists, see ReadHoldChange). InvalidArgument or
  // NotFound (nothing changed) when a hold's GPUs are not free or a release is not held.
  virtual Status Commit(const std::string& kind, const HoldChange& change,
                        const std::string& payload) = 0;
  // False when the ledger keeps no records (Commit then gets an empty payload).
  virtual bool keeps_records() const { return true; }
  // True when the owner queues gangs as jobs (the daemon): a gang is then submitted into the
  // owner's scheduler queue on its first pod (SubmitGang) and holds no GPUs of its own; the
  // queue's priority, fair share, limits, backfill and preemption decide where and when it runs,
  // and its pods go where its job was placed. False (standalone): the extender places gangs
  // itself and keeps their GPUs as holds.
  virtual bool queues_gangs() const { return false; }
  // Inside Run only (queues_gangs): submits the gang's job (sched::SubmitPodGroup, stored like
  // any input), runs a scheduling pass, and returns the job id.
  virtual StatusOr<int64_t> SubmitGang(const std::string& group, const job::JobSpec& spec);
  // Inside Run only (queues_gangs): the job's phase. Cheap: every pass asks it of every gang.
  virtual GangJobState GangJob(int64_t job) const;
  // Inside Run only (queues_gangs): a PENDING job's place in the queue and the scheduler's reason
  // (O(pending jobs): asked only where it is shown).
  virtual std::string PendingReason(int64_t job) const;
  // Inside Run only (queues_gangs): the gang is over; its job completes (`completed`, its pods
  // ran and are gone) or is cancelled. A job already ended is left as it is.
  virtual Status EndGang(int64_t job, bool completed);
  // The allocation id in state() of the hold a HoldChange calls `hold_id` (a what-if that frees
  // a hold in a copy of state() must use this, not the hold id). Default: the hold id as the key.
  virtual sched::AllocId AllocationOf(int64_t hold_id) const {
    return sched::AllocId::FromKey(hold_id);
  }
};
// InvalidArgument naming the field for a payload that is not a record of this shape or names a
// node that is not in `cluster`.
StatusOr<HoldChange> ReadHoldChange(std::string_view payload, const topo::Cluster& cluster);

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
  int64_t job = 0;            // the gang's job in the owner's queue (queued gangs), else 0
};

// Thread-safe: every call runs inside the ledger's Run and takes one mutex (calls are short:
// O(candidate nodes) plus one GangPlacer::Place for the first pod of a gang); the PodBinder is
// called outside both. Standalone (Create with a ClusterState) it owns its ledger: that state
// plus every reservation and binding it made. Shared (CreateShared) its reservations are holds
// in the owner's occupancy. The placer, its cluster and a shared ledger must outlive it.
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

  // Shared: the reservations live in `ledger` (which also gives the placer and the clock).
  // `cluster` is the cluster the ledger's nodes are numbered in (names are looked up there).
  static StatusOr<std::unique_ptr<Extender>> CreateShared(const topo::Cluster& cluster,
                                                          ExtenderLedger& ledger,
                                                          ExtenderOptions options = {},
                                                          PodBinder* binder = nullptr,
                                                          PodEvictor* evictor = nullptr);
  // Rebuilds the gangs from the records a shared ledger stored (time_us, payload), in order,
  // before the first call. The holds themselves are the ledger's to restore. DataLoss for a
  // record that does not fit the gangs built so far.
  // `now_us` (> 0): the restart counts as progress of every restored gang, so that a reservation
  // timeout does not fire at the first sweep for a gang whose last record is old.
  Status Restore(const std::vector<std::pair<int64_t, std::string>>& records, int64_t now_us = 0);
  // The jobs of the queued gangs (ExtenderLedger::queues_gangs), ascending.
  std::vector<int64_t> GangJobIds() const;
  // Hold ids of every reserved or bound slot (sorted): after Restore, exactly the ledger's.
  std::vector<int64_t> HoldIds() const;
  // Releases the reservations of gangs that made no progress for reservation_timeout_us (the
  // verbs do it too; the daemon calls it from its pass loop so idle reservations do not linger).
  Status Sweep();
  // Queued gangs (ExtenderLedger::queues_gangs) only: a pod bound for a run of its gang's job
  // that is over (the job was preempted, requeued after a failure, cancelled, timed out or
  // completed) is evicted through the evictor and its slot freed once that succeeded (without
  // an evictor the slot is freed and a warning logged: nothing can take the pod off its node).
  // A gang whose job ended and that has no bound pod left is forgotten; pods of it that come
  // again queue as a new job. Returns the pods evicted. The daemon calls it after every pass.
  StatusOr<int> Reconcile();

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

  class LocalLedger;

  Extender(const topo::Cluster& cluster, ExtenderLedger& ledger, ExtenderOptions options,
           PodBinder* binder);

  const sched::ClusterState& state() const { return ledger_->state(); }
  void SweepExpired(int64_t now_us);
  // Commits one record (op "reserve", "bind" or "release"; `book` without the hold lists) with
  // the given GPU changes, then applies it to the gangs. Nothing changes on error.
  Status Record(const std::string& op, nlohmann::json book, const HoldChange& change);
  // Applies a record's bookkeeping (live and in Restore).
  Status ApplyBook(const nlohmann::json& book, int64_t time_us);
  // Frees the GPUs of `ranks` (those that hold some); `clear_pods`: the pods of those ranks are
  // gone; `forget`: the gang is dropped afterwards (its GangState is destroyed).
  Status ReleaseRanks(GangState& gang, const std::vector<int>& ranks, bool clear_pods, bool forget,
                      const std::string& decision);
  // The gang of a GPU pod (created on its first pod), or the reason it has none.
  StatusOr<GangState*> GangFor(const PodInfo& pod, int64_t now_us);
  // The slot the pod holds (assigned on first sight), or the reason it gets none.
  StatusOr<int> SlotFor(GangState& gang, const PodInfo& pod);
  // Places every open slot of the gang (one Place call) and reserves their GPUs. `allowed`:
  // when not null, nodes outside it are treated as drained.
  sched::Verdict PlaceOpenSlots(GangState& gang, const std::vector<uint8_t>* allowed);
  Status ReleaseOpenSlots(GangState& gang, const std::string& decision);
  Assignment Assign(const PodInfo& pod, const Candidates& cand, int64_t now_us);
  // Assign for a queued gang (extender_queue.cc): submits its job on the first pod, then answers
  // from the job's phase.
  Assignment AssignQueued(GangState& gang, int slot, const PodInfo& pod, const Candidates& cand);
  // The node and start of the run that slot `slot` of a queued gang belongs to now (-1: the job
  // does not run).
  int QueuedNode(const GangState& gang, int slot, int64_t* started_us) const;
  // The same from a phase already read: the node of rank `slot`'s first GPU (-1: not running).
  static int RankNode(const GangState& gang, int slot, const GangJobState& js);
  // The GPUs of rank `slot` of a queued gang's running job on `node` as the bind verb annotates
  // them ("4,5,6,7"); "" when the placement does not put the whole pod there.
  std::string QueuedChoice(const GangState& gang, int slot, int node) const;
  // What the bind verb checked under the lock before calling the API server (BindChecked).
  struct BindTicket {
    std::string pod;   // "NS/NAME"
    std::string node;  // the node it was bound to
    std::string gang_key;
    int slot = -1;
    int64_t hold = 0;      // a lone gang's reservation checked
    int64_t started = -1;  // queued gangs: the run the pod is bound for
    bool queued = false;   // the pod's gang is a queued one
  };
  // After the API server bound the pod: records the binding when it still holds (the answer
  // in `answer`); `orphan` when its queued gang was forgotten meanwhile (the pod is evicted).
  Status RecordBound(const BindTicket& t, std::string& answer, bool& orphan);
  // "pod NS/NAME" for a lone pod, "gang KEY (N pods x G GPUs)" otherwise: how reasons name it.
  static std::string Who(const GangState& gang, const PodInfo& pod);
  // The reservation timeout for a queued gang (SweepExpired): a job that runs with none of its
  // pods bound for that long is cancelled and the gang forgotten.
  Status ExpireQueued(GangState& gang, int64_t now_us);
  GangView ViewOf(const GangState& g) const;

  const topo::Cluster& cluster_;
  std::unique_ptr<LocalLedger> own_ledger_;  // standalone only
  ExtenderLedger* ledger_;
  ExtenderOptions options_;
  PodBinder* binder_;
  PodEvictor* evictor_ = nullptr;
  int max_node_gpus_ = 0;

  // Taken inside ledger_->Run (order: ledger, then mu_).
  mutable std::mutex mu_;
  int64_t next_alloc_id_ = 1;
  std::map<std::string, std::unique_ptr<GangState>> gangs_;
  // Pod id (UID, else "<namespace>/<name>") → gang key.
  std::unordered_map<std::string, std::string> pod_gang_;
};

}  // namespace toposched::api
