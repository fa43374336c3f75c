// A client of etcd's v3 API through its JSON gateway (POST /v3/kv/range, /v3/kv/txn, /v3/lease/*,
// /v3/kv/compaction on the client port), over HTTP or HTTPS with client certificates. Keys and
// values are bytes (base64 on the wire, plain here). Several endpoints (the cluster's members):
// a request that cannot reach one member, or that the member answers "unavailable" (it lost its
// quorum), is sent to the next; the member that answered last is tried first next time.
// Thread-safe: each request uses its own connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace toposched::store {

struct EtcdOptions {
  // "http://HOST:PORT" or "https://HOST:PORT", one per member.
  std::vector<std::string> endpoints;
  // Client TLS (https endpoints): the CA that signed the members' certificates, and this
  // client's certificate and key when the members require one (etcd --client-cert-auth).
  std::string ca_file, cert_file, key_file;
  // Per request and member. etcd answers a healthy request in milliseconds; a member cut off
  // from its quorum holds a write for its own request timeout (etcd's default 5 s) before it
  // says so, so 2 s moves on to the next member first.
  int timeout_ms = 2000;
  Status Validate() const;
};

// "etcd://HOST:PORT[,HOST:PORT...]" → endpoints ("http://", or "https://" when `tls`).
// InvalidArgument naming the bad part.
StatusOr<std::vector<std::string>> ParseEtcdUrl(const std::string& url, bool tls);

struct EtcdKeyValue {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, version = 0, lease = 0;
};

struct EtcdRange {
  std::vector<EtcdKeyValue> kvs;
  bool more = false;
  int64_t count = 0;
  int64_t revision = 0;  // the store's revision the read saw
};

// One condition of a transaction.
struct EtcdCompare {
  enum class Target { kCreate, kLease, kValue };
  std::string key;
  Target target = Target::kCreate;
  int64_t number = 0;  // kCreate: create_revision (0 = the key does not exist); kLease: lease id
  std::string value;   // kValue
};

// One operation of a transaction: a put (with a lease, 0 = none) or a delete of [key, range_end).
struct EtcdOp {
  enum class Kind { kPut, kDelete };
  Kind kind = Kind::kPut;
  std::string key, value, range_end;
  int64_t lease = 0;
};

class EtcdClient {
 public:
  explicit EtcdClient(EtcdOptions options);
  // Reads [key, range_end) (range_end "" = the key alone), at most `limit` keys (0 = all).
  StatusOr<EtcdRange> Range(const std::string& key, const std::string& range_end, int64_t limit,
                            bool count_only = false) const;
  // All conditions hold → the success ops run, and true; else nothing is written, and false.
  // `revision` (may be null) gets the store's revision after it.
  StatusOr<bool> Txn(const std::vector<EtcdCompare>& compares, const std::vector<EtcdOp>& success,
                     int64_t* revision = nullptr) const;
  Status Put(const std::string& key, const std::string& value, int64_t lease = 0) const;
  // A new lease of `ttl_s` seconds; its id.
  StatusOr<int64_t> LeaseGrant(int64_t ttl_s) const;
  // Renews the lease; the TTL it has now, 0 when it has expired (or never existed).
  StatusOr<int64_t> LeaseKeepAlive(int64_t id) const;
  Status LeaseRevoke(int64_t id) const;
  // Discards the history before `revision` (keys' current values stay).
  Status Compact(int64_t revision) const;
  // The end of the range of keys that start with `prefix` (its last byte plus one).
  static std::string PrefixEnd(const std::string& prefix);
  const EtcdOptions& options() const { return options_; }
  // Every request sent to a member, successful or not (a transaction is one).
  int64_t requests() const { return requests_.load(); }
  int64_t txns() const { return txns_.load(); }

 private:
  // POSTs `body` (JSON) to `path` on the members in turn; the answer's JSON text.
  StatusOr<std::string> Call(const std::string& path, const std::string& body) const;
  EtcdOptions options_;
  mutable std::atomic<size_t> preferred_{0};
  mutable std::atomic<int64_t> requests_{0};
  mutable std::atomic<int64_t> txns_{0};
};

}  // namespace toposched::store
