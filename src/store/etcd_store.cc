#include "store/etcd_store.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

namespace toposched::store {

namespace {

using json = nlohmann::json;

// Keys read per range request: a page of inputs of a few KB each stays far below etcd's answer
// limits (2 GiB gRPC messages, but the gateway buffers whole answers).
constexpr int64_t kPageKeys = 500;

json EncodeChange(const Change& c) {
  json jobs = json::array();
  for (const JobRow& r : c.jobs) {
    jobs.push_back(json{{"id", r.id},
                        {"name", r.name},
                        {"user", r.user},
                        {"queue", r.queue},
                        {"priority", r.priority},
                        {"state", r.state},
                        {"gpus", r.gpus},
                        {"submit_time_us", r.submit_time_us},
                        {"idem_key", r.idem_key},
                        {"spec_json", r.spec_json}});
  }
  json events = json::array();
  for (const job::JobEvent& e : c.events) {
    events.push_back(json{{"time_us", e.time_us},
                          {"job_id", e.job_id},
                          {"from", std::string(job::JobStateName(e.from))},
                          {"to", std::string(job::JobStateName(e.to))},
                          {"reason", e.reason}});
  }
  return json{{"seq", c.input.seq},           {"kind", c.input.kind},
              {"time_us", c.input.time_us},   {"job_id", c.input.job_id},
              {"idem_key", c.input.idem_key}, {"payload", c.input.payload},
              {"jobs", std::move(jobs)},      {"events", std::move(events)}};
}

StatusOr<Change> DecodeChange(const std::string& key, const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  auto bad = [&key](const std::string& what) {
    return Status(StatusCode::kDataLoss, "etcd key " + key + ": " + what);
  };
  if (!j.is_object()) return bad("not a JSON object");
  Change c;
  try {
    c.input.seq = j.at("seq").get<int64_t>();
    c.input.kind = j.at("kind").get<std::string>();
    c.input.time_us = j.at("time_us").get<int64_t>();
    c.input.job_id = j.at("job_id").get<int64_t>();
    c.input.idem_key = j.at("idem_key").get<std::string>();
    c.input.payload = j.at("payload").get<std::string>();
    for (const json& r : j.at("jobs")) {
      c.jobs.push_back(JobRow{r.at("id").get<int64_t>(), r.at("name").get<std::string>(),
                              r.at("user").get<std::string>(), r.at("queue").get<std::string>(),
                              r.at("priority").get<int>(), r.at("state").get<std::string>(),
                              r.at("gpus").get<int>(), r.at("submit_time_us").get<int64_t>(),
                              r.at("idem_key").get<std::string>(),
                              r.at("spec_json").get<std::string>()});
    }
    for (const json& e : j.at("events")) {
      job::JobEvent ev;
      ev.time_us = e.at("time_us").get<int64_t>();
      ev.job_id = e.at("job_id").get<std::string>();
      StatusOr<job::JobState> from = job::ParseJobState(e.at("from").get<std::string>());
      StatusOr<job::JobState> to = job::ParseJobState(e.at("to").get<std::string>());
      if (!from.ok() || !to.ok()) return bad("an event names an unknown job state");
      ev.from = *from;
      ev.to = *to;
      ev.reason = e.at("reason").get<std::string>();
      c.events.push_back(std::move(ev));
    }
  } catch (const std::exception& e) {
    return bad(std::string("missing or mistyped field: ") + e.what());
  }
  return c;
}

}  // namespace

Status EtcdStoreOptions::Validate() const {
  if (prefix.empty() || prefix[0] != '/' || prefix.back() == '/') {
    return InvalidArgumentError(
        "--store-prefix: expected /NAME (starting with '/', not ending "
        "with one), got \"" +
        prefix + "\"");
  }
  if (max_ops_per_txn < 1 || max_ops_per_txn > 128) {
    return InvalidArgumentError("max_ops_per_txn must be in [1, 128] (etcd's --max-txn-ops)");
  }
  if (max_bytes_per_txn < 1024) return InvalidArgumentError("max_bytes_per_txn must be >= 1024");
  return OkStatus();
}

EtcdStore::EtcdStore(std::shared_ptr<EtcdClient> client, EtcdStoreOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

StatusOr<std::unique_ptr<EtcdStore>> EtcdStore::Open(std::shared_ptr<EtcdClient> client,
                                                     EtcdStoreOptions options) {
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(client->options().Validate());
  std::unique_ptr<EtcdStore> s(new EtcdStore(std::move(client), std::move(options)));
  const std::string& p = s->options_.prefix;
  const std::string schema_key = p + "/schema";
  const std::string mine = std::to_string(kEtcdSchemaVersion);
  ASSIGN_OR_RETURN(EtcdRange schema, s->client_->Range(schema_key, "", 1));
  if (schema.kvs.empty()) {
    ASSIGN_OR_RETURN(EtcdRange any,
                     s->client_->Range(p + "/", EtcdClient::PrefixEnd(p + "/"), 1, true));
    // Another daemon may have written the version since the first read: the count saw it.
    if (any.count > 0) {
      ASSIGN_OR_RETURN(schema, s->client_->Range(schema_key, "", 1));
    }
    if (any.count > 0 && schema.kvs.empty()) {
      return FailedPreconditionError("etcd prefix " + p + "/ holds " + std::to_string(any.count) +
                                     " keys but no " + schema_key +
                                     ": it is not a toposched store; give another --store-prefix");
    }
  }
  if (schema.kvs.empty()) {
    // Two daemons starting on an empty prefix: one writes the version, both read it below.
    RETURN_IF_ERROR(s->client_
                        ->Txn({{schema_key, EtcdCompare::Target::kCreate, 0, ""}},
                              {{EtcdOp::Kind::kPut, schema_key, mine, "", 0}})
                        .status());
    ASSIGN_OR_RETURN(schema, s->client_->Range(schema_key, "", 1));
  }
  if (schema.kvs.empty() || schema.kvs[0].value != mine) {
    return FailedPreconditionError(
        "etcd prefix " + p + "/ holds store layout version " +
        (schema.kvs.empty() ? std::string("(none)") : "\"" + schema.kvs[0].value + "\"") +
        ", this build reads and writes version " + mine + ": give another --store-prefix");
  }
  // The last stored input: the greatest key of the log.
  ASSIGN_OR_RETURN(EtcdRange log,
                   s->client_->Range(p + "/log/", EtcdClient::PrefixEnd(p + "/log/"), 0, true));
  s->last_seq_ = log.count;
  return s;
}

void EtcdStore::SetFence(int64_t lease) {
  std::lock_guard<std::mutex> lk(mu_);
  fence_ = lease;
}

int64_t EtcdStore::fence() const {
  std::lock_guard<std::mutex> lk(mu_);
  return fence_;
}

int64_t EtcdStore::append_txns() const {
  std::lock_guard<std::mutex> lk(mu_);
  return append_txns_;
}

int64_t EtcdStore::last_seq() const {
  std::lock_guard<std::mutex> lk(mu_);
  return last_seq_;
}

std::string EtcdStore::LogKey(int64_t seq) const {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%020lld", static_cast<long long>(seq));
  return options_.prefix + "/log/" + digits;
}

Status EtcdStore::Append(const std::vector<Change>& changes) {
  if (changes.empty()) return OkStatus();
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (size_t i = 0; i < changes.size(); ++i) {
      const int64_t want = last_seq_ + 1 + static_cast<int64_t>(i);
      if (changes[i].input.seq != want) {
        return InvalidArgumentError("input seq " + std::to_string(changes[i].input.seq) +
                                    " is not the next one (" + std::to_string(want) + ")");
      }
    }
  }
  size_t begin = 0;
  while (begin < changes.size()) {
    size_t end = begin, bytes = 0;
    while (end < changes.size() && end - begin < static_cast<size_t>(options_.max_ops_per_txn)) {
      const size_t b = EncodeChange(changes[end]).dump().size();
      if (end > begin && bytes + b > options_.max_bytes_per_txn) break;
      bytes += b;
      ++end;
    }
    RETURN_IF_ERROR(AppendChunk(changes, begin, end));
    begin = end;
  }
  return OkStatus();
}

Status EtcdStore::AppendChunk(const std::vector<Change>& changes, size_t begin, size_t end) {
  const int64_t lease = fence();
  if (lease == 0) return FailedPreconditionError(std::string(kFencedMessage) + " (no lease held)");
  std::vector<EtcdOp> ops;
  for (size_t i = begin; i < end; ++i) {
    ops.push_back(
        {EtcdOp::Kind::kPut, LogKey(changes[i].input.seq), EncodeChange(changes[i]).dump(), "", 0});
  }
  const std::string first = ops.front().key;
  // The fence: the leadership key is still ours, and nobody wrote this sequence number.
  const std::vector<EtcdCompare> fence = {{LeaderKey(), EtcdCompare::Target::kLease, lease, ""},
                                          {first, EtcdCompare::Target::kCreate, 0, ""}};
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++append_txns_;
  }
  StatusOr<bool> ok = client_->Txn(fence, ops);
  if (!ok.ok() || !*ok) {
    // Refused, or no answer (a member that took it may have failed before replying, and the
    // next member was asked again): our very bytes at the first key mean it was written.
    StatusOr<EtcdRange> now = client_->Range(first, "", 1);
    if (now.ok() && !now->kvs.empty() && now->kvs[0].value == ops.front().value) {
      ok = true;
    } else if (!ok.ok()) {
      return ok.status();
    } else {
      StatusOr<EtcdRange> leader = client_->Range(LeaderKey(), "", 1);
      std::string holder = "nobody";
      if (leader.ok() && !leader->kvs.empty()) holder = "\"" + leader->kvs[0].value + "\"";
      const bool taken = now.ok() && !now->kvs.empty();
      return FailedPreconditionError(
          std::string(kFencedMessage) + " (the leadership key is held by " + holder +
          (taken ? ", and input " + std::to_string(changes[begin].input.seq) +
                       " was written by another"
                 : "") +
          "): the append of inputs " + std::to_string(changes[begin].input.seq) + ".." +
          std::to_string(changes[end - 1].input.seq) + " was refused");
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  last_seq_ = changes[end - 1].input.seq;
  return OkStatus();
}

StatusOr<std::vector<Change>> EtcdStore::ReadChanges(int64_t after, int limit) const {
  std::vector<Change> out;
  std::string from = LogKey(after + 1);
  const std::string end = EtcdClient::PrefixEnd(options_.prefix + "/log/");
  while (true) {
    const int64_t want =
        limit > 0 ? std::min<int64_t>(kPageKeys, limit - static_cast<int64_t>(out.size()))
                  : kPageKeys;
    if (want <= 0) break;
    ASSIGN_OR_RETURN(EtcdRange page, client_->Range(from, end, want));
    for (const EtcdKeyValue& kv : page.kvs) {
      ASSIGN_OR_RETURN(Change c, DecodeChange(kv.key, kv.value));
      const int64_t expect = after + 1 + static_cast<int64_t>(out.size());
      if (c.input.seq != expect || kv.key != LogKey(expect)) {
        return Status(StatusCode::kDataLoss, options_.prefix + ": input " + std::to_string(expect) +
                                                 " is missing (found " + kv.key + ")");
      }
      out.push_back(std::move(c));
    }
    if (!page.more || page.kvs.empty()) break;
    from = page.kvs.back().key + std::string(1, '\0');
  }
  return out;
}

StatusOr<std::vector<InputRecord>> EtcdStore::ReadInputsAfter(int64_t after, int limit) {
  ASSIGN_OR_RETURN(std::vector<Change> changes, ReadChanges(after, limit));
  std::vector<InputRecord> out;
  out.reserve(changes.size());
  for (Change& c : changes) out.push_back(std::move(c.input));
  if (!out.empty()) {
    std::lock_guard<std::mutex> lk(mu_);
    last_seq_ = std::max(last_seq_, out.back().seq);
  }
  return out;
}

StatusOr<std::vector<InputRecord>> EtcdStore::ReadInputs() const {
  ASSIGN_OR_RETURN(std::vector<Change> changes, ReadChanges(0, 0));
  std::vector<InputRecord> out;
  out.reserve(changes.size());
  for (Change& c : changes) out.push_back(std::move(c.input));
  if (!out.empty()) {
    std::lock_guard<std::mutex> lk(mu_);
    last_seq_ = std::max(last_seq_, out.back().seq);
  }
  return out;
}

StatusOr<std::vector<job::JobEvent>> EtcdStore::EventsThrough(int64_t seq) const {
  std::vector<job::JobEvent> out;
  if (seq <= 0) return out;  // ReadChanges' limit 0 would read them all
  ASSIGN_OR_RETURN(
      std::vector<Change> changes,
      ReadChanges(0, static_cast<int>(std::min<int64_t>(seq, std::numeric_limits<int>::max()))));
  if (static_cast<int64_t>(changes.size()) != seq) {
    return Status(StatusCode::kDataLoss,
                  options_.prefix + ": input " + std::to_string(changes.size() + 1) +
                      " is missing (the log was read through " + std::to_string(seq) + ")");
  }
  for (const Change& c : changes) out.insert(out.end(), c.events.begin(), c.events.end());
  return out;
}

StatusOr<std::vector<JobRow>> EtcdStore::ListJobs(const JobFilter& f) const {
  // The current row of each job: the last one any input wrote.
  ASSIGN_OR_RETURN(std::vector<Change> changes, ReadChanges(0, 0));
  std::map<int64_t, JobRow> rows;
  for (const Change& c : changes) {
    for (const JobRow& r : c.jobs) rows[r.id] = r;
  }
  std::vector<JobRow> out;
  for (auto it = rows.upper_bound(f.after_id); it != rows.end(); ++it) {
    const JobRow& r = it->second;
    if ((f.state && r.state != *f.state) || (f.user && r.user != *f.user) ||
        (f.queue && r.queue != *f.queue)) {
      continue;
    }
    if (static_cast<int>(out.size()) >= f.limit) break;
    out.push_back(r);
  }
  return out;
}

StatusOr<std::optional<JobRow>> EtcdStore::GetJob(int64_t id) const {
  JobFilter f;
  f.after_id = id - 1;
  f.limit = 1;
  ASSIGN_OR_RETURN(std::vector<JobRow> rows, ListJobs(f));
  if (rows.empty() || rows[0].id != id) return std::optional<JobRow>();
  return std::optional<JobRow>(rows[0]);
}

StatusOr<std::vector<job::JobEvent>> EtcdStore::Events(int64_t after, int limit) const {
  ASSIGN_OR_RETURN(std::vector<Change> changes, ReadChanges(0, 0));
  std::vector<job::JobEvent> out;
  int64_t pos = 0;
  for (const Change& c : changes) {
    for (const job::JobEvent& e : c.events) {
      if (pos++ < after) continue;
      if (static_cast<int64_t>(out.size()) >= limit) return out;
      out.push_back(e);
    }
  }
  return out;
}

StatusOr<int64_t> EtcdStore::EventCount() const {
  ASSIGN_OR_RETURN(std::vector<Change> changes, ReadChanges(0, 0));
  int64_t n = 0;
  for (const Change& c : changes) n += static_cast<int64_t>(c.events.size());
  return n;
}

StatusOr<std::optional<std::string>> EtcdStore::GetMeta(const std::string& key) const {
  ASSIGN_OR_RETURN(EtcdRange r, client_->Range(options_.prefix + "/meta/" + key, "", 1));
  if (r.kvs.empty()) return std::optional<std::string>();
  return std::optional<std::string>(r.kvs[0].value);
}

Status EtcdStore::PutMeta(const std::string& key, const std::string& value) {
  return client_->Put(options_.prefix + "/meta/" + key, value);
}

}  // namespace toposched::store
