// Leader election on an etcd lease: the leader is the daemon whose lease the leadership key is
// attached to. A candidate creates the key (a transaction that succeeds only while it does not
// exist) attached to a lease of its own; the leader renews the lease every third of its TTL;
// when the leader stops (killed, paused, cut off) its lease expires, etcd deletes the key, and a
// candidate takes it. The leader's appends are fenced on the same lease (EtcdStore::SetFence),
// so a former leader that has not noticed yet cannot write.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "store/etcd_client.h"

namespace toposched::store {

struct ElectionOptions {
  // The leadership key (EtcdStore::LeaderKey).
  std::string key;
  // What this daemon writes into the key when it leads: its advertised URL, where the others
  // send writes.
  std::string identity;
  // The lease's TTL. 15 s is kube-scheduler's default lease (--leader-elect-lease-duration):
  // a takeover waits at most about that long after the leader's machine dies, and a leader
  // survives a renewal that fails for up to two thirds of it (an etcd member restarting, a GC
  // pause). Tests use 1-2 s.
  int lease_ttl_s = 15;
  Status Validate() const;
};

class LeaderElection {
 public:
  LeaderElection(std::shared_ptr<EtcdClient> client, ElectionOptions options);
  enum class Event { kNone, kElected, kLost };
  // One round, called every tick by the owner (a tick shorter than a third of the TTL): a
  // candidate campaigns when the key is free, a leader renews its lease when a third of the TTL
  // has passed since the last renewal. kLost when the leader's lease expired or the key holds
  // another lease; also when no renewal succeeded for a whole TTL (etcd may have let the lease
  // go: the leader must stop acting before anyone else can start).
  StatusOr<Event> Step();
  bool leader() const;
  // The lease this daemon leads with (0 when it does not lead).
  int64_t lease() const;
  // The identity in the leadership key when last read ("" when none was).
  std::string leader_identity() const;
  // Gives the leadership up (revokes the lease, so that a standby takes over at once).
  Status Resign();

 private:
  StatusOr<Event> Campaign();
  StatusOr<Event> Renew();
  std::shared_ptr<EtcdClient> client_;
  ElectionOptions options_;
  mutable std::mutex mu_;
  int64_t lease_ = 0;  // while leading
  std::string leader_identity_;
  std::chrono::steady_clock::time_point renewed_at_{}, lease_granted_at_{};
};

}  // namespace toposched::store
