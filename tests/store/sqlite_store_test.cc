#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "store/job_store.h"
#include "testing/status_matchers.h"

namespace toposched::store {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "toposched-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/state.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static Change Submit(int64_t seq, int64_t id, const std::string& key) {
    Change c;
    c.input = {seq, "submit", 1000 * seq, id, key, "{\"name\":\"j" + std::to_string(id) + "\"}"};
    c.jobs.push_back({id, "j" + std::to_string(id), "alice", "default", 0, "PENDING", 8, 1000 * seq,
                      key, c.input.payload});
    c.events.push_back({1000 * seq, "job-" + std::to_string(id), job::JobState::kPending,
                        job::JobState::kPending, "submitted"});
    return c;
  }

  // Runs one SQL statement on the file with a separate connection; returns the first column
  // of the first row as text.
  std::string Query(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(s, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return out;
  }

  std::string dir_, path_;
};

TEST_F(SqliteStoreTest, NewFileGetsEveryMigrationAndWal) {
  {
    auto st = OpenSqliteStore(path_);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ((*st)->last_seq(), 0);
  }
  EXPECT_EQ(Query("SELECT count(*) FROM schema_migrations"), std::to_string(kSchemaVersion));
  EXPECT_EQ(Query("PRAGMA journal_mode"), "wal");
  auto v = SchemaVersionOf(path_);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, kSchemaVersion);
}

TEST_F(SqliteStoreTest, AppendedInputsSurviveReopenInOrder) {
  {
    auto st = OpenSqliteStore(path_);
    ASSERT_TRUE(st.ok());
    ASSERT_TRUE((*st)->Append({Submit(1, 1, "k1"), Submit(2, 2, "k2")}).ok());
    Change pass;
    pass.input = {3, "pass", 5000, 0, "", "{}"};
    pass.jobs.push_back({1, "j1", "alice", "default", 0, "RUNNING", 8, 1000, "k1", "{}"});
    pass.events.push_back(
        {5000, "job-1", job::JobState::kPending, job::JobState::kRunning, "scheduled (8 GPUs)"});
    ASSERT_TRUE((*st)->Append({pass}).ok());
  }
  auto st = OpenSqliteStore(path_);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ((*st)->last_seq(), 3);
  auto in = (*st)->ReadInputs();
  ASSERT_TRUE(in.ok());
  ASSERT_EQ(in->size(), 3u);
  EXPECT_EQ((*in)[0].kind, "submit");
  EXPECT_EQ((*in)[0].idem_key, "k1");
  EXPECT_EQ((*in)[2].kind, "pass");
  EXPECT_EQ((*in)[2].time_us, 5000);

  auto job1 = (*st)->GetJob(1);
  ASSERT_TRUE(job1.ok());
  ASSERT_TRUE(job1->has_value());
  EXPECT_EQ((*job1)->state, "RUNNING");  // replaced, not duplicated
  JobFilter f;
  f.state = "PENDING";
  auto pending = (*st)->ListJobs(f);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].id, 2);

  auto ev = (*st)->Events(0, 100);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->size(), 3u);
  EXPECT_EQ((*ev)[2].to, job::JobState::kRunning);
  EXPECT_EQ((*ev)[2].reason, "scheduled (8 GPUs)");
  auto after = (*st)->Events(2, 100);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), 1u);
}

TEST_F(SqliteStoreTest, WrongSeqIsRejectedAndWritesNothing) {
  auto st = OpenSqliteStore(path_);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE((*st)->Append({Submit(1, 1, "k1")}).ok());
  EXPECT_THAT(
      (*st)->Append({Submit(2, 2, "k2"), Submit(4, 3, "k3")}),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("input seq 4 is not the next one (3)")));
  EXPECT_EQ((*st)->last_seq(), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM inputs"), "1");
  EXPECT_EQ(Query("SELECT count(*) FROM jobs"), "1");
}

