// The daemon's core: one sched::Scheduler driven by the real clock, made durable by a
// store::JobStore. Every input (submit, cancel, complete, scheduling pass, ...) is applied to the
// scheduler under one mutex, then written with what it changed to the store by a committer
// thread that groups concurrent inputs into one transaction; a call returns only once its input
// is committed, and a read returns only once everything it saw is committed, so no client ever
// sees state that a crash could take back. On open, the stored inputs are replayed with their
// recorded clock values through a fresh scheduler (deterministic), and the replayed event log is
// checked against the stored one. Knows nothing of HTTP: the server maps its calls to routes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/extender.h"
#include "core/status.h"
#include "diag/diagnose.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "sched/input.h"
#include "sched/run_time.h"
#include "sched/scheduler.h"
#include "store/job_store.h"
#include "topo/cluster.h"

namespace toposched::api {

// The commit latency histogram's bounds (toposched_commit_seconds): an fsync on a local disk
// takes ~0.1-10 ms, an etcd transaction one raft round (~1 ms on loopback, tens on a WAN).
inline constexpr double kCommitBoundsS[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                            0.025,  0.05,  0.1,    0.25,  1.0};

struct ServiceOptions {
  std::string db_path;  // SQLite file, created when absent
  // Where the cluster came from (the --cluster file), for messages; may be empty.
  std::string cluster_source;
  store::StoreOptions store;
  // The scheduler's options. Wait-or-spread is on: a job that declares its run time
  // (JobSpec::estimate, read by sched::SpecRunTimes) waits for a faster placement when the
  // estimates finish it earlier that way; a job without one is placed as it always was.
  sched::SchedulerOptions scheduler = WaitOrSpread();
  sched::GangPlacerOptions placer;
  // The clock, in µs. Empty: the real clock (system_clock). Values are made non-decreasing.
  std::function<int64_t()> clock_us;
  // A pass runs after each submit/cancel/complete (coalesced: at most one pass per
  // max(min_pass_gap_ms, 2 × the last pass's duration)) and every pass_interval_ms.
  int pass_interval_ms = 1000;
  int min_pass_gap_ms = 5;
  bool background_passes = true;  // false: passes run only when RunPass is called (tests)
  // The Kubernetes scheduler extender on the scheduler's own occupancy: its pod reservations and
  // bindings are holds in the scheduler (REST jobs never get their GPUs, pods never get a job's),
  // stored as inputs like everything else and rebuilt on restart (docs/kubernetes.md).
  bool extender = false;
  ExtenderOptions extender_options;
  PodBinder* binder = nullptr;  // not owned; must outlive the service; null: bind only records
  // Evicts the pods of a gang whose job the queue stopped (not owned; must outlive the service;
  // null: their slots are freed with a warning, see Extender::Reconcile).
  PodEvictor* evictor = nullptr;
  // A hot standby (a replica of a store other daemons write, docs/ha.md): opened from what the
  // store holds, it applies the inputs the leader writes (ApplyReplicated), serves reads, and
  // takes no writes and runs no passes until Promote.
  bool standby = false;
  // Every replayed or replicated input is followed by the scheduler's invariant check (no GPU
  // in two jobs or holds, allocations match placements), a failure naming the input: the store
  // checker (`toposched store check`) proves them over a whole log, not only its end.
  bool check_each_input = false;
  // Per-GPU NVLink bandwidth (GB/s) into the fabric of an NVLink domain that a node's labels name
  // and the cluster model lacks (ReportNetwork); 0: such a domain is refused, naming this.
  double nvlink_gbps = 0;
  Status Validate() const;

