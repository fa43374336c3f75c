#include "api/service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "api/input_codec.h"
#include "api/json_text.h"
#include "core/time_units.h"
#include "sched/node_network.h"
#include "topo/io/json_io.h"

namespace toposched::api {

namespace {

using json = nlohmann::ordered_json;
using job::JobState;

int64_t RealClockUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "job-17" -> 17; 0 when the text is not a job name.
int64_t IdOfName(const std::string& name) {
  if (name.rfind("job-", 0) != 0) return 0;
  int64_t v = 0;
  for (size_t i = 4; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > std::numeric_limits<int64_t>::max() / 10) return 0;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

}  // namespace

Status ServiceOptions::Validate() const {
  if (db_path.empty()) return InvalidArgumentError("db_path must be set");
  if (!(nvlink_gbps >= 0) || nvlink_gbps > 1e6) {
    return InvalidArgumentError("nvlink_gbps must be in [0, 1000000] GB/s per GPU");
  }
  if (pass_interval_ms < 1 || pass_interval_ms > 3600 * 1000) {
    return InvalidArgumentError("pass_interval_ms must be in [1, 3600000]");
  }
  if (min_pass_gap_ms < 0 || min_pass_gap_ms > 60 * 1000) {
    return InvalidArgumentError("min_pass_gap_ms must be in [0, 60000]");
  }
  RETURN_IF_ERROR(store.Validate());
  RETURN_IF_ERROR(scheduler.Validate());
  if (extender) RETURN_IF_ERROR(extender_options.Validate());
  return placer.Validate();
}

// The extender's reservations as holds in this service's scheduler, stored as inputs.
class Service::Ledger : public ExtenderLedger {
 public:
  explicit Ledger(Service& s) : s_(s) {}
  Status Run(const std::function<void()>& fn) override { return s_.RunLedger(fn); }
  const sched::ClusterState& state() const override { return s_.sched_->cluster_state(); }
  const sched::GangPlacer& placer() const override { return s_.sched_->placer(); }
  int64_t NowUs() override { return s_.NowLocked(); }
  sched::AllocId AllocationOf(int64_t hold_id) const override {
    return sched::Scheduler::HoldAllocationId(hold_id);
  }
  Status Commit(const std::string& kind, const HoldChange& change,
                const std::string& payload) override {
    return s_.CommitK8sLocked(kind, change, payload);
  }
  bool queues_gangs() const override { return true; }
  StatusOr<int64_t> SubmitGang(const std::string& group, const job::JobSpec& spec) override {
    return s_.SubmitGangLocked(group, spec);
  }
  GangJobState GangJob(int64_t job) const override { return s_.GangJobLocked(job); }
  std::string PendingReason(int64_t job) const override { return s_.PendingReasonLocked(job); }
  Status EndGang(int64_t job, bool completed) override { return s_.EndGangLocked(job, completed); }

