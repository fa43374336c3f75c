// The daemon's HTTP server: REST under /api/v1/, GET /healthz, GET /metrics (Prometheus text),
// on top of one api::Service. Adds what HTTP needs and the service must not know: bearer-token
// authentication, request size and time limits, error bodies {"code","message"} with the HTTP
// status of the Status code, and one structured log line per request.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "api/http_listener.h"
#include "api/service.h"
#include "core/status.h"

namespace toposched::api {

// Who leads, when several daemons share a store (api::Replica).
struct ReplicaStatus {
  bool leader = true;
  std::string leader_url;  // the leader's advertised URL; "" when none is known
  // A standby that has not read the log for longer than kStaleAfterMs: its reads may miss
  // inputs the leader committed since.
  bool stale = false;
};
// 10 of a standby's 100 ms ticks without a successful read of the log (etcd without quorum, or
// cut off from it).
inline constexpr int64_t kStaleAfterMs = 1000;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (see Server::port)
  // Bearer token. Required for every mutating call; required for every call when `host` is not
  // a loopback address. Empty is allowed only on loopback, and then mutating calls are refused.
  std::string token;
  // The node agents' bearer token (`toposched agent`), optional: it may only send a node's
  // topology (POST /api/v1/nodes/<name>/topology), so that the token on every GPU node cannot
  // submit, cancel, drain or read. Must differ from `token`.
  std::string agent_token;
  size_t max_body_bytes = 1 << 20;
  // The whole request head must arrive within this of the connection's start, and the whole
  // body within this of its head (api::http::ListenerOptions).
  int read_timeout_ms = 5000;
  int write_timeout_ms = 5000;
  int threads = 16;  // request worker threads
  // Connections served at once; beyond it a connection is told 503 (GET /healthz is still
  // answered). Each listener has its own.
  int max_connections = 512;
  bool log_requests = true;
  // Kubernetes scheduler extender verbs: when set, POST /extender/{filter,prioritize,bind,preempt}
  // and POST /extender/pod-deleted pass (verb, request body) to it and answer its JSON (an error
  // Status becomes the usual error body). On this listener they are changes like any other and
  // need the bearer token. kube-scheduler's extender client cannot send one: it authenticates
  // with a client certificate on the extender listener below.
  std::function<StatusOr<std::string>(const std::string& verb, const std::string& body)> extender;
  // The extender's own listener: HTTPS serving kube-scheduler's four verbs only
  // (POST /extender/{filter,prioritize,bind,preempt}), to clients that present a certificate
  // signed by `client_ca_file` (the TLS handshake fails otherwise, before any request is read).
  // Off while `cert_file` is empty. kube-scheduler's KubeSchedulerConfiguration names the same
  // files in the extender's `tlsConfig` (docs/kubernetes.md).
  struct ExtenderTls {
    std::string host = "127.0.0.1";
    int port = 0;  // 0: any free port (see Server::extender_port)
    std::string cert_file, key_file, client_ca_file;
    bool enabled() const { return !cert_file.empty(); }
  };
  ExtenderTls extender_tls;
  // Replication (docs/ha.md): when set, every answer carries the applied sequence number
  // (X-Toposched-Applied-Seq) and, from a stale standby, X-Toposched-Stale: true; a standby
  // answers a change with 307 to the leader's URL, or
  // 503 with Retry-After while none is known. Unset: this daemon is alone and leads.
  std::function<ReplicaStatus()> replica;
  // More Prometheus text for GET /metrics (the replica's gauges).
  std::function<std::string()> extra_metrics;
  Status Validate() const;
};

// HTTP status for a Status code (InvalidArgument 400, NotFound 404, AlreadyExists and
// FailedPrecondition 409, Unavailable 503, Unimplemented 501, others 500), and its
// lower-case code name for error bodies ("invalid_argument").
int HttpStatusOf(StatusCode code);
std::string ErrorCodeName(StatusCode code);
// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopback(const std::string& host);

// Routes by method and a regular expression matched against the whole path, in the order added.
class Router {
 public:
  void Get(const std::string& pattern, http::Handler fn) { Add("GET", pattern, std::move(fn)); }
  void Post(const std::string& pattern, http::Handler fn) { Add("POST", pattern, std::move(fn)); }
  // Runs the first matching route (a HEAD request matches GET routes); false when none matches.
  bool Dispatch(http::Request& req, http::Response& res) const;

 private:
  struct Route {
    std::string method;
    std::regex pattern;
    http::Handler fn;
  };
  void Add(std::string method, const std::string& pattern, http::Handler fn);
  std::vector<Route> routes_;
};

// Owns the listeners. The service must outlive the server.
class Server {
 public:
  using Options = ServerOptions;
  // Binds (InvalidArgument for bad options, Unavailable when the address cannot be bound) and
  // serves on a thread of its own; returns once the server accepts connections.
  static StatusOr<std::unique_ptr<Server>> Start(Service& service, Options options);
  ~Server();  // Stop()
  void Stop();
  int port() const { return port_; }
  // The extender listener's port; -1 when it is off.
  int extender_port() const { return extender_port_; }
  // Blocks until Stop() is called from another thread (or a signal handler's thread).
  void Wait();

 private:
  Server(Service& service, Options options);
  void Routes();
  http::ListenerOptions ListenerOptionsFor(const std::string& name) const;
  std::string Refusal(const http::Request& req) const;
  void Handle(http::Request& req, http::Response& res) const;
  // On a standby: a change answered with where the leader is (true), else false.
  bool RedirectToLeader(const http::Request& req, http::Response& res) const;
  std::string ListenerMetrics() const;
  // Starts the extender's HTTPS listener (ServerOptions::extender_tls).
  Status StartExtenderTls();

  Service* service_;
  Options options_;
  Router routes_;
  mutable std::mutex listeners_mu_;  // guards http_ and tls_ while Start stores them
  std::unique_ptr<http::Listener> http_;
  int port_ = 0;
  std::unique_ptr<http::Listener> tls_;  // HTTPS, when the extender listener is on
  int extender_port_ = -1;
};

}  // namespace toposched::api