 private:
  static sched::SchedulerOptions WaitOrSpread() {
    sched::SchedulerOptions o;
    o.wait_or_spread = true;
    return o;
  }
};

// What a finished job's processes left: how they exited and the end of their log. The daemon
// classifies the log (src/diag) into the job's end (Service::Complete).
struct ExitReport {
  std::optional<int> exit_code;  // the launcher's exit status
  std::optional<int> signal;     // the signal that killed it, 1..64
  std::string log;               // the log's end: NCCL, driver, launcher, framework lines
  std::string node;              // the node the log came from; "" = the job's only node
};

struct ListFilter {
  std::optional<job::JobState> state;
  std::optional<std::string> user, queue, name;
  int64_t after_id = 0;
  int limit = 1000;  // 1..100000
};

// Thread-safe: every public method may be called from any thread.
class Service {
 public:
  using Options = ServiceOptions;

  // The cluster must be finalized and outlive the service. Errors: InvalidArgument for bad
  // options; the store's errors on open; DataLoss when the stored inputs do not replay to the
  // stored event log.
  static StatusOr<std::unique_ptr<Service>> Open(const topo::Cluster& cluster, Options options);
  // The same on a store opened by the caller (an etcd store shared with other daemons);
  // `options.db_path` names it in messages.
  static StatusOr<std::unique_ptr<Service>> Open(const topo::Cluster& cluster, Options options,
                                                 std::unique_ptr<store::JobStore> store);
  ~Service();  // stops the pass thread, commits what is queued

  struct SubmitResult {
    int64_t id = 0;
    bool created = false;  // false: the idempotency key named an existing job
  };
  // `spec_json`: one job spec (docs/jobs.md fields). InvalidArgument for a bad spec or one that
  // names a level the cluster lacks; AlreadyExists when `idem_key` was used for a different
  // spec. An empty key: no idempotency.
  StatusOr<SubmitResult> Submit(const std::string& spec_json, const std::string& idem_key);
  // NotFound / FailedPrecondition as the scheduler says.
  Status Cancel(int64_t id);
  Status Complete(int64_t id);
  // With an exit report: a zero exit without a signal completes the job; anything else ends it
  // FAILED, its reason "exit code N: cause <category>: <summary> (...); fix: ..." from the
  // diagnosis of the log on the node's topology (docs/api.md). A fatal GPU fault in the log
  // (a Xid that calls for a reset or service, a GPU off the bus, an uncorrectable ECC error)
  // first drains the node with that reason. NotFound for an unknown job or node;
  // FailedPrecondition unless the job is running; InvalidArgument for a signal outside 1..64.
  Status Complete(int64_t id, const ExitReport& report);
  // A running job's log, reported while it runs (`report.log`, `report.node`; the exit fields
  // are ignored). Its diagnosis decides: an NCCL transport fallback or a degraded NCCL set-up
  // marks the job degraded and follows its on_degraded (sched::JobDegraded); a fatal GPU fault
  // drains the node. Returns the strongest fault found and what was done, as JSON
  // (docs/api.md). NotFound / FailedPrecondition as Complete.
  StatusOr<std::string> ReportLog(int64_t id, const ExitReport& report);
  // NotFound for an unknown job; FailedPrecondition for a finished one.
  Status SetPriority(int64_t id, int priority);
  // NotFound for an unknown node name.
  Status SetDrained(const std::string& node, bool drained, const std::string& reason);
  // A health report. component: "node", "gpu", "nic" or "nvlink" (the NVLinks of GPU `index`);
  // `index` is the GPU/NIC position on the node (ignored for "node"); health: "healthy",
  // "degraded" or "unhealthy". InvalidArgument / NotFound naming the bad field.
  Status ReportHealth(const std::string& component, const std::string& node, int index,
                      const std::string& health, const std::string& reason);
  // The node's own topology (`toposched agent`), `topology_json` as `topo discover --to json`
  // writes it: replaces the node's profile topology in the scheduler's model
  // (sched::NodeTopologyReport). NotFound for an unknown node; InvalidArgument naming the JSON
  // path of a bad field, or a GPU count that is not the node's.
  Status ReportTopology(const std::string& node, const std::string& topology_json,
                        const std::string& source);
  // A node's place in the network as the Kubernetes API's labels give it
  // (sched::NodeNetworkReport): `level_values` one label value per level of the model, top first
  // (empty: the tree unchanged), `clique` the NVLink clique (nullopt: unchanged; "": none). A
  // value names the model's domain of that name at that level, else the domain
  // "<level>-<value>" (created when the model lacks it: the names `cluster import --kube-nodes`
  // gives); a clique names the NVLink domain of that name, else "nvl-<clique>", created with
  // ServiceOptions::nvlink_gbps. A place the model has already stores nothing. NotFound for an
  // unknown node; InvalidArgument as Scheduler::SetNodeNetwork.
  Status ReportNetwork(const std::string& node, const std::vector<std::string>& level_values,
                       const std::optional<std::string>& clique, const std::string& source);
  // A node's health, drain (and why), GPU count and model, and the model's network levels;
  // nullopt when the cluster has no such node.
  struct NodeStatus {
    topo::Health health = topo::Health::kHealthy;
    bool drained = false;
    int gpus = 0;
    std::string drain_reason;
    std::string gpu_model;            // "" when the model does not name it
    std::vector<std::string> levels;  // the network's levels, top first
  };
  std::optional<NodeStatus> NodeStatusOf(const std::string& node) const;
  // A node's health and whether it is drained; nullopt when the cluster has no such node.
  std::optional<std::pair<topo::Health, bool>> NodeCondition(const std::string& node) const;
  // Tick + one scheduling pass now. Returns the ids started.
  StatusOr<std::vector<int64_t>> RunPass();