 private:
  Service& s_;
};

Service::Service(const topo::Cluster& cluster, Options options)
    : cluster_(&cluster), options_(std::move(options)) {
  metrics_.latency_bounds_s = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                               0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
  metrics_.latency_buckets.assign(metrics_.latency_bounds_s.size() + 1, 0);
  commit_buckets_.assign(std::size(kCommitBoundsS) + 1, 0);
  for (const topo::NetworkLevel& l : cluster.levels) level_names_.push_back(l.name);
}

StatusOr<std::unique_ptr<Service>> Service::Open(const topo::Cluster& cluster, Options options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::unique_ptr<store::JobStore> st,
                   store::OpenSqliteStore(options.db_path, options.store));
  return Open(cluster, std::move(options), std::move(st));
}

StatusOr<std::unique_ptr<Service>> Service::Open(const topo::Cluster& cluster, Options options,
                                                 std::unique_ptr<store::JobStore> store) {
  RETURN_IF_ERROR(options.Validate());
  if (!options.clock_us) {
    options.clock_us = RealClockUs;
    options.scheduler.epoch_clock = true;  // explanations print UTC date-times
  }
  std::unique_ptr<Service> s(new Service(cluster, std::move(options)));
  ASSIGN_OR_RETURN(s->placer_, sched::GangPlacer::Create(cluster, s->options_.placer));
  ASSIGN_OR_RETURN(s->sched_, sched::Scheduler::Create(*s->placer_, s->options_.scheduler));
  s->run_times_ = std::make_unique<sched::SpecRunTimes>(*s->sched_);
  s->sched_->SetRunTimeEstimator(s->run_times_.get());
  s->store_ = std::move(store);
  RETURN_IF_ERROR(s->CheckCluster(/*write_if_absent=*/false));
  ASSIGN_OR_RETURN(std::vector<store::InputRecord> inputs, s->store_->ReadInputs());
  RETURN_IF_ERROR(s->Replay(inputs));
  // A database without the fact (new, or written by an earlier build) gets it once its replay
  // matched.
  RETURN_IF_ERROR(s->CheckCluster(/*write_if_absent=*/true));
  s->standby_ = s->options_.standby;
  s->committer_ = std::thread([p = s.get()] { p->CommitLoop(); });
  if (s->options_.standby) return s;  // Promote does the rest
  RETURN_IF_ERROR(s->StartExtender());
  if (s->extender_) RETURN_IF_ERROR(s->CancelOrphanPodGroups());
  if (s->options_.background_passes) s->passer_ = std::thread([p = s.get()] { p->PassLoop(); });
  return s;
}

Status Service::StartExtender() {
  if (options_.extender) {
    ledger_ = std::make_unique<Ledger>(*this);
    ASSIGN_OR_RETURN(extender_,
                     Extender::CreateShared(*cluster_, *ledger_, options_.extender_options,
                                            options_.binder, options_.evictor));
    RETURN_IF_ERROR(
        extender_->Restore(k8s_records_, options_.clock_us()).WithPrefix(options_.db_path));
    std::vector<int64_t> held;
    for (const auto& [id, parts] : sched_->Holds()) held.push_back(id);
    if (extender_->HoldIds() != held) {
      return Status(StatusCode::kDataLoss, options_.db_path + ": the replayed pod reservations (" +
                                               std::to_string(extender_->HoldIds().size()) +
                                               ") differ from the scheduler's holds (" +
                                               std::to_string(held.size()) + ")");
    }
  } else if (!sched_->Holds().empty()) {
    spdlog::warn(
        "msg=\"extender off: {} pod reservations/bindings keep their GPUs until it is on again\"",
        sched_->Holds().size());
  }
  k8s_records_.clear();
  k8s_records_.shrink_to_fit();
  return OkStatus();
}

Status Service::ApplyReplicated(const std::vector<store::InputRecord>& inputs) {
  if (!standby_) return FailedPreconditionError("not a standby: the leader applies its own inputs");
  int64_t applied = 0;
  Status st;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (const store::InputRecord& in : inputs) {
      if (in.seq <= applied_seq_) continue;
      if (in.seq != applied_seq_ + 1) {
        st = Status(StatusCode::kDataLoss,
                    options_.db_path + ": input " + std::to_string(applied_seq_ + 1) +
                        " is missing (the next one read is " + std::to_string(in.seq) + ")");
        break;
      }
      st = ReplayOneLocked(in);
      if (!st.ok()) break;
    }
    applied = applied_seq_;
  }
  // What was applied is durable (the leader wrote it): a read that saw it, between the two
  // locks, waits in WaitDurable and must be woken here, as no commit ever runs on a standby.
  {
    std::lock_guard<std::mutex> lk(qmu_);
    durable_seq_ = std::max(durable_seq_, applied);
  }
  durable_cv_.notify_all();
  return st;
}

Status Service::Promote() {
  if (!standby_) return FailedPreconditionError("already the leader");
  {
    // Reads run meanwhile; the extender is made before anything can call it.
    std::lock_guard<std::mutex> lk(mu_);
    RETURN_IF_ERROR(StartExtender());
  }
  standby_ = false;
  if (extender_) RETURN_IF_ERROR(CancelOrphanPodGroups());
  if (options_.background_passes) passer_ = std::thread([this] { PassLoop(); });
  return OkStatus();
}

Status Service::Writable() const {
  if (standby_) {
    return Status(StatusCode::kUnavailable, "this daemon is a standby: writes go to the leader");
  }
  Status h = health();
  if (h.ok()) return h;
  // After a failed commit every write is refused as the ones it failed were (WaitDurable): 503,
  // for its client to retry (a fenced leader steps down; its clients retry on the new one).
  return Status(StatusCode::kUnavailable, "not committed: " + h.message());
}

Service::~Service() {
  {
    std::lock_guard<std::mutex> lk(pmu_);
    stop_passes_ = true;
  }
  pcv_.notify_all();
  if (passer_.joinable()) passer_.join();
  {
    std::lock_guard<std::mutex> lk(qmu_);
    stop_commit_ = true;
  }
  qcv_.notify_all();
  if (committer_.joinable()) committer_.join();
  // run_times_ goes before sched_ (declared after it): the scheduler must not keep it.
  if (sched_) sched_->SetRunTimeEstimator(nullptr);
}

int64_t Service::NowLocked() {
  last_now_us_ = std::max(last_now_us_, options_.clock_us());
  return last_now_us_;
}

