// Durable record of everything the scheduler was told, and queryable tables derived from it.
// The daemon persists each input (a submit with its spec and idempotency key, a cancel, a health
// change, a scheduling pass with its clock value, ...) together with the job rows and events it
// produced, in one transaction, before acknowledging it; on restart it replays the inputs through
// a fresh scheduler. This module knows jobs and events only; never the scheduler, the cluster,
// or the daemon's HTTP API (the etcd back end, etcd_store.h, is an HTTP client of etcd). Its one
// clock is the leader election's lease timing (etcd_election.h).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "job/job_state.h"

namespace toposched::store {

// One input to the scheduler, as it was applied. `seq` is dense and increasing from 1: the order
// of application. `payload` is JSON text whose shape depends on `kind` (see docs/api.md).
struct InputRecord {
  int64_t seq = 0;
  std::string kind;      // "submit", "cancel", "complete", "priority", "drain", "health", "pass"
  int64_t time_us = 0;   // the clock value the input was applied with
  int64_t job_id = 0;    // the job it concerns (for submit: the id the scheduler gave); 0 = none
  std::string idem_key;  // submit only; may be empty
  std::string payload;
  bool operator==(const InputRecord&) const = default;
};

// The current row of one job (upserted whenever its state or priority changes).
struct JobRow {
  int64_t id = 0;
  std::string name, user, queue;
  int priority = 0;
  std::string state;  // job::JobStateName
  int gpus = 0;
  int64_t submit_time_us = 0;
  std::string idem_key;
  std::string spec_json;
  bool operator==(const JobRow&) const = default;
};

// One input and what it changed: written in one transaction with the others of its batch.
struct Change {
  InputRecord input;
  std::vector<JobRow> jobs;           // rows to insert or replace
  std::vector<job::JobEvent> events;  // appended to the event table in order
};

struct JobFilter {
  std::optional<std::string> state, user, queue;
  int64_t after_id = 0;  // only ids > after_id (paging)
  int limit = 1000;      // at most this many rows, by id
};

struct StoreOptions {
  // true: fsync on every commit (durable across power loss). false: SQLite's synchronous=NORMAL
  // in WAL mode, durable across a process crash (SIGKILL) but not a power cut.
  bool sync_full = true;
  int busy_timeout_ms = 5000;
  Status Validate() const;
};

// The newest schema version this build writes (schema_migrations holds one row per applied
// migration).
inline constexpr int kSchemaVersion = 3;

// A job store. Implementations are not thread-safe: the owner serializes calls (the daemon has
// one committer thread).
class JobStore {
 public:
  virtual ~JobStore() = default;
  // Appends the changes in one transaction: all or nothing. InvalidArgument when an input's seq
  // is not the next one; Unavailable/DataLoss for database errors (nothing is written).
  virtual Status Append(const std::vector<Change>& changes) = 0;
  // Every input in seq order.
  virtual StatusOr<std::vector<InputRecord>> ReadInputs() const = 0;
  virtual StatusOr<std::vector<JobRow>> ListJobs(const JobFilter& filter) const = 0;
  virtual StatusOr<std::optional<JobRow>> GetJob(int64_t id) const = 0;
  // Events with sequence number > after (0-based position in the log), at most limit.
  virtual StatusOr<std::vector<job::JobEvent>> Events(int64_t after, int limit) const = 0;
  // The events of inputs 1..seq, in order: what a replay of those inputs must give again. A
  // store only one daemon writes (SQLite, locked while open) holds no later inputs than the ones
  // it just read, so every event; a shared store (etcd) may have grown since, and reads only
  // these.
  virtual StatusOr<std::vector<job::JobEvent>> EventsThrough(int64_t seq) const {
    (void)seq;
    return Events(0, std::numeric_limits<int>::max());
  }
  virtual StatusOr<int64_t> EventCount() const = 0;
  virtual int64_t last_seq() const = 0;
  // Facts about the database itself (key → value), e.g. the cluster it was written with.
  virtual StatusOr<std::optional<std::string>> GetMeta(const std::string& key) const = 0;
  virtual Status PutMeta(const std::string& key, const std::string& value) = 0;
};

// SQLite implementation on one file (WAL journal). Open creates the file and applies the
// migrations it lacks, each in its own transaction, recorded in schema_migrations.
// FailedPrecondition for a database written by a newer build; Unavailable when the file cannot be
// opened or is locked by another daemon (an exclusive lock file `<path>.lock` is held while open).
StatusOr<std::unique_ptr<JobStore>> OpenSqliteStore(const std::string& path,
                                                    const StoreOptions& options = {});
// The schema version recorded in a database file (0 for a new file).
StatusOr<int> SchemaVersionOf(const std::string& path);

}  // namespace toposched::store