  // A Kubernetes extender call: verb "filter", "prioritize", "bind", "preempt" or
  // "pod-deleted", body → answer (Extender's verbs). NotFound when the extender is off or the
  // verb unknown.
  StatusOr<std::string> ExtenderCall(const std::string& verb, const std::string& body);
  // Null when the extender is off, or on a standby.
  Extender* extender() const { return standby_.load() ? nullptr : extender_.get(); }

  // Reads, as JSON text (shapes in docs/api.md).
  StatusOr<std::string> JobJson(int64_t id, bool with_events) const;
  std::string JobsJson(const ListFilter& filter) const;
  StatusOr<std::string> ExplainJson(int64_t id) const;
  std::string NodesJson() const;
  std::string TopologyJson() const;
  // One node's topology as the scheduler uses it, before link health: {"node", "profile",
  // "source" ("" = the profile's, else who reported it), "topology"}. NotFound for an unknown node.
  StatusOr<std::string> NodeTopologyJson(const std::string& node) const;
  // Events after position `after` (0-based count of earlier events); job: "job-7" or empty.
  std::string EventsJson(int64_t after, int limit, const std::string& job) const;
  // Prometheus text exposition format 0.0.4.
  std::string MetricsText() const;

  // A standby: applies stored inputs that follow applied_seq() (the inputs the leader wrote), as
  // a restart replays them; an input at or below applied_seq() is skipped. FailedPrecondition
  // when not a standby; DataLoss when an input does not apply or a seq is missing.
  Status ApplyReplicated(const std::vector<store::InputRecord>& inputs);
  // A standby becomes the leader: the extender is rebuilt from the records applied, passes
  // start, writes are taken. The caller has applied the whole log first.
  Status Promote();
  bool standby() const { return standby_.load(); }

  // Unavailable after a failed commit (the daemon must restart and replay); OK otherwise.
  Status health() const;
  int64_t applied_seq() const;
  int64_t durable_seq() const;
  size_t replayed_inputs() const { return replayed_; }
  const topo::Cluster& cluster() const { return *cluster_; }

  // Checks the scheduler's invariants (no GPU in two jobs or holds, allocations match
  // placements) and that the extender's slots hold exactly the scheduler's holds.
  Status CheckInvariants() const;

 private:
  class Ledger;
  friend class Ledger;
  struct JobInfo {
    std::string pod_group;  // "<namespace>/<name>" for a Kubernetes pod group, else ""
    job::JobSpec spec;
    std::string spec_json;
    std::string idem_key;
    int64_t submit_time_us = 0;
    int priority = 0;
  };
  struct Metrics {
    int64_t placements = 0;
    std::vector<double> latency_bounds_s;
    std::vector<int64_t> latency_buckets;  // per bound, non-cumulative; last = +Inf
    double latency_sum_s = 0;
    int64_t latency_count = 0;
    int64_t passes = 0;
  };