Status Service::ApplySubmit(job::JobSpec spec, const std::string& spec_json, const std::string& key,
                            int64_t now_us, int64_t expect_id, int64_t* id_out,
                            const std::string& pod_group) {
  JobInfo info;
  info.pod_group = pod_group;
  info.spec = spec;
  info.spec_json = spec_json;
  info.idem_key = key;
  info.submit_time_us = now_us;
  info.priority = spec.priority;
  sched::Input in{sched::SubmitJob{}};
  if (pod_group.empty()) {
    std::get<sched::SubmitJob>(in).spec = std::move(spec);
  } else {
    in.emplace<sched::SubmitPodGroup>();
    std::get<sched::SubmitPodGroup>(in).spec = std::move(spec);
    std::get<sched::SubmitPodGroup>(in).group = pod_group;
  }
  ASSIGN_OR_RETURN(sched::Applied a, sched_->Apply(in, now_us));
  const int64_t id = a.job.value;
  if (expect_id != 0 && id != expect_id) {
    return Status(StatusCode::kDataLoss, "replay gave job id " + std::to_string(id) +
                                             ", the store says " + std::to_string(expect_id));
  }
  queues_.insert(info.spec.queue);
  if (!key.empty()) by_key_[key] = id;
  jobs_.emplace(id, std::move(info));
  *id_out = id;
  return OkStatus();
}

int64_t Service::RecordLocked(store::InputRecord input, size_t events_before, int64_t extra_job) {
  store::Change c;
  input.seq = ++applied_seq_;
  c.input = std::move(input);
  const std::vector<job::JobEvent>& log = sched_->Events();
  std::set<int64_t> touched;
  if (extra_job != 0) touched.insert(extra_job);
  for (size_t i = events_before; i < log.size(); ++i) {
    c.events.push_back(log[i]);
    touched.insert(IdOfName(log[i].job_id));
  }
  for (int64_t id : touched) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    const JobInfo& ji = it->second;
    std::optional<JobState> st = sched_->State(JobId{id});
    const job::JobSpec* cur = sched_->Spec(JobId{id});
    c.jobs.push_back({id, ji.spec.name, ji.spec.user, ji.spec.queue, ji.priority,
                      st ? job::JobStateName(*st) : "UNKNOWN",
                      cur != nullptr ? cur->total_gpus : ji.spec.total_gpus, ji.submit_time_us,
                      ji.idem_key, ji.spec_json});
  }
  const int64_t seq = c.input.seq;
  {
    std::lock_guard<std::mutex> lk(qmu_);
    queue_.push_back(std::move(c));
  }
  qcv_.notify_one();
  return seq;
}

namespace {

// What a database's inputs refer to: node names in order, GPU and NIC positions per node.
json ClusterIdentity(const topo::Cluster& c) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits
  auto mix = [&h](const std::string& s) {
    for (unsigned char ch : s) {
      h ^= ch;
      h *= 1099511628211ull;
    }
    h ^= 0xff;
    h *= 1099511628211ull;
  };
  int gpus = 0;
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const topo::NodeTopology& t = c.topology(static_cast<int>(n));
    mix(c.nodes[n].name);
    mix(std::to_string(t.gpus.size()) + "/" + std::to_string(t.nics.size()));
    gpus += static_cast<int>(t.gpus.size());
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return json{{"name", c.name},
              {"nodes", static_cast<int64_t>(c.nodes.size())},
              {"gpus", gpus},
              {"fingerprint", hex}};
}

std::string Described(const json& id) {
  return "\"" + id.value("name", std::string("?")) + "\" (" +
         std::to_string(id.value("nodes", int64_t{0})) + " nodes, " +
         std::to_string(id.value("gpus", 0)) + " GPUs)";
}

}  // namespace

Status Service::CheckCluster(bool write_if_absent) {
  const json mine = ClusterIdentity(*cluster_);
  ASSIGN_OR_RETURN(std::optional<std::string> stored, store_->GetMeta("cluster"));
  if (!stored) {
    return write_if_absent ? store_->PutMeta("cluster", Dump(mine)) : OkStatus();
  }
  const json theirs = json::parse(*stored, nullptr, false);
  if (theirs.is_object() && theirs.value("fingerprint", "") == mine.value("fingerprint", "")) {
    return OkStatus();
  }
  const std::string from =
      options_.cluster_source.empty() ? "" : " from " + options_.cluster_source;
  return FailedPreconditionError(
      options_.db_path + " was written with the cluster " +
      (theirs.is_object() ? Described(theirs) : std::string("(unreadable)")) +
      "; this daemon was started with the cluster " + Described(mine) + from +
      ", whose nodes differ (names, order, GPUs or NICs): start it with the cluster file the "
      "database was written with, or give another --db");
}

