// One daemon of several sharing an etcd store (docs/ha.md): it follows the log as a hot standby
// (reading the inputs the leader appends and applying them to its own scheduler, as a restart
// replays them), campaigns for the leadership when nobody holds it, and on winning reads the
// log to its end, fences the store on its lease and promotes its service to leader. A leader
// that loses its lease, or whose append the fence refused, stops: its scheduler holds inputs the
// log does not, so the daemon rebuilds itself as a standby from the log (StepDown).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/service.h"
#include "core/status.h"
#include "store/etcd_election.h"
#include "store/etcd_store.h"

namespace toposched::api {

struct ReplicaOptions {
  // How often a standby reads the log's tail and the leadership key, and the leader's loop
  // wakes to renew its lease. 100 ms: a standby is at most that far behind on reads, and a
  // range read of an unchanged tail costs etcd ~0.1 ms.
  int tick_ms = 100;
  // Inputs applied per read of the tail: a standby far behind catches up in steps of this many.
  int batch = 1000;
  Status Validate() const;
};

class Replica {
 public:
  // `service` is a standby opened on `store`; both outlive the replica. `on_step_down` is called
  // once, from the replica's thread, when this daemon led and must stop (why).
  static StatusOr<std::unique_ptr<Replica>> Start(Service& service, store::EtcdStore& store,
                                                  std::unique_ptr<store::LeaderElection> election,
                                                  ReplicaOptions options,
                                                  std::function<void(const Status&)> on_step_down);
  ~Replica();  // stops the loop; a leader resigns (its lease revoked: a standby takes over now)

  struct View {
    bool leader = false;
    std::string leader_url;  // "" when no leader is known
    int64_t applied_seq = 0;
    int64_t leader_changes = 0;  // leaderships this daemon won
    // A standby: milliseconds since it last read the log's tail (etcd answering); 0 on the leader.
    int64_t unread_ms = 0;
  };
  View view() const;
  // toposched_leader, toposched_leader_changes_total, toposched_store_txns_total.
  std::string MetricsText() const;

 private:
  Replica(Service& service, store::EtcdStore& store,
          std::unique_ptr<store::LeaderElection> election, ReplicaOptions options,
          std::function<void(const Status&)> on_step_down);
  void Loop();
  // A standby's tick: the tail applied, then a campaign. Errors are logged and retried.
  void FollowTick();
  // Reads and applies the tail until it is empty (before leading).
  Status CatchUp();
  // The leader's tick: renews the lease; false when it must step down (why in `why`).
  bool LeadTick(Status& why);

  Service& service_;
  store::EtcdStore& store_;
  std::unique_ptr<store::LeaderElection> election_;
  ReplicaOptions options_;
  std::function<void(const Status&)> on_step_down_;
  std::atomic<bool> leader_{false};
  std::atomic<int64_t> leader_changes_{0};
  // steady_clock, in ms: when a standby's read of the tail last succeeded.
  std::atomic<int64_t> last_read_ms_{0};
  mutable std::mutex mu_;  // guards leader_url_, stop_
  std::condition_variable cv_;
  std::string leader_url_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace toposched::api