  Service(const topo::Cluster& cluster, Options options);
  int64_t NowLocked();
  // A submit (live or replay) through Scheduler::Apply, plus the daemon's own records of the
  // job (its stored JSON, idempotency key, submit time). In replay `expect_id` is the stored id.
  // `pod_group`: submitted as that Kubernetes pod group (sched::SubmitPodGroup), "" for a job.
  Status ApplySubmit(job::JobSpec spec, const std::string& spec_json, const std::string& key,
                     int64_t now_us, int64_t expect_id, int64_t* id_out,
                     const std::string& pod_group = "");
  // Applies an input other than a submit now and queues its record; returns its seq (0 when a
  // refused input changed nothing: the error is returned instead).
  StatusOr<int64_t> ApplyRecordLocked(const sched::Input& in);
  // Tick + one pass now, recorded when it changed something; returns its seq (0: nothing).
  StatusOr<int64_t> RunPassLocked(std::vector<int64_t>* started);
  // The extender's queue (ExtenderLedger::queues_gangs) under mu_: submit a pod group and run a
  // pass; a gang's job phase; end it.
  StatusOr<int64_t> SubmitGangLocked(const std::string& group, const job::JobSpec& spec);
  GangJobState GangJobLocked(int64_t id) const;
  std::string PendingReasonLocked(int64_t id) const;
  // At open, after Extender::Restore: a live pod group job the extender has no gang for (a crash
  // between its submit and the extender's record) is cancelled, since no pod can reach it.
  Status CancelOrphanPodGroups();
  Status EndGangLocked(int64_t id, bool completed);
  // Applies one input other than a submit at `now_us` through Scheduler::Apply and keeps the
  // daemon's records in step (a job's priority, the placement count): the same code live and
  // in replay.
  StatusOr<sched::Applied> ApplyLocked(const sched::Input& in, int64_t now_us);
  // Replays one stored Kubernetes hold change (kinds "k8s_*").
  Status ReplayK8sLocked(const store::InputRecord& in);
  // Live path for ApplyLocked: stamps the time, applies, records, triggers a pass, waits.
  Status Mutate(sched::Input in);
  // Builds the Change for the input just applied: events since `events_before`, rows of the
  // jobs they touch (and `extra_job`). Queues it for the committer; returns its seq.
  int64_t RecordLocked(store::InputRecord input, size_t events_before, int64_t extra_job);
  Status Replay(const std::vector<store::InputRecord>& inputs);
  // One stored input through the scheduler, as replay and a standby apply it.
  Status ReplayOneLocked(const store::InputRecord& in);
  // The extender rebuilt from the replayed records (at open, or at Promote).
  Status StartExtender();
  // health(), and Unavailable on a standby: the writes of every mutating call.
  Status Writable() const;
  // The database remembers the cluster it was written with (node names in order, GPUs and NICs
  // per node): another one is refused before any replay, naming both. Written when absent.
  Status CheckCluster(bool write_if_absent);
  Status WaitDurable(int64_t seq) const;
  void CommitLoop();
  void PassLoop();
  void TriggerPass();
  std::string JobJsonLocked(int64_t id, bool with_events) const;
  nlohmann::ordered_json RanksJsonLocked(const sched::Placement& p) const;
  nlohmann::ordered_json GpuStateJsonLocked(int node, int gpu) const;
  nlohmann::ordered_json NicHealthJsonLocked(int node) const;
  // Classifies the events the scheduler appended since the last call (diag's
  // InterruptionCategory) into event_category_ and interruptions_.
  void SyncCategoriesLocked() const;
  // Complete and ReportLog: where a running job's report comes from. `node`: the node named
  // (it must be one of the job's), else the job's only node, else -1 (so nothing is drained);
  // `context`: the topology the diagnosis ties network causes to (that node, else the job's
  // first node). NotFound / FailedPrecondition / InvalidArgument as Complete.
  struct ReportSite {
    int node = -1;
    std::optional<diag::NodeContext> context;
  };
  StatusOr<ReportSite> ReportSiteLocked(int64_t id, const ExitReport& r) const;
  // Diagnoses the report's log outside mu_ (a log of up to the body limit takes a while), then
  // takes mu_ again and checks that the job still runs. `lock` must not hold mu_ on entry and
  // holds it on return.
  struct DiagnosedReport {
    diag::Diagnosis diagnosis;
    ReportSite site;
  };
  StatusOr<DiagnosedReport> DiagnoseReport(int64_t id, const ExitReport& r,
                                           std::unique_lock<std::mutex>& lock);
  // Applies `in` as replay will see it (encoded, then decoded: text such as a log's cut
  // multi-byte character reaches the scheduler exactly as the store gives it back).
  StatusOr<int64_t> ApplyStoredFormLocked(const sched::Input& in);
  // The category name of event `i` of the scheduler's log, "" when it is no interruption.
  std::string EventCategoryLocked(size_t i) const;
  // The extender's ledger: runs fn under mu_, then waits for what it stored.
  Status RunLedger(const std::function<void()>& fn);
  // Applies a hold change to the scheduler, all or nothing; `gang` names the holds' owner.
  Status ApplyHoldsLocked(const HoldChange& change, const std::string& gang);
  Status CommitK8sLocked(const std::string& kind, const HoldChange& change,
                         const std::string& payload);