Status Service::ReplayOneLocked(const store::InputRecord& in) {
  const std::string where = "input " + std::to_string(in.seq) + " (" + in.kind + ")";
  Status st = OkStatus();
  if (in.kind.rfind("k8s_", 0) == 0) {
    RETURN_IF_ERROR(ReplayK8sLocked(in));
  } else {
    ASSIGN_OR_RETURN(sched::Input input, DecodeInput(in, *cluster_));
    if (auto* submit = std::get_if<sched::SubmitJob>(&input)) {
      int64_t id = 0;
      st =
          ApplySubmit(std::move(submit->spec), in.payload, in.idem_key, in.time_us, in.job_id, &id);
      if (!st.ok()) return Status(StatusCode::kDataLoss, where + ": " + st.message());
    } else if (auto* group = std::get_if<sched::SubmitPodGroup>(&input)) {
      int64_t id = 0;
      const std::string canon = job::JobSpecToJson(group->spec, -1);
      st = ApplySubmit(std::move(group->spec), canon, "", in.time_us, in.job_id, &id, group->group);
      if (!st.ok()) return Status(StatusCode::kDataLoss, where + ": " + st.message());
    } else {
      st = ApplyLocked(input, in.time_us).status();
    }
  }
  // A refused input is never stored; one that changed something and still reported an error
  // is replayed the same way, and the event comparison of Replay is the judge.
  if (!st.ok()) spdlog::warn("replay {}: {}", where, st.message());
  last_now_us_ = std::max(last_now_us_, in.time_us);
  applied_seq_ = in.seq;
  if (options_.check_each_input) {
    if (Status inv = sched_->CheckInvariants(); !inv.ok()) {
      return Status(StatusCode::kDataLoss,
                    options_.db_path + ": after " + where + ": " + inv.message());
    }
  }
  return OkStatus();
}

Status Service::Replay(const std::vector<store::InputRecord>& inputs) {
  std::lock_guard<std::mutex> lk(mu_);
  for (const store::InputRecord& in : inputs) RETURN_IF_ERROR(ReplayOneLocked(in));
  durable_seq_ = applied_seq_;
  replayed_ = inputs.size();
  // Only the events of the inputs replayed: a shared store may have grown since they were read.
  ASSIGN_OR_RETURN(std::vector<job::JobEvent> stored, store_->EventsThrough(applied_seq_));
  const std::vector<job::JobEvent>& log = sched_->Events();
  // The first event that differs names where replay and the stored history part.
  for (size_t i = 0; i < std::min(log.size(), stored.size()); ++i) {
    if (!(stored[i] == log[i])) {
      return Status(StatusCode::kDataLoss, options_.db_path + ": event " + std::to_string(i) +
                                               " differs after replay: stored \"" +
                                               job::FormatEvent(stored[i]) + "\", replayed \"" +
                                               job::FormatEvent(log[i]) + "\"");
    }
  }
  if (stored.size() != log.size()) {
    return Status(StatusCode::kDataLoss,
                  options_.db_path + ": replay gave " + std::to_string(log.size()) +
                      " events, the store has " + std::to_string(stored.size()));
  }
  RETURN_IF_ERROR(sched_->CheckInvariants());
  return OkStatus();
}

Status Service::WaitDurable(int64_t seq) const {
  std::unique_lock<std::mutex> lk(qmu_);
  durable_cv_.wait(lk, [&] { return durable_seq_ >= seq || !commit_error_.ok(); });
  if (durable_seq_ >= seq) return OkStatus();
  return Status(StatusCode::kUnavailable, "not committed: " + commit_error_.message());
}