TEST_F(SqliteStoreTest, FailedBatchRollsBackWhole) {
  auto st = OpenSqliteStore(path_);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE((*st)->Append({Submit(1, 1, "k1")}).ok());
  // The second change reuses idempotency key k1 for another job: the unique index refuses it,
  // and the first change of the batch must not stay behind.
  EXPECT_THAT((*st)->Append({Submit(2, 2, "k2"), Submit(3, 3, "k1")}),
              StatusIs(StatusCode::kUnavailable,
                       AllOf(HasSubstr(path_ + ": writing job j3: "),
                             HasSubstr("UNIQUE constraint failed: jobs.idem_key"))));
  EXPECT_EQ((*st)->last_seq(), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM inputs"), "1");
  EXPECT_EQ(Query("SELECT count(*) FROM jobs"), "1");
  EXPECT_EQ(Query("SELECT count(*) FROM events"), "1");
  // And the store goes on afterwards.
  EXPECT_TRUE((*st)->Append({Submit(2, 2, "k2")}).ok());
  EXPECT_EQ((*st)->last_seq(), 2);
}

TEST_F(SqliteStoreTest, SecondOpenWhileHeldIsRefused) {
  auto a = OpenSqliteStore(path_);
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(OpenSqliteStore(path_),
              StatusIs(StatusCode::kUnavailable,
                       HasSubstr(path_ + ": database is in use by another process (lock " + path_ +
                                 ".lock)")));
}

TEST_F(SqliteStoreTest, NewerSchemaIsRefused) {
  { ASSERT_TRUE(OpenSqliteStore(path_).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "INSERT INTO schema_migrations VALUES (99, 'future')", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THAT(
      OpenSqliteStore(path_),
      StatusIs(StatusCode::kFailedPrecondition,
               HasSubstr(path_ + ": database schema version 99 is newer than this build's (" +
                         std::to_string(kSchemaVersion) + ")")));
}

TEST_F(SqliteStoreTest, OldSchemaIsMigratedForward) {
  // A database at version 1 (tables without the indexes) gets migration 2 on open.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                           "description TEXT NOT NULL);"
                           "INSERT INTO schema_migrations VALUES (1, 'v1');"
                           "CREATE TABLE inputs (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
                           "time_us INTEGER NOT NULL, job_id INTEGER NOT NULL, idem_key TEXT NOT "
                           "NULL, payload TEXT NOT NULL);"
                           "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, user "
                           "TEXT NOT NULL, queue TEXT NOT NULL, priority INTEGER NOT NULL, state "
                           "TEXT NOT NULL, gpus INTEGER NOT NULL, submit_time_us INTEGER NOT "
                           "NULL, idem_key TEXT NOT NULL, spec_json TEXT NOT NULL);"
                           "CREATE TABLE events (seq INTEGER PRIMARY KEY, time_us INTEGER NOT "
                           "NULL, job_id TEXT NOT NULL, from_state TEXT NOT NULL, to_state TEXT "
                           "NOT NULL, reason TEXT NOT NULL);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto st = OpenSqliteStore(path_);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(Query("SELECT count(*) FROM sqlite_master WHERE name = 'jobs_idem_key'"), "1");
  EXPECT_EQ(Query("SELECT max(version) FROM schema_migrations"), std::to_string(kSchemaVersion));
}

TEST_F(SqliteStoreTest, NotADatabaseIsDataLossOrUnavailable) {
  {
    FILE* f = std::fopen(path_.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not an SQLite file, just text long enough to fill a header page......", f);
    std::fclose(f);
  }
  // SQLite refuses the file at the first statement that reads it: SQLITE_NOTADB (DataLoss), or
  // Unavailable where the refusal comes as another SQLite error.
  EXPECT_THAT(OpenSqliteStore(path_),
              AnyOf(StatusIs(StatusCode::kDataLoss,
                             AllOf(HasSubstr(path_ + ": "), HasSubstr("file is not a database"))),
                    StatusIs(StatusCode::kUnavailable, HasSubstr(path_ + ": "))));
}

}  // namespace
}  // namespace toposched::store