  const topo::Cluster* cluster_;
  Options options_;
  std::unique_ptr<sched::GangPlacer> placer_;
  std::unique_ptr<store::JobStore> store_;
  std::vector<std::string> level_names_;

  // Guarded by mu_: the scheduler and everything derived from it.
  mutable std::mutex mu_;
  std::unique_ptr<sched::Scheduler> sched_;
  // The run times jobs declare (JobSpec::estimate), for wait-or-spread; reads sched_.
  std::unique_ptr<sched::SpecRunTimes> run_times_;
  std::map<int64_t, JobInfo> jobs_;
  std::map<std::string, int64_t> by_key_;
  std::set<std::string> queues_;
  int64_t last_now_us_ = 0;
  int64_t applied_seq_ = 0;
  Metrics metrics_;
  // Per event of the scheduler's log: its interruption category (diag::Category), -1 for none;
  // and the count per category. Derived from the log (so rebuilt by replay), filled lazily.
  mutable std::vector<int8_t> event_category_;
  mutable std::vector<int64_t> interruptions_;
  std::map<int64_t, std::string> hold_gang_;  // live hold id → gang key ("<ns>/<group>")
  // Extender records met in replay (time_us, payload), for Extender::Restore.
  std::vector<std::pair<int64_t, std::string>> k8s_records_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<Extender> extender_;

  // Guarded by qmu_: the commit queue and its outcome.
  mutable std::mutex qmu_;
  mutable std::condition_variable qcv_;         // committer: work to do
  mutable std::condition_variable durable_cv_;  // waiters: durable_seq_ moved
  std::vector<store::Change> queue_;
  int64_t durable_seq_ = 0;
  Status commit_error_;
  // Store appends (one per batch of inputs: group commit) and their latency.
  std::vector<int64_t> commit_buckets_;  // per kCommitBoundsS bound, non-cumulative; last = +Inf
  double commit_sum_s_ = 0;
  int64_t commit_count_ = 0;
  bool stop_commit_ = false;

  // Pass thread.
  std::mutex pmu_;
  std::condition_variable pcv_;
  bool pass_requested_ = false;
  bool stop_passes_ = false;
  // Written by a pass under mu_, read by the pass loop under its own lock (found by TSan).
  std::atomic<int64_t> last_pass_duration_us_{0};

  size_t replayed_ = 0;
  std::atomic<bool> standby_{false};
  std::thread committer_;
  std::thread passer_;
};

}  // namespace toposched::api