void Service::CommitLoop() {
  std::vector<store::Change> batch;
  std::unique_lock<std::mutex> lk(qmu_);
  while (true) {
    qcv_.wait(lk, [&] { return stop_commit_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping and drained
    batch.clear();
    batch.swap(queue_);
    lk.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    Status st = commit_error_.ok() ? store_->Append(batch) : commit_error_;
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lk.lock();
    if (st.ok()) {
      size_t b = 0;
      while (b < std::size(kCommitBoundsS) && secs > kCommitBoundsS[b]) ++b;
      ++commit_buckets_[b];
      commit_sum_s_ += secs;
      ++commit_count_;
      durable_seq_ = batch.back().input.seq;
    } else if (commit_error_.ok()) {
      commit_error_ = st;
      spdlog::error("commit failed, refusing further changes: {}", st.ToString());
    }
    durable_cv_.notify_all();
  }
}

void Service::TriggerPass() {
  if (!options_.background_passes) return;
  {
    std::lock_guard<std::mutex> lk(pmu_);
    pass_requested_ = true;
  }
  pcv_.notify_one();
}

void Service::PassLoop() {
  std::unique_lock<std::mutex> lk(pmu_);
  while (!stop_passes_) {
    pcv_.wait_for(lk, std::chrono::milliseconds(options_.pass_interval_ms),
                  [&] { return stop_passes_ || pass_requested_; });
    if (stop_passes_) break;
    pass_requested_ = false;
    lk.unlock();
    StatusOr<std::vector<int64_t>> r = RunPass();
    if (!r.ok()) spdlog::error("scheduling pass failed: {}", r.status().ToString());
    // Idle pod reservations expire even when kube-scheduler sends nothing.
    if (extender_ && r.ok()) {
      if (Status st = extender_->Sweep(); !st.ok()) {
        spdlog::error("extender sweep failed: {}", st.ToString());
      }
      // Pods of gangs whose job the pass stopped leave their nodes.
      if (StatusOr<int> ev = extender_->Reconcile(); !ev.ok()) {
        spdlog::error("extender reconcile failed: {}", ev.status().ToString());
      }
    }
    lk.lock();
    // Coalesce triggered passes so that passes take at most about a third of the lock's time.
    const int64_t gap_us = std::max<int64_t>(int64_t{options_.min_pass_gap_ms} * 1000,
                                             2 * last_pass_duration_us_.load());
    pcv_.wait_for(lk, std::chrono::microseconds(gap_us), [&] { return stop_passes_; });
  }
}

Status Service::health() const {
  std::lock_guard<std::mutex> lk(qmu_);
  return commit_error_;
}

int64_t Service::applied_seq() const {
  std::lock_guard<std::mutex> lk(mu_);
  return applied_seq_;
}

int64_t Service::durable_seq() const {
  std::lock_guard<std::mutex> lk(qmu_);
  return durable_seq_;
}

StatusOr<Service::SubmitResult> Service::Submit(const std::string& spec_json,
                                                const std::string& idem_key) {
  if (idem_key.size() > 256) {
    return InvalidArgumentError("idempotency key longer than 256 bytes");
  }
  ASSIGN_OR_RETURN(job::JobSpec parsed, job::ParseJobJson(spec_json, "request body"));
  RETURN_IF_ERROR(parsed.ValidateAgainstLevels(level_names_));
  // The stored form is the canonical JSON, and the job is submitted from its parse, so that the
  // live run and a replay see the very same spec.
  const std::string canon = job::JobSpecToJson(parsed, -1);
  ASSIGN_OR_RETURN(job::JobSpec spec, job::ParseJobJson(canon, "canonical spec"));
  RETURN_IF_ERROR(Writable());
  SubmitResult r;
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = idem_key.empty() ? by_key_.end() : by_key_.find(idem_key);
    if (it != by_key_.end()) {
      const JobInfo& ji = jobs_.at(it->second);
      if (ji.spec_json != canon) {
        return Status(StatusCode::kAlreadyExists,
                      "idempotency key \"" + idem_key + "\" was used for job-" +
                          std::to_string(it->second) + " with a different spec");
      }
      r = {it->second, false};
      seq = applied_seq_;
    } else {
      const int64_t now = NowLocked();
      const size_t before = sched_->Events().size();
      store::InputRecord rec = EncodeInput(sched::SubmitJob{spec}, *cluster_, canon);
      RETURN_IF_ERROR(ApplySubmit(std::move(spec), canon, idem_key, now, 0, &r.id));
      r.created = true;
      rec.time_us = now;
      rec.job_id = r.id;
      rec.idem_key = idem_key;
      seq = RecordLocked(std::move(rec), before, r.id);
    }
  }
  if (r.created) TriggerPass();
  RETURN_IF_ERROR(WaitDurable(seq));
  return r;
}

Status Service::ApplyHoldsLocked(const HoldChange& change, const std::string& gang) {
  std::vector<std::pair<int64_t, std::vector<sched::NodeGpus>>> released;
  std::vector<int64_t> taken;
  Status st;
  for (int64_t id : change.releases) {
    auto it = sched_->Holds().find(id);
    if (it == sched_->Holds().end()) {
      st = NotFoundError("hold " + std::to_string(id) + " not found");
      break;
    }
    released.emplace_back(id, it->second);
    st = sched_->ReleaseHold(id);
    if (!st.ok()) break;
  }
  for (size_t i = 0; st.ok() && i < change.holds.size(); ++i) {
    st = sched_->Hold(change.holds[i].first, {change.holds[i].second});
    if (st.ok()) taken.push_back(change.holds[i].first);
  }
  if (!st.ok()) {  // all or nothing
    for (int64_t id : taken) (void)sched_->ReleaseHold(id);
    for (const auto& [id, parts] : released) (void)sched_->Hold(id, parts);
    return st;
  }
  for (int64_t id : change.releases) hold_gang_.erase(id);
  for (const auto& [id, part] : change.holds) hold_gang_[id] = gang;
  return OkStatus();
}

Status Service::CommitK8sLocked(const std::string& kind, const HoldChange& change,
                                const std::string& payload) {
  const int64_t now = NowLocked();
  const json p = json::parse(payload, nullptr, false);
  RETURN_IF_ERROR(ApplyHoldsLocked(change, p.is_object() ? p.value("gang", "") : ""));
  (void)RecordLocked({0, kind, now, 0, "", payload}, sched_->Events().size(), 0);
  return OkStatus();
}

Status Service::RunLedger(const std::function<void()>& fn) {
  RETURN_IF_ERROR(Writable());
  int64_t before = 0, seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    before = applied_seq_;
    fn();
    seq = applied_seq_;
  }
  // GPUs freed by the extender may let a waiting job start.
  if (seq != before) TriggerPass();
  return WaitDurable(seq);
}

