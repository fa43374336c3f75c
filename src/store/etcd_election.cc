#include "store/etcd_election.h"

#include <utility>

namespace toposched::store {

Status ElectionOptions::Validate() const {
  if (key.empty()) return InvalidArgumentError("election: the leadership key is empty");
  if (identity.empty()) {
    return InvalidArgumentError(
        "--advertise-url: needed with an etcd store (where the other "
        "daemons send writes)");
  }
  // etcd's minimum TTL is its election timeout ×1.5 (about 1.5 s by default, it raises shorter
  // ones); an hour bounds a takeover that nobody would wait for.
  if (lease_ttl_s < 1 || lease_ttl_s > 3600) {
    return InvalidArgumentError("--lease-ttl-s: must be in [1, 3600], got " +
                                std::to_string(lease_ttl_s));
  }
  return OkStatus();
}

LeaderElection::LeaderElection(std::shared_ptr<EtcdClient> client, ElectionOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

bool LeaderElection::leader() const {
  std::lock_guard<std::mutex> lk(mu_);
  return lease_ != 0;
}

int64_t LeaderElection::lease() const {
  std::lock_guard<std::mutex> lk(mu_);
  return lease_;
}

std::string LeaderElection::leader_identity() const {
  std::lock_guard<std::mutex> lk(mu_);
  return leader_identity_;
}

StatusOr<LeaderElection::Event> LeaderElection::Step() { return leader() ? Renew() : Campaign(); }

StatusOr<LeaderElection::Event> LeaderElection::Campaign() {
  ASSIGN_OR_RETURN(EtcdRange held, client_->Range(options_.key, "", 1));
  if (!held.kvs.empty()) {
    std::lock_guard<std::mutex> lk(mu_);
    leader_identity_ = held.kvs[0].value;
    return Event::kNone;
  }
  // The lease counts from before the grant was asked: never later than etcd's own count.
  const auto asked = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(int64_t lease, client_->LeaseGrant(options_.lease_ttl_s));
  StatusOr<bool> won =
      client_->Txn({{options_.key, EtcdCompare::Target::kCreate, 0, ""}},
                   {{EtcdOp::Kind::kPut, options_.key, options_.identity, "", lease}});
  if (!won.ok() || !*won) {
    (void)client_->LeaseRevoke(lease);  // best effort: it expires anyway
    if (!won.ok()) return won.status();
    return Event::kNone;
  }
  std::lock_guard<std::mutex> lk(mu_);
  lease_ = lease;
  renewed_at_ = asked;
  leader_identity_ = options_.identity;
  return Event::kElected;
}

StatusOr<LeaderElection::Event> LeaderElection::Renew() {
  const auto now = std::chrono::steady_clock::now();
  const auto ttl = std::chrono::seconds(options_.lease_ttl_s);
  int64_t lease = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    lease = lease_;
    if (now - renewed_at_ >= ttl) {
      // No renewal for a whole TTL: etcd may have let the key go already.
      lease_ = 0;
      leader_identity_.clear();
      return Event::kLost;
    }
    if (now - renewed_at_ < ttl / 3) return Event::kNone;
  }
  StatusOr<int64_t> left = client_->LeaseKeepAlive(lease);
  if (!left.ok()) return left.status();  // retried next tick, until a TTL has passed
  ASSIGN_OR_RETURN(EtcdRange held, client_->Range(options_.key, "", 1));
  std::lock_guard<std::mutex> lk(mu_);
  if (*left <= 0 || held.kvs.empty() || held.kvs[0].lease != lease) {
    lease_ = 0;
    leader_identity_ = held.kvs.empty() ? "" : held.kvs[0].value;
    return Event::kLost;
  }
  renewed_at_ = now;
  return Event::kNone;
}

Status LeaderElection::Resign() {
  int64_t lease = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    lease = lease_;
    lease_ = 0;
  }
  if (lease == 0) return OkStatus();
  return client_->LeaseRevoke(lease);
}

}  // namespace toposched::store
