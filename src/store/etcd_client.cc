#include "store/etcd_client.h"

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

namespace toposched::store {

namespace {

using json = nlohmann::json;

constexpr char kB64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string B64Encode(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) |
                       uint32_t(uint8_t(in[i + 2]));
    for (int s = 18; s >= 0; s -= 6) out += kB64Alphabet[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kB64Alphabet[(v >> 18) & 63];
    out += kB64Alphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kB64Alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

StatusOr<std::string> B64Decode(const std::string& in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '+') v = 62;
    if (c == '/') v = 63;
    if (v < 0) return Status(StatusCode::kDataLoss, "etcd: bad base64 in an answer");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

// The gateway writes 64-bit numbers as strings and leaves out zero values.
int64_t NumberField(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return 0;
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (...) {
      return 0;
    }
  }
  return it->is_number_integer() ? it->get<int64_t>() : 0;
}

StatusOr<json> ParseAnswer(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) {
    return Status(StatusCode::kUnavailable, "etcd: " + what + ": not a JSON object in the answer");
  }
  return j;
}

}  // namespace

Status EtcdOptions::Validate() const {
  if (endpoints.empty()) return InvalidArgumentError("etcd: no endpoints");
  for (const std::string& e : endpoints) {
    if (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0) {
      return InvalidArgumentError("etcd: endpoint \"" + e + "\": expected http:// or https://");
    }
  }
  if (cert_file.empty() != key_file.empty()) {
    return InvalidArgumentError(
        "etcd: a client certificate needs its key, and a key its certificate");
  }
  if (timeout_ms < 1 || timeout_ms > 60000) {
    return InvalidArgumentError("etcd: timeout_ms must be in [1, 60000]");
  }
  return OkStatus();
}

StatusOr<std::vector<std::string>> ParseEtcdUrl(const std::string& url, bool tls) {
  const std::string scheme = "etcd://";
  if (url.rfind(scheme, 0) != 0) {
    return InvalidArgumentError("--store: expected etcd://HOST:PORT[,HOST:PORT...], got \"" + url +
                                "\"");
  }
  std::vector<std::string> out;
  std::string rest = url.substr(scheme.size());
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t comma = rest.find(',', start);
    const std::string hp =
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t colon = hp.rfind(':');
    bool port_ok = colon != std::string::npos && colon > 0 && colon + 1 < hp.size() &&
                   hp.size() - colon - 1 <= 5;
    for (size_t i = colon + 1; port_ok && i < hp.size(); ++i) {
      port_ok = hp[i] >= '0' && hp[i] <= '9';
    }
    if (!port_ok || std::stoi(hp.substr(colon + 1)) < 1 ||
        std::stoi(hp.substr(colon + 1)) > 65535) {
      return InvalidArgumentError("--store: member \"" + hp + "\" of \"" + url +
                                  "\": expected HOST:PORT with a port in 1..65535");
    }
    out.push_back((tls ? "https://" : "http://") + hp);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {}

std::string EtcdClient::PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

StatusOr<std::string> EtcdClient::Call(const std::string& path, const std::string& body) const {
  const size_t n = options_.endpoints.size();
  const size_t first = preferred_.load() % n;
  std::string errors;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (first + k) % n;
    const std::string& ep = options_.endpoints[i];
    auto owned = options_.cert_file.empty()
                     ? std::make_unique<httplib::Client>(ep)
                     : std::make_unique<httplib::Client>(ep, options_.cert_file, options_.key_file);
    httplib::Client& cli = *owned;
    if (ep.rfind("https://", 0) == 0) {
      if (!options_.ca_file.empty()) cli.set_ca_cert_path(options_.ca_file);
      cli.enable_server_certificate_verification(true);
    }
    const time_t sec = options_.timeout_ms / 1000;
    const time_t usec = (options_.timeout_ms % 1000) * 1000;
    cli.set_connection_timeout(sec, usec);
    cli.set_read_timeout(sec, usec);
    cli.set_write_timeout(sec, usec);
    requests_.fetch_add(1);
    httplib::Result r = cli.Post(path, body, "application/json");
    if (!r) {
      std::string why = httplib::to_string(r.error());
      if (r.error() == httplib::Error::SSLServerVerification) {
        why += " (the member's certificate is not signed by --etcd-cacert)";
      } else if (r.error() == httplib::Error::SSLConnection) {
        why += " (TLS handshake failed: check --etcd-cacert, --etcd-cert, --etcd-key)";
      }
      errors += (errors.empty() ? "" : "; ") + ep + ": " + why;
      continue;
    }
    if (r->status == 200) {
      preferred_.store(i);
      return r->body;
    }
    const json e = json::parse(r->body, nullptr, false);
    const std::string msg = e.is_object() && e.contains("message") && e["message"].is_string()
                                ? e["message"].get<std::string>()
                                : r->body.substr(0, 200);
    // gRPC code 14 (unavailable) and 503: this member cannot serve now; another one may.
    if (r->status == 503 || (e.is_object() && NumberField(e, "code") == 14)) {
      errors += (errors.empty() ? "" : "; ") + ep + ": " + msg;
      continue;
    }
    return Status(StatusCode::kFailedPrecondition,
                  "etcd " + ep + path + ": HTTP " + std::to_string(r->status) + ": " + msg);
  }
  return Status(StatusCode::kUnavailable, "etcd unreachable (no member answered): " + errors);
}