StatusOr<std::string> Service::ExtenderCall(const std::string& verb, const std::string& body) {
  if (!extender_) return NotFoundError("the Kubernetes extender is off (serve --no-extender)");
  if (verb == "filter") return extender_->Filter(body);
  if (verb == "prioritize") return extender_->Prioritize(body);
  if (verb == "bind") return extender_->Bind(body);
  if (verb == "preempt") return extender_->Preempt(body);
  if (verb == "pod-deleted") return extender_->PodDeleted(body);
  return NotFoundError("no extender verb \"" + verb + "\"");
}

Status Service::ReplayK8sLocked(const store::InputRecord& in) {
  // Only met in replay: live extender records are applied by CommitK8sLocked.
  const std::string where = "input " + std::to_string(in.seq) + " (" + in.kind + ")";
  StatusOr<HoldChange> c = ReadHoldChange(in.payload, *cluster_);
  if (!c.ok()) return Status(StatusCode::kDataLoss, where + ": " + c.status().message());
  const json p = json::parse(in.payload, nullptr, false);
  Status st = ApplyHoldsLocked(*c, p.value("gang", ""));
  if (!st.ok()) return Status(StatusCode::kDataLoss, where + ": " + st.message());
  k8s_records_.emplace_back(in.time_us, in.payload);
  return OkStatus();
}

StatusOr<sched::Applied> Service::ApplyLocked(const sched::Input& in, int64_t now_us) {
  ASSIGN_OR_RETURN(sched::Applied a, sched_->Apply(in, now_us));
  if (const auto* p = std::get_if<sched::SetJobPriority>(&in)) {
    jobs_.at(p->job.value).priority = p->priority;
  }
  metrics_.placements += static_cast<int64_t>(a.started.size());
  return a;
}

StatusOr<int64_t> Service::ApplyRecordLocked(const sched::Input& in) {
  store::InputRecord rec = EncodeInput(in, *cluster_);
  rec.time_us = NowLocked();
  const size_t before = sched_->Events().size();
  Status st = ApplyLocked(in, rec.time_us).status();
  // A refused input changed nothing and is not stored.
  if (!st.ok() && sched_->Events().size() == before) return st;
  const int64_t job = rec.job_id;
  return RecordLocked(std::move(rec), before, job);
}

Status Service::Mutate(sched::Input in) {
  RETURN_IF_ERROR(Writable());
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    ASSIGN_OR_RETURN(seq, ApplyRecordLocked(in));
  }
  TriggerPass();
  return WaitDurable(seq);
}

StatusOr<int64_t> Service::SubmitGangLocked(const std::string& group, const job::JobSpec& spec) {
  RETURN_IF_ERROR(spec.ValidateAgainstLevels(level_names_));
  // As a REST submit: the job is applied from the parse of its canonical JSON, so that a replay
  // (which reads that JSON back) sees the very same spec.
  const std::string canon = job::JobSpecToJson(spec, -1);
  ASSIGN_OR_RETURN(job::JobSpec parsed, job::ParseJobJson(canon, "pod group " + group));
  const int64_t now = NowLocked();
  const size_t before = sched_->Events().size();
  store::InputRecord rec = EncodeInput(sched::SubmitPodGroup{parsed, group}, *cluster_);
  int64_t id = 0;
  RETURN_IF_ERROR(ApplySubmit(std::move(parsed), canon, "", now, 0, &id, group));
  rec.time_us = now;
  rec.job_id = id;
  (void)RecordLocked(std::move(rec), before, id);
  // A pass now, so that the pod that brought the gang is answered with its place when it fits.
  // The job is stored already: a failed pass is logged, and the next one decides.
  if (Status ps = RunPassLocked(nullptr).status(); !ps.ok()) {
    spdlog::error("msg=\"pass after queueing pod group {} failed\" error=\"{}\"", group,
                  ps.message());
  }
  return id;
}

