#include "api/replica.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>
#include <vector>

namespace toposched::api {

namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status ReplicaOptions::Validate() const {
  if (tick_ms < 1 || tick_ms > 10000) return InvalidArgumentError("tick_ms must be in [1, 10000]");
  if (batch < 1 || batch > 100000) return InvalidArgumentError("batch must be in [1, 100000]");
  return OkStatus();
}

Replica::Replica(Service& service, store::EtcdStore& store,
                 std::unique_ptr<store::LeaderElection> election, ReplicaOptions options,
                 std::function<void(const Status&)> on_step_down)
    : service_(service),
      store_(store),
      election_(std::move(election)),
      options_(options),
      on_step_down_(std::move(on_step_down)) {}

StatusOr<std::unique_ptr<Replica>> Replica::Start(Service& service, store::EtcdStore& store,
                                                  std::unique_ptr<store::LeaderElection> election,
                                                  ReplicaOptions options,
                                                  std::function<void(const Status&)> on_step_down) {
  RETURN_IF_ERROR(options.Validate());
  if (!service.standby()) return FailedPreconditionError("replica: the service is not a standby");
  std::unique_ptr<Replica> r(
      new Replica(service, store, std::move(election), options, std::move(on_step_down)));
  r->last_read_ms_ = SteadyMs();  // Open read the whole log
  r->thread_ = std::thread([p = r.get()] { p->Loop(); });
  return r;
}

Replica::~Replica() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (leader_) {
    store_.SetFence(0);
    if (Status st = election_->Resign(); !st.ok()) {
      spdlog::warn(
          "msg=\"could not resign the leadership (it expires with its lease)\" error=\"{}\"",
          st.message());
    }
  }
}

Replica::View Replica::view() const {
  View v;
  v.leader = leader_.load();
  v.applied_seq = service_.applied_seq();
  v.leader_changes = leader_changes_.load();
  v.unread_ms = v.leader ? 0 : SteadyMs() - last_read_ms_.load();
  std::lock_guard<std::mutex> lk(mu_);
  v.leader_url = leader_url_;
  return v;
}

std::string Replica::MetricsText() const {
  const View v = view();
  std::string o;
  o += "# HELP toposched_leader 1 when this daemon is the leader, 0 for a standby.\n";
  o += "# TYPE toposched_leader gauge\n";
  o += "toposched_leader " + std::to_string(v.leader ? 1 : 0) + "\n";
  o += "# HELP toposched_leader_changes_total Leaderships this daemon won.\n";
  o += "# TYPE toposched_leader_changes_total counter\n";
  o += "toposched_leader_changes_total " + std::to_string(v.leader_changes) + "\n";
  o += "# HELP toposched_store_txns_total etcd transactions that appended inputs.\n";
  o += "# TYPE toposched_store_txns_total counter\n";
  o += "toposched_store_txns_total " + std::to_string(store_.append_txns()) + "\n";
  return o;
}

Status Replica::CatchUp() {
  while (true) {
    ASSIGN_OR_RETURN(std::vector<store::InputRecord> tail,
                     store_.ReadInputsAfter(service_.applied_seq(), options_.batch));
    if (tail.empty()) return OkStatus();
    RETURN_IF_ERROR(service_.ApplyReplicated(tail));
  }
}

void Replica::FollowTick() {
  StatusOr<std::vector<store::InputRecord>> tail =
      store_.ReadInputsAfter(service_.applied_seq(), options_.batch);
  if (!tail.ok()) {
    spdlog::warn("msg=\"standby: cannot read the log\" error=\"{}\"", tail.status().message());
    return;
  }
  if (Status st = service_.ApplyReplicated(*tail); !st.ok()) {
    spdlog::error("msg=\"standby: cannot apply the log\" error=\"{}\"", st.message());
    return;
  }
  last_read_ms_ = SteadyMs();
  StatusOr<store::LeaderElection::Event> ev = election_->Step();
  if (!ev.ok()) {
    spdlog::warn("msg=\"standby: election round failed\" error=\"{}\"", ev.status().message());
    return;
  }
  if (*ev != store::LeaderElection::Event::kElected) {
    std::lock_guard<std::mutex> lk(mu_);
    leader_url_ = election_->leader_identity();
    return;
  }
  // Everything the former leaders wrote was written before their lease ended, so before this
  // daemon's key was created: reading to the end now sees all of it.
  const auto t0 = std::chrono::steady_clock::now();
  Status st = CatchUp();
  if (st.ok()) {
    store_.SetFence(election_->lease());
    st = service_.Promote();
  }
  if (!st.ok()) {
    spdlog::error("msg=\"elected but cannot lead: resigning\" error=\"{}\"", st.message());
    store_.SetFence(0);
    (void)election_->Resign();
    return;
  }
  leader_ = true;
  ++leader_changes_;
  {
    std::lock_guard<std::mutex> lk(mu_);
    leader_url_ = election_->leader_identity();
  }
  spdlog::info(
      "msg=\"elected leader\" applied_seq={} lease={} catch_up_ms={}", service_.applied_seq(),
      election_->lease(),
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count());
}

bool Replica::LeadTick(Status& why) {
  if (Status h = service_.health(); !h.ok()) {
    why = h;  // a refused (fenced) or failed append: the scheduler is ahead of the log
    return false;
  }
  StatusOr<store::LeaderElection::Event> ev = election_->Step();
  if (!ev.ok()) {
    spdlog::warn("msg=\"leader: lease renewal failed (retried)\" error=\"{}\"",
                 ev.status().message());
    return true;
  }
  if (*ev == store::LeaderElection::Event::kLost) {
    why = FailedPreconditionError(std::string(store::kFencedMessage) +
                                  " (its lease expired or the key holds another lease)");
    return false;
  }
  return true;
}

void Replica::Loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    lk.unlock();
    if (leader_) {
      Status why;
      if (!LeadTick(why)) {
        store_.SetFence(0);
        leader_ = false;
        {
          std::lock_guard<std::mutex> g(mu_);
          leader_url_.clear();
        }
        spdlog::error("msg=\"stepping down\" error=\"{}\"", why.message());
        (void)election_->Resign();
        on_step_down_(why);
        lk.lock();
        return;  // the owner rebuilds the daemon as a standby
      }
    } else {
      FollowTick();
    }
    lk.lock();
    cv_.wait_for(lk, std::chrono::milliseconds(options_.tick_ms), [&] { return stop_; });
  }
}

}  // namespace toposched::api