StatusOr<EtcdRange> EtcdClient::Range(const std::string& key, const std::string& range_end,
                                      int64_t limit, bool count_only) const {
  json req{{"key", B64Encode(key)}};
  if (!range_end.empty()) req["range_end"] = B64Encode(range_end);
  if (limit > 0) req["limit"] = std::to_string(limit);
  if (count_only) req["count_only"] = true;
  ASSIGN_OR_RETURN(std::string text, Call("/v3/kv/range", req.dump()));
  ASSIGN_OR_RETURN(json j, ParseAnswer(text, "range"));
  EtcdRange out;
  out.more = j.value("more", false);
  out.count = NumberField(j, "count");
  if (j.contains("header")) out.revision = NumberField(j["header"], "revision");
  if (j.contains("kvs") && j["kvs"].is_array()) {
    for (const json& kv : j["kvs"]) {
      EtcdKeyValue e;
      ASSIGN_OR_RETURN(e.key, B64Decode(kv.value("key", "")));
      ASSIGN_OR_RETURN(e.value, B64Decode(kv.value("value", "")));
      e.create_revision = NumberField(kv, "create_revision");
      e.mod_revision = NumberField(kv, "mod_revision");
      e.version = NumberField(kv, "version");
      e.lease = NumberField(kv, "lease");
      out.kvs.push_back(std::move(e));
    }
  }
  return out;
}

StatusOr<bool> EtcdClient::Txn(const std::vector<EtcdCompare>& compares,
                               const std::vector<EtcdOp>& success, int64_t* revision) const {
  json req{{"compare", json::array()}, {"success", json::array()}};
  for (const EtcdCompare& c : compares) {
    json cj{{"key", B64Encode(c.key)}, {"result", "EQUAL"}};
    switch (c.target) {
      case EtcdCompare::Target::kCreate:
        cj["target"] = "CREATE";
        cj["create_revision"] = std::to_string(c.number);
        break;
      case EtcdCompare::Target::kLease:
        cj["target"] = "LEASE";
        cj["lease"] = std::to_string(c.number);
        break;
      case EtcdCompare::Target::kValue:
        cj["target"] = "VALUE";
        cj["value"] = B64Encode(c.value);
        break;
    }
    req["compare"].push_back(std::move(cj));
  }
  for (const EtcdOp& op : success) {
    if (op.kind == EtcdOp::Kind::kPut) {
      json p{{"key", B64Encode(op.key)}, {"value", B64Encode(op.value)}};
      if (op.lease != 0) p["lease"] = std::to_string(op.lease);
      req["success"].push_back(json{{"request_put", std::move(p)}});
    } else {
      json d{{"key", B64Encode(op.key)}};
      if (!op.range_end.empty()) d["range_end"] = B64Encode(op.range_end);
      req["success"].push_back(json{{"request_delete_range", std::move(d)}});
    }
  }
  txns_.fetch_add(1);
  ASSIGN_OR_RETURN(std::string text, Call("/v3/kv/txn", req.dump()));
  ASSIGN_OR_RETURN(json j, ParseAnswer(text, "txn"));
  if (revision != nullptr && j.contains("header")) *revision = NumberField(j["header"], "revision");
  return j.value("succeeded", false);
}

Status EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) const {
  json req{{"key", B64Encode(key)}, {"value", B64Encode(value)}};
  if (lease != 0) req["lease"] = std::to_string(lease);
  return Call("/v3/kv/put", req.dump()).status();
}

StatusOr<int64_t> EtcdClient::LeaseGrant(int64_t ttl_s) const {
  ASSIGN_OR_RETURN(std::string text,
                   Call("/v3/lease/grant", json{{"TTL", std::to_string(ttl_s)}}.dump()));
  ASSIGN_OR_RETURN(json j, ParseAnswer(text, "lease grant"));
  const int64_t id = NumberField(j, "ID");
  if (id == 0) {
    return Status(StatusCode::kUnavailable,
                  "etcd: lease grant: no lease in the answer: " + j.value("error", text));
  }
  return id;
}

StatusOr<int64_t> EtcdClient::LeaseKeepAlive(int64_t id) const {
  ASSIGN_OR_RETURN(std::string text,
                   Call("/v3/lease/keepalive", json{{"ID", std::to_string(id)}}.dump()));
  ASSIGN_OR_RETURN(json j, ParseAnswer(text, "lease keepalive"));
  // A streamed call: the gateway wraps its one answer in "result".
  const json& r = j.contains("result") ? j["result"] : j;
  return NumberField(r, "TTL");
}

Status EtcdClient::LeaseRevoke(int64_t id) const {
  return Call("/v3/lease/revoke", json{{"ID", std::to_string(id)}}.dump()).status();
}

Status EtcdClient::Compact(int64_t revision) const {
  return Call("/v3/kv/compaction", json{{"revision", std::to_string(revision)}}.dump()).status();
}

}  // namespace toposched::store