Status Service::CancelOrphanPodGroups() {
  const std::vector<int64_t> tracked = extender_->GangJobIds();
  std::vector<int64_t> orphans;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto& [id, info] : jobs_) {
      const std::optional<JobState> st = sched_->State(JobId{id});
      if (info.pod_group.empty() || !st || job::IsFinal(*st)) continue;
      if (!std::binary_search(tracked.begin(), tracked.end(), id)) orphans.push_back(id);
    }
  }
  for (int64_t id : orphans) {
    // Stored before a crash took the extender's record of it: no pod can reach it any more.
    spdlog::warn(
        "msg=\"pod group job without its gang record (stopped between the two): "
        "cancelled; its pods queue it again\" job=job-{} pod_group={}",
        id, jobs_.at(id).pod_group);
    int64_t seq = 0;
    {
      std::lock_guard<std::mutex> lk(mu_);
      ASSIGN_OR_RETURN(seq, ApplyRecordLocked(sched::CancelJob{JobId{id}}));
    }
    RETURN_IF_ERROR(WaitDurable(seq));
  }
  return OkStatus();
}

std::string Service::PendingReasonLocked(int64_t id) const {
  const auto pos = sched_->QueuePosition(JobId{id});
  const job::JobSpec* spec = sched_->Spec(JobId{id});
  StatusOr<std::string> ex = sched_->Explain(JobId{id});
  std::string reason = ex.ok() ? *ex : std::string();
  const std::string head = "job-" + std::to_string(id) + " PENDING: ";
  if (reason.rfind(head, 0) == 0) reason = reason.substr(head.size());
  return "position " + std::to_string(pos ? pos->first : 0) + " of " +
         std::to_string(pos ? pos->second : 0) + " in the queue (queue " +
         (spec ? spec->queue : std::string("?")) + ", priority " +
         std::to_string(spec ? spec->priority : 0) + "): " + reason;
}

GangJobState Service::GangJobLocked(int64_t id) const {
  GangJobState out;
  const std::optional<JobState> st = sched_->State(JobId{id});
  if (!st) {
    out.why = "job-" + std::to_string(id) + " is unknown";
    return out;
  }
  if (*st == JobState::kPending) {
    out.phase = GangJobState::Phase::kPending;
    return out;
  }
  const sched::Placement* p = sched_->PlacementOf(JobId{id});
  if (*st == JobState::kRunning && p != nullptr) {
    out.phase = GangJobState::Phase::kRunning;
    out.placement = p;
    out.started_us = sched_->StartedUs(JobId{id}).value_or(-1);
    return out;
  }
  out.why = job::JobStateName(*st);
  return out;
}

Status Service::EndGangLocked(int64_t id, bool completed) {
  const std::optional<JobState> st = sched_->State(JobId{id});
  if (!st || job::IsFinal(*st)) return OkStatus();
  if (completed && *st == JobState::kRunning) {
    return ApplyRecordLocked(sched::CompleteJob{JobId{id}, {}}).status();
  }
  return ApplyRecordLocked(sched::CancelJob{JobId{id}}).status();
}

Status Service::Cancel(int64_t id) { return Mutate(sched::CancelJob{JobId{id}}); }

Status Service::Complete(int64_t id) { return Mutate(sched::CompleteJob{JobId{id}, {}}); }

Status Service::SetPriority(int64_t id, int priority) {
  return Mutate(sched::SetJobPriority{JobId{id}, priority});
}

Status Service::SetDrained(const std::string& node, bool drained, const std::string& reason) {
  const int n = cluster_->FindNode(node);
  if (n < 0) return NotFoundError("no node \"" + node + "\"");
  return Mutate(sched::DrainNode{n, drained, reason});
}

Status Service::ReportHealth(const std::string& component, const std::string& node, int index,
                             const std::string& health, const std::string& reason) {
  const int n = cluster_->FindNode(node);
  if (n < 0) return NotFoundError("node: no node \"" + node + "\"");
  ASSIGN_OR_RETURN(sched::HealthTarget target, sched::ParseHealthTarget(component));
  StatusOr<topo::Health> h = topo::ParseHealth(health);
  if (!h.ok()) return h.status().WithPrefix("health");
  if (index < 0) return InvalidArgumentError("index: must be >= 0");
  return Mutate(sched::HealthReport{target, n, index, *h, reason});
}

Status Service::ReportTopology(const std::string& node, const std::string& topology_json,
                               const std::string& source) {
  const int n = cluster_->FindNode(node);
  if (n < 0) return NotFoundError("node: no node \"" + node + "\"");
  ASSIGN_OR_RETURN(topo::NodeTopology t,
                   topo::io::TopologyFromJson(topology_json, "request body: topology"));
  return Mutate(sched::NodeTopologyReport{n, std::move(t), source});
}

