// The job store on etcd, shared by several daemons of which one (the leader) writes. Keys under
// a prefix P:
//   P/schema           the layout version this build writes ("1")
//   P/meta/<key>       facts about the store (JobStore::GetMeta)
//   P/log/<seq>        one input with the job rows and events it produced (JSON), seq as 20
//                      digits so that keys sort as numbers
//   P/leader           the leader's identity (its advertised URL), attached to its lease
// Appends are fenced: each is one transaction that writes only while P/leader is attached to the
// lease this store was given (SetFence) and the first key it writes does not exist yet, so a
// daemon that lost the leadership (paused, cut off) can never write, and the log never holds two
// inputs with one sequence number.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/etcd_client.h"
#include "store/job_store.h"

namespace toposched::store {

// The layout version of P/ this build writes.
inline constexpr int kEtcdSchemaVersion = 1;

struct EtcdStoreOptions {
  std::string prefix = "/toposched";  // no trailing '/'
  // etcd refuses a transaction of more than 128 operations (--max-txn-ops) or a request over
  // 1.5 MiB (--max-request-bytes): a batch is split below both.
  int max_ops_per_txn = 100;
  size_t max_bytes_per_txn = 1 << 20;
  Status Validate() const;
};

// A refused fence makes Append return FailedPrecondition with a message that starts with this.
inline constexpr const char* kFencedMessage = "fenced: this daemon is no longer the leader";

class EtcdStore : public JobStore {
 public:
  // Checks P/schema (written when the prefix is empty): FailedPrecondition naming the prefix when
  // it holds another layout or keys of something else; Unavailable when no member answers.
  static StatusOr<std::unique_ptr<EtcdStore>> Open(std::shared_ptr<EtcdClient> client,
                                                   EtcdStoreOptions options);

  // The lease that P/leader must be attached to for an append to be written (0: none, so every
  // append is refused).
  void SetFence(int64_t lease);
  int64_t fence() const;
  // Inputs with seq > after, at most `limit`, in order (the tail a follower applies). Moves
  // last_seq() to the last one read.
  StatusOr<std::vector<InputRecord>> ReadInputsAfter(int64_t after, int limit);
  // Transactions that wrote a batch (group commit: fewer than the inputs of a burst).
  int64_t append_txns() const;
  std::string LeaderKey() const { return options_.prefix + "/leader"; }
  const EtcdClient& client() const { return *client_; }

  Status Append(const std::vector<Change>& changes) override;
  // Moves last_seq() to the last input read (the leader may have appended since Open counted).
  StatusOr<std::vector<InputRecord>> ReadInputs() const override;
  StatusOr<std::vector<JobRow>> ListJobs(const JobFilter& filter) const override;
  StatusOr<std::optional<JobRow>> GetJob(int64_t id) const override;
  StatusOr<std::vector<job::JobEvent>> Events(int64_t after, int limit) const override;
  // Only the inputs 1..seq are read: the leader may have appended more since they were.
  StatusOr<std::vector<job::JobEvent>> EventsThrough(int64_t seq) const override;
  StatusOr<int64_t> EventCount() const override;
  int64_t last_seq() const override;
  StatusOr<std::optional<std::string>> GetMeta(const std::string& key) const override;
  Status PutMeta(const std::string& key, const std::string& value) override;

 private:
  EtcdStore(std::shared_ptr<EtcdClient> client, EtcdStoreOptions options);
  std::string LogKey(int64_t seq) const;
  // Every stored change from seq `after` + 1, in order, checked dense.
  StatusOr<std::vector<Change>> ReadChanges(int64_t after, int limit) const;
  // One transaction of consecutive changes.
  Status AppendChunk(const std::vector<Change>& changes, size_t begin, size_t end);

  std::shared_ptr<EtcdClient> client_;
  EtcdStoreOptions options_;
  mutable std::mutex mu_;
  int64_t fence_ = 0;
  // The last input known stored (counted at Open, then moved by every read and append); an
  // append must follow it. Mutable: the reads (const) move it.
  mutable int64_t last_seq_ = 0;
  int64_t append_txns_ = 0;
};

}  // namespace toposched::store
