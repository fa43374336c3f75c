#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "store/job_store.h"

namespace toposched::store {

namespace {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

// Append-only: a released migration is never edited; a change of schema is a new entry.
constexpr Migration kMigrations[] = {
    {1, "inputs, jobs and events tables",
     "CREATE TABLE inputs ("
     "  seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, time_us INTEGER NOT NULL,"
     "  job_id INTEGER NOT NULL, idem_key TEXT NOT NULL, payload TEXT NOT NULL);"
     "CREATE TABLE jobs ("
     "  id INTEGER PRIMARY KEY, name TEXT NOT NULL, user TEXT NOT NULL, queue TEXT NOT NULL,"
     "  priority INTEGER NOT NULL, state TEXT NOT NULL, gpus INTEGER NOT NULL,"
     "  submit_time_us INTEGER NOT NULL, idem_key TEXT NOT NULL, spec_json TEXT NOT NULL);"
     "CREATE TABLE events ("
     "  seq INTEGER PRIMARY KEY, time_us INTEGER NOT NULL, job_id TEXT NOT NULL,"
     "  from_state TEXT NOT NULL, to_state TEXT NOT NULL, reason TEXT NOT NULL);"},
    {2, "indexes for job filters and idempotency keys",
     "CREATE INDEX jobs_state ON jobs(state);"
     "CREATE INDEX jobs_user ON jobs(user);"
     "CREATE INDEX jobs_queue ON jobs(queue);"
     "CREATE UNIQUE INDEX jobs_idem_key ON jobs(idem_key) WHERE idem_key != '';"
     "CREATE INDEX events_job ON events(job_id);"},
    {3, "meta: facts about the database (the cluster it was written with)",
     "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"},
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

// Statement handle that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return s_; }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  int Step() { return sqlite3_step(s_); }
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  std::string Text(int col) const {
    const unsigned char* t = sqlite3_column_text(s_, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(s_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

Status DbError(sqlite3* db, const std::string& what) {
  const int rc = sqlite3_errcode(db);
  std::string m = what + ": " + sqlite3_errmsg(db);
  if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) return Status(StatusCode::kDataLoss, m);
  return Status(StatusCode::kUnavailable, m);
}

Status Exec(sqlite3* db, const std::string& sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = what + ": " + (err ? err : "unknown error");
    sqlite3_free(err);
    const int rc = sqlite3_errcode(db);
    if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) return Status(StatusCode::kDataLoss, m);
    return Status(StatusCode::kUnavailable, m);
  }
  return OkStatus();
}

StatusOr<int> ReadVersion(sqlite3* db) {
  Stmt has(db,
           "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_migrations'");
  if (!has.ok() || has.Step() != SQLITE_ROW) return DbError(db, "reading the schema");
  if (has.Int(0) == 0) return 0;
  Stmt v(db, "SELECT coalesce(max(version), 0) FROM schema_migrations");
  if (!v.ok() || v.Step() != SQLITE_ROW) return DbError(db, "reading schema_migrations");
  return static_cast<int>(v.Int(0));
}

class SqliteStore : public JobStore {
 public:
  SqliteStore(sqlite3* db, int lock_fd, std::string path)
      : db_(db), lock_fd_(lock_fd), path_(std::move(path)) {}
  ~SqliteStore() override {
    sqlite3_close_v2(db_);
    if (lock_fd_ >= 0) close(lock_fd_);
  }

  Status Init(const StoreOptions& options) {
    sqlite3_busy_timeout(db_, options.busy_timeout_ms);
    RETURN_IF_ERROR(Exec(db_, "PRAGMA journal_mode=WAL", path_ + ": enabling WAL"));
    {
      Stmt mode(db_, "PRAGMA journal_mode");
      if (!mode.ok() || mode.Step() != SQLITE_ROW || mode.Text(0) != "wal") {
        return Status(StatusCode::kUnavailable, path_ + ": the file system does not support WAL");
      }
    }
    RETURN_IF_ERROR(
        Exec(db_, options.sync_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
             path_ + ": setting synchronous"));
    RETURN_IF_ERROR(Migrate());
    Stmt last(db_, "SELECT coalesce(max(seq), 0) FROM inputs");
    if (!last.ok() || last.Step() != SQLITE_ROW) return DbError(db_, path_ + ": reading inputs");
    last_seq_ = last.Int(0);
    return OkStatus();
  }

  Status Append(const std::vector<Change>& changes) override {
    if (changes.empty()) return OkStatus();
    for (size_t i = 0; i < changes.size(); ++i) {
      if (changes[i].input.seq != last_seq_ + 1 + static_cast<int64_t>(i)) {
        return InvalidArgumentError("input seq " + std::to_string(changes[i].input.seq) +
                                    " is not the next one (" +
                                    std::to_string(last_seq_ + 1 + static_cast<int64_t>(i)) + ")");
      }
    }
    RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE", path_ + ": begin"));
    Status st = Write(changes);
    if (st.ok() && sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      st = DbError(db_, path_ + ": commit");
    }
    if (!st.ok()) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return st;
    }
    last_seq_ += static_cast<int64_t>(changes.size());
    return OkStatus();
  }

  StatusOr<std::vector<InputRecord>> ReadInputs() const override {
    Stmt s(db_, "SELECT seq, kind, time_us, job_id, idem_key, payload FROM inputs ORDER BY seq");
    if (!s.ok()) return DbError(db_, path_ + ": reading inputs");
    std::vector<InputRecord> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      out.push_back({s.Int(0), s.Text(1), s.Int(2), s.Int(3), s.Text(4), s.Text(5)});
    }
    if (rc != SQLITE_DONE) return DbError(db_, path_ + ": reading inputs");
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].seq != static_cast<int64_t>(i) + 1) {
        return Status(StatusCode::kDataLoss, path_ + ": input " + std::to_string(i + 1) +
                                                 " is missing (found seq " +
                                                 std::to_string(out[i].seq) + ")");
      }
    }
    return out;
  }

  StatusOr<std::vector<JobRow>> ListJobs(const JobFilter& f) const override {
    std::string sql =
        "SELECT id, name, user, queue, priority, state, gpus, submit_time_us, idem_key, spec_json "
        "FROM jobs WHERE id > ?1";
    if (f.state) sql += " AND state = ?2";
    if (f.user) sql += " AND user = ?3";
    if (f.queue) sql += " AND queue = ?4";
    sql += " ORDER BY id LIMIT ?5";
    Stmt s(db_, sql.c_str());
    if (!s.ok()) return DbError(db_, path_ + ": listing jobs");
    s.Bind(1, f.after_id);
    if (f.state) s.Bind(2, *f.state);
    if (f.user) s.Bind(3, *f.user);
    if (f.queue) s.Bind(4, *f.queue);
    s.Bind(5, static_cast<int64_t>(f.limit));
    return ReadJobs(s);
  }

  StatusOr<std::optional<JobRow>> GetJob(int64_t id) const override {
    Stmt s(db_,
           "SELECT id, name, user, queue, priority, state, gpus, submit_time_us, idem_key, "
           "spec_json FROM jobs WHERE id = ?1");
    if (!s.ok()) return DbError(db_, path_ + ": reading a job");
    s.Bind(1, id);
    ASSIGN_OR_RETURN(std::vector<JobRow> rows, ReadJobs(s));
    if (rows.empty()) return std::optional<JobRow>();
    return std::optional<JobRow>(std::move(rows[0]));
  }

  StatusOr<std::vector<job::JobEvent>> Events(int64_t after, int limit) const override {
    Stmt s(db_,
           "SELECT time_us, job_id, from_state, to_state, reason FROM events WHERE seq > ?1 "
           "ORDER BY seq LIMIT ?2");
    if (!s.ok()) return DbError(db_, path_ + ": reading events");
    s.Bind(1, after);
    s.Bind(2, static_cast<int64_t>(limit));
    std::vector<job::JobEvent> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      job::JobEvent e;
      e.time_us = s.Int(0);
      e.job_id = s.Text(1);
      StatusOr<job::JobState> from = job::ParseJobState(s.Text(2));
      StatusOr<job::JobState> to = job::ParseJobState(s.Text(3));
      if (!from.ok() || !to.ok()) {
        return Status(StatusCode::kDataLoss, path_ + ": events: bad state name in row");
      }
      e.from = *from;
      e.to = *to;
      e.reason = s.Text(4);
      out.push_back(std::move(e));
    }
    if (rc != SQLITE_DONE) return DbError(db_, path_ + ": reading events");
    return out;
  }

  StatusOr<int64_t> EventCount() const override {
    Stmt s(db_, "SELECT count(*) FROM events");
    if (!s.ok() || s.Step() != SQLITE_ROW) return DbError(db_, path_ + ": counting events");
    return s.Int(0);
  }

  int64_t last_seq() const override { return last_seq_; }

  StatusOr<std::optional<std::string>> GetMeta(const std::string& key) const override {
    Stmt s(db_, "SELECT value FROM meta WHERE key = ?1");
    if (!s.ok()) return DbError(db_, path_ + ": reading meta");
    s.Bind(1, key);
    const int rc = s.Step();
    if (rc == SQLITE_ROW) return std::optional<std::string>(s.Text(0));
    if (rc != SQLITE_DONE) return DbError(db_, path_ + ": reading meta");
    return std::optional<std::string>();
  }

  Status PutMeta(const std::string& key, const std::string& value) override {
    Stmt s(db_,
           "INSERT INTO meta(key, value) VALUES (?1, ?2) "
           "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    if (!s.ok()) return DbError(db_, path_ + ": writing meta");
    s.Bind(1, key);
    s.Bind(2, value);
    if (s.Step() != SQLITE_DONE) return DbError(db_, path_ + ": writing meta");
    return OkStatus();
  }

 private:
  Status Migrate() {
    ASSIGN_OR_RETURN(int version, ReadVersion(db_));
    if (version > kSchemaVersion) {
      return FailedPreconditionError(path_ + ": database schema version " +
                                     std::to_string(version) + " is newer than this build's (" +
                                     std::to_string(kSchemaVersion) + ")");
    }
    RETURN_IF_ERROR(Exec(db_,
                         "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY "
                         "KEY, description TEXT NOT NULL)",
                         path_ + ": creating schema_migrations"));
    for (const Migration& m : kMigrations) {
      if (m.version <= version) continue;
      RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE", path_ + ": migration"));
      Status st =
          Exec(db_, m.sql,
               path_ + ": migration " + std::to_string(m.version) + " (" + m.description + ")");
      if (st.ok()) {
        Stmt ins(db_, "INSERT INTO schema_migrations(version, description) VALUES (?1, ?2)");
        ins.Bind(1, m.version);
        ins.Bind(2, std::string(m.description));
        if (!ins.ok() || ins.Step() != SQLITE_DONE) st = DbError(db_, path_ + ": migration row");
      }  // the statement is finalized here, before COMMIT
      if (st.ok()) st = Exec(db_, "COMMIT", path_ + ": migration commit");
      if (!st.ok()) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        return st;
      }
    }
    return OkStatus();
  }

  Status Write(const std::vector<Change>& changes) {
    Stmt in(db_,
            "INSERT INTO inputs(seq, kind, time_us, job_id, idem_key, payload) VALUES "
            "(?1, ?2, ?3, ?4, ?5, ?6)");
    Stmt job(db_,
             // An upsert on the id only: a clash of idempotency keys must fail, not replace.
             "INSERT INTO jobs(id, name, user, queue, priority, state, gpus, submit_time_us, "
             "idem_key, spec_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
             "ON CONFLICT(id) DO UPDATE SET name = excluded.name, user = excluded.user, "
             "queue = excluded.queue, priority = excluded.priority, state = excluded.state, "
             "gpus = excluded.gpus, submit_time_us = excluded.submit_time_us, "
             "idem_key = excluded.idem_key, spec_json = excluded.spec_json");
    Stmt ev(db_,
            "INSERT INTO events(time_us, job_id, from_state, to_state, reason) VALUES "
            "(?1, ?2, ?3, ?4, ?5)");
    if (!in.ok() || !job.ok() || !ev.ok()) return DbError(db_, path_ + ": preparing writes");
    for (const Change& c : changes) {
      in.Reset();
      in.Bind(1, c.input.seq);
      in.Bind(2, c.input.kind);
      in.Bind(3, c.input.time_us);
      in.Bind(4, c.input.job_id);
      in.Bind(5, c.input.idem_key);
      in.Bind(6, c.input.payload);
      if (in.Step() != SQLITE_DONE) return DbError(db_, path_ + ": writing an input");
      for (const JobRow& r : c.jobs) {
        job.Reset();
        job.Bind(1, r.id);
        job.Bind(2, r.name);
        job.Bind(3, r.user);
        job.Bind(4, r.queue);
        job.Bind(5, static_cast<int64_t>(r.priority));
        job.Bind(6, r.state);
        job.Bind(7, static_cast<int64_t>(r.gpus));
        job.Bind(8, r.submit_time_us);
        job.Bind(9, r.idem_key);
        job.Bind(10, r.spec_json);
        if (job.Step() != SQLITE_DONE) return DbError(db_, path_ + ": writing job " + r.name);
      }
      for (const job::JobEvent& e : c.events) {
        ev.Reset();
        ev.Bind(1, e.time_us);
        ev.Bind(2, e.job_id);
        ev.Bind(3, std::string(job::JobStateName(e.from)));
        ev.Bind(4, std::string(job::JobStateName(e.to)));
        ev.Bind(5, e.reason);
        if (ev.Step() != SQLITE_DONE) return DbError(db_, path_ + ": writing an event");
      }
    }
    return OkStatus();
  }

  static StatusOr<std::vector<JobRow>> ReadJobs(Stmt& s) {
    std::vector<JobRow> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      JobRow r;
      r.id = s.Int(0);
      r.name = s.Text(1);
      r.user = s.Text(2);
      r.queue = s.Text(3);
      r.priority = static_cast<int>(s.Int(4));
      r.state = s.Text(5);
      r.gpus = static_cast<int>(s.Int(6));
      r.submit_time_us = s.Int(7);
      r.idem_key = s.Text(8);
      r.spec_json = s.Text(9);
      out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) {
      return Status(StatusCode::kUnavailable, std::string("reading jobs: ") + sqlite3_errstr(rc));
    }
    return out;
  }

  sqlite3* db_;
  int lock_fd_;
  std::string path_;
  int64_t last_seq_ = 0;
};

}  // namespace

Status StoreOptions::Validate() const {
  if (busy_timeout_ms < 0) return InvalidArgumentError("busy_timeout_ms must be >= 0");
  return OkStatus();
}

StatusOr<std::unique_ptr<JobStore>> OpenSqliteStore(const std::string& path,
                                                    const StoreOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const std::string lock_path = path + ".lock";
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status(StatusCode::kUnavailable,
                  lock_path + ": cannot open the lock file: " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return Status(StatusCode::kUnavailable,
                  path + ": database is in use by another process (lock " + lock_path + ")");
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    Status st(StatusCode::kUnavailable,
              path + ": cannot open database: " + (db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close_v2(db);
    close(fd);
    return st;
  }
  auto store = std::make_unique<SqliteStore>(db, fd, path);
  RETURN_IF_ERROR(store->Init(options));
  return std::unique_ptr<JobStore>(std::move(store));
}

StatusOr<int> SchemaVersionOf(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    Status st(StatusCode::kUnavailable, path + ": cannot open database");
    sqlite3_close_v2(db);
    return st;
  }
  StatusOr<int> v = ReadVersion(db);
  sqlite3_close_v2(db);
  return v;
}

}  // namespace toposched::store