std::optional<Service::NodeStatus> Service::NodeStatusOf(const std::string& node) const {
  const int n = cluster_->FindNode(node);
  if (n < 0) return std::nullopt;
  std::lock_guard<std::mutex> lk(mu_);
  const sched::ClusterState& cs = sched_->cluster_state();
  const topo::NodeTopology& t = sched_->placer().cluster().topology(n);
  NodeStatus out{cs.NodeHealth(n),           cs.NodeDrained(n),      cs.GpuCount(n),
                 sched_->NodeDrainReason(n), sched::NodeGpuModel(t), {}};
  for (const topo::NetworkLevel& l : cluster_->levels) out.levels.push_back(l.name);
  return out;
}

Status Service::ReportNetwork(const std::string& node, const std::vector<std::string>& level_values,
                              const std::optional<std::string>& clique, const std::string& source) {
  const int n = cluster_->FindNode(node);
  if (n < 0) return NotFoundError("node: no node \"" + node + "\"");
  sched::NodeNetworkReport r;
  r.node = n;
  r.source = source;
  {
    std::lock_guard<std::mutex> lk(mu_);
    const topo::Cluster& c = sched_->placer().cluster();
    if (!level_values.empty()) {
      if (level_values.size() != c.levels.size()) {
        return InvalidArgumentError(
            std::to_string(level_values.size()) + " network tier values for node \"" + node +
            "\", the model has " + std::to_string(c.levels.size()) + " levels");
      }
      for (size_t l = 0; l < c.levels.size(); ++l) {
        const int d = c.FindDomain(level_values[l]);
        r.domains.push_back(d >= 0 && c.domains[d].level == static_cast<int>(l)
                                ? level_values[l]
                                : c.levels[l].name + "-" + level_values[l]);
      }
    }
    if (clique) {
      std::string name;
      if (!clique->empty()) {
        name = sched::FindNvlinkDomain(c, *clique) >= 0 ? *clique : "nvl-" + *clique;
      }
      r.nvlink_domain = name;
      r.nvlink_gbps = options_.nvlink_gbps;
    }
    if (sched::AtPlace(r, sched::NetworkPlaceOf(c, n))) {
      return OkStatus();  // where the model has it: nothing to store
    }
  }
  return Mutate(std::move(r));
}

std::optional<std::pair<topo::Health, bool>> Service::NodeCondition(const std::string& node) const {
  const int n = cluster_->FindNode(node);
  if (n < 0) return std::nullopt;
  std::lock_guard<std::mutex> lk(mu_);
  const sched::ClusterState& cs = sched_->cluster_state();
  return std::make_pair(cs.NodeHealth(n), cs.NodeDrained(n));
}

StatusOr<std::vector<int64_t>> Service::RunPass() {
  RETURN_IF_ERROR(Writable());
  int64_t seq = 0;
  std::vector<int64_t> started;
  {
    std::lock_guard<std::mutex> lk(mu_);
    ASSIGN_OR_RETURN(seq, RunPassLocked(&started));
  }
  if (seq != 0) RETURN_IF_ERROR(WaitDurable(seq));
  return started;
}

StatusOr<int64_t> Service::RunPassLocked(std::vector<int64_t>* started) {
  int64_t seq = 0;
  {
    const int64_t now = NowLocked();
    const size_t before = sched_->Events().size();
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<sched::Applied> r = ApplyLocked(sched::Pass{}, now);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last_pass_duration_us_ = static_cast<int64_t>(secs * kUsPerS);
    ++metrics_.passes;
    size_t b = 0;
    while (b < metrics_.latency_bounds_s.size() && secs > metrics_.latency_bounds_s[b]) ++b;
    ++metrics_.latency_buckets[b];
    metrics_.latency_sum_s += secs;
    ++metrics_.latency_count;
    if (sched_->Events().size() != before) {
      store::InputRecord rec = EncodeInput(sched::Pass{}, *cluster_);
      rec.time_us = now;
      seq = RecordLocked(std::move(rec), before, 0);
    }
    if (!r.ok()) return r.status();
    if (started != nullptr) {
      for (JobId id : r->started) started->push_back(id.value);
    }
  }
  return seq;
}

Status Service::CheckInvariants() const {
  std::lock_guard<std::mutex> lk(mu_);
  RETURN_IF_ERROR(sched_->CheckInvariants());
  if (extender_) {
    std::vector<int64_t> held;
    for (const auto& [id, parts] : sched_->Holds()) held.push_back(id);
    if (extender_->HoldIds() != held) {
      return InternalError("the extender's reserved/bound slots (" +
                           std::to_string(extender_->HoldIds().size()) +
                           ") are not the scheduler's holds (" + std::to_string(held.size()) + ")");
    }
  }
  return OkStatus();
}

}  // namespace toposched::api
