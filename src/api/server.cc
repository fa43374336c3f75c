#include "api/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "api/dashboard.h"
#include "api/http_listener.h"
#include "core/strings.h"

namespace toposched::api {

namespace {

using json = nlohmann::ordered_json;

void SetError(http::Response& res, int status, const std::string& code,
              const std::string& message) {
  res.status = status;
  res.set_content(http::ErrorBody(code, message), "application/json");
}

void SetErrorRefused(http::Response& res, const std::string& message) {
  SetError(res, 401, "unauthorized", message);
  res.set_header("WWW-Authenticate", "Bearer");
}

void SetStatusError(http::Response& res, const Status& s) {
  SetError(res, HttpStatusOf(s.code()), ErrorCodeName(s.code()), s.message());
}

void SetJson(http::Response& res, int status, std::string body) {
  res.status = status;
  res.set_content(std::move(body), "application/json");
}

// Constant-time comparison of the presented token with the configured one.
bool TokenMatches(const std::string& presented, const std::string& token) {
  unsigned char diff = presented.size() == token.size() ? 0 : 1;
  for (size_t i = 0; i < presented.size(); ++i) {
    diff |=
        static_cast<unsigned char>(presented[i] ^ token[i % (token.empty() ? 1 : token.size())]);
  }
  return diff == 0 && !token.empty();
}

// Parses a JSON object body whose keys must all be in `allowed`.
StatusOr<json> ParseObject(const std::string& body, const std::set<std::string>& allowed) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return InvalidArgumentError("request body: malformed JSON");
  if (!j.is_object()) return InvalidArgumentError("request body: expected a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (allowed.count(it.key()) == 0) {
      return InvalidArgumentError("request body: unknown field \"" + it.key() + "\"");
    }
  }
  return j;
}

// An exit report from a complete body: {"exit_code": int, "signal": 1..64, "log": string,
// "node": string}, every field optional. True when any is there (an empty object is a plain
// completion, as before exit reports).
StatusOr<bool> ParseExitReport(const json& b, ExitReport* r) {
  if (b.contains("exit_code")) {
    if (!b["exit_code"].is_number_integer() || b["exit_code"].get<int64_t>() < -1000000 ||
        b["exit_code"].get<int64_t>() > 1000000) {
      return InvalidArgumentError("request body: exit_code: expected an integer");
    }
    r->exit_code = b["exit_code"].get<int>();
  }
  if (b.contains("signal")) {
    if (!b["signal"].is_number_integer() || b["signal"].get<int64_t>() < 1 ||
        b["signal"].get<int64_t>() > 64) {
      return InvalidArgumentError("request body: signal: expected an integer in [1, 64]");
    }
    r->signal = b["signal"].get<int>();
  }
  for (const char* k : {"log", "node"}) {
    if (b.contains(k) && !b[k].is_string()) {
      return InvalidArgumentError(std::string("request body: ") + k + ": expected a string");
    }
  }
  r->log = b.value("log", std::string());
  r->node = b.value("node", std::string());
  return !b.empty();
}

// Query parameters must all be in `allowed`. A body sent as a form (curl -d without a
// Content-Type) is parsed into parameters by the HTTP library: say that, not "unknown query
// parameter".
Status CheckParams(const http::Request& req, const std::set<std::string>& allowed) {
  const std::string type = ToLower(req.get_header_value("Content-Type"));
  if (!req.body.empty() && type.rfind("application/x-www-form-urlencoded", 0) == 0) {
    return InvalidArgumentError(
        "request body: sent as application/x-www-form-urlencoded (curl -d does that); send JSON "
        "with the header Content-Type: application/json");
  }
  for (const auto& [k, v] : req.params) {
    if (allowed.count(k) == 0) {
      return InvalidArgumentError("unknown query parameter \"" + k + "\"");
    }
  }
  return OkStatus();
}

StatusOr<int64_t> IntParam(const http::Request& req, const std::string& name, int64_t def,
                           int64_t lo, int64_t hi) {
  if (!req.has_param(name.c_str())) return def;
  const std::string v = req.get_param_value(name.c_str());
  int64_t out = 0;
  size_t used = 0;
  try {
    out = std::stoll(v, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != v.size() || out < lo || out > hi) {
    return InvalidArgumentError("query parameter \"" + name + "\": expected an integer in [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "], got \"" + v +
                                "\"");
  }
  return out;
}

int64_t JobIdOf(const http::Request& req) { return std::stoll(req.matches[1].str()); }

// The dashboard: fixed paths, each an asset compiled into the binary (src/api/dashboard.h).
void AddDashboardRoutes(Router& h) {
  for (const WebAsset& asset : WebAssets()) {
    std::string pattern;
    for (char c : asset.path) {
      if (c == '.') pattern += '\\';
      pattern += c;
    }
    h.Get(pattern, [&asset](const http::Request&, http::Response& res) {
      res.status = 200;
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Content-Security-Policy", std::string(kWebCsp));
      res.set_header("Referrer-Policy", "no-referrer");
      res.set_content(std::string(asset.body), std::string(asset.content_type));
    });
  }
}

// The job collection: submit (POST /api/v1/jobs) and list (GET, filtered and paged).
void AddJobListRoutes(Router& h, Service& svc) {
  h.Post("/api/v1/jobs", [&svc](const http::Request& req, http::Response& res) {
    if (Status p = CheckParams(req, {}); !p.ok()) return SetStatusError(res, p);
    StatusOr<Service::SubmitResult> r =
        svc.Submit(req.body, req.get_header_value("Idempotency-Key"));
    if (!r.ok()) return SetStatusError(res, r.status());
    SetJson(res, r->created ? 201 : 200,
            json{{"id", r->id}, {"job_id", "job-" + std::to_string(r->id)}, {"created", r->created}}
                .dump());
  });

  h.Get("/api/v1/jobs", [&svc](const http::Request& req, http::Response& res) {
    if (Status p = CheckParams(req, {"state", "user", "queue", "name", "after", "limit"});
        !p.ok()) {
      return SetStatusError(res, p);
    }
    ListFilter f;
    if (req.has_param("state")) {
      StatusOr<job::JobState> st = job::ParseJobState(req.get_param_value("state"));
      if (!st.ok()) return SetStatusError(res, st.status().WithPrefix("query parameter \"state\""));
      f.state = *st;
    }
    if (req.has_param("user")) f.user = req.get_param_value("user");
    if (req.has_param("queue")) f.queue = req.get_param_value("queue");
    if (req.has_param("name")) f.name = req.get_param_value("name");
    StatusOr<int64_t> after = IntParam(req, "after", 0, 0, INT64_MAX);
    if (!after.ok()) return SetStatusError(res, after.status());
    StatusOr<int64_t> limit = IntParam(req, "limit", 1000, 1, 100000);
    if (!limit.ok()) return SetStatusError(res, limit.status());
    f.after_id = *after;
    f.limit = static_cast<int>(*limit);
    SetJson(res, 200, svc.JobsJson(f));
  });
}

// One job, /api/v1/jobs/<id> (or job-<id>): read, explain, and the actions on it.
void AddJobRoutes(Router& h, Service& svc) {
  const std::string job_re = R"(/api/v1/jobs/(?:job-)?(\d{1,18}))";
  h.Get(job_re, [&svc](const http::Request& req, http::Response& res) {
    if (Status p = CheckParams(req, {}); !p.ok()) return SetStatusError(res, p);
    StatusOr<std::string> j = svc.JobJson(JobIdOf(req), true);
    if (!j.ok()) return SetStatusError(res, j.status());
    SetJson(res, 200, *j);
  });
  h.Get(job_re + "/explain", [&svc](const http::Request& req, http::Response& res) {
    StatusOr<std::string> j = svc.ExplainJson(JobIdOf(req));
    if (!j.ok()) return SetStatusError(res, j.status());
    SetJson(res, 200, *j);
  });
  h.Post(job_re + "/cancel", [&svc](const http::Request& req, http::Response& res) {
    if (!req.body.empty()) {
      if (auto b = ParseObject(req.body, {}); !b.ok()) return SetStatusError(res, b.status());
    }
    Status st = svc.Cancel(JobIdOf(req));
    if (!st.ok()) return SetStatusError(res, st);
    StatusOr<std::string> j = svc.JobJson(JobIdOf(req), false);
    SetJson(res, 200, j.ok() ? *j : "{}");
  });
  h.Post(job_re + "/complete", [&svc](const http::Request& req, http::Response& res) {
    ExitReport report;
    bool with_report = false;
    if (!req.body.empty()) {
      StatusOr<json> b = ParseObject(req.body, {"exit_code", "signal", "log", "node"});
      if (!b.ok()) return SetStatusError(res, b.status());
      StatusOr<bool> r = ParseExitReport(*b, &report);
      if (!r.ok()) return SetStatusError(res, r.status());
      with_report = *r;
    }
    Status st = with_report ? svc.Complete(JobIdOf(req), report) : svc.Complete(JobIdOf(req));
    if (!st.ok()) return SetStatusError(res, st);
    StatusOr<std::string> j = svc.JobJson(JobIdOf(req), false);
    SetJson(res, 200, j.ok() ? *j : "{}");
  });

  // A running job's log, diagnosed now (Service::ReportLog).
  h.Post(job_re + "/report", [&svc](const http::Request& req, http::Response& res) {
    StatusOr<json> b = ParseObject(req.body, {"log", "node"});
    if (!b.ok()) return SetStatusError(res, b.status());
    ExitReport report;
    StatusOr<bool> r = ParseExitReport(*b, &report);
    if (!r.ok()) return SetStatusError(res, r.status());
    StatusOr<std::string> out = svc.ReportLog(JobIdOf(req), report);
    if (!out.ok()) return SetStatusError(res, out.status());
    SetJson(res, 200, *out);
  });

  h.Post(job_re + "/priority", [&svc](const http::Request& req, http::Response& res) {
    StatusOr<json> b = ParseObject(req.body, {"priority"});
    if (!b.ok()) return SetStatusError(res, b.status());
    if (!b->contains("priority") || !(*b)["priority"].is_number_integer() ||
        (*b)["priority"].get<int64_t>() < -1000000000 ||
        (*b)["priority"].get<int64_t>() > 1000000000) {
      return SetStatusError(
          res, InvalidArgumentError("request body: priority: expected an integer in [-1e9, 1e9]"));
    }
    Status st = svc.SetPriority(JobIdOf(req), (*b)["priority"].get<int>());
    if (!st.ok()) return SetStatusError(res, st);
    StatusOr<std::string> j = svc.JobJson(JobIdOf(req), false);
    SetJson(res, 200, j.ok() ? *j : "{}");
  });
}

// A node's state: drain and resume, and the health reports of nodes and their parts.
void AddNodeStateRoutes(Router& h, Service& svc) {
  for (bool drain : {true, false}) {
    h.Post(std::string(R"(/api/v1/nodes/([A-Za-z0-9_.\-]{1,128})/)") + (drain ? "drain" : "resume"),
           [&svc, drain](const http::Request& req, http::Response& res) {
             std::string reason;
             if (!req.body.empty()) {
               StatusOr<json> b = ParseObject(req.body, {"reason"});
               if (!b.ok()) return SetStatusError(res, b.status());
               if (b->contains("reason")) {
                 if (!(*b)["reason"].is_string()) {
                   return SetStatusError(
                       res, InvalidArgumentError("request body: reason: expected a string"));
                 }
                 reason = (*b)["reason"].get<std::string>();
               }
             }
             const std::string node = req.matches[1].str();
             Status st = svc.SetDrained(node, drain, reason);
             if (!st.ok()) return SetStatusError(res, st);
             SetJson(res, 200, json{{"node", node}, {"drained", drain}}.dump());
           });
  }

  h.Post("/api/v1/health", [&svc](const http::Request& req, http::Response& res) {
    StatusOr<json> b = ParseObject(req.body, {"node", "component", "index", "health", "reason"});
    if (!b.ok()) return SetStatusError(res, b.status());
    const json& j = *b;
    for (const char* k : {"node", "component", "health"}) {
      if (!j.contains(k) || !j[k].is_string()) {
        return SetStatusError(
            res, InvalidArgumentError(std::string("request body: ") + k + ": required, a string"));
      }
    }
    if (j.contains("reason") && !j["reason"].is_string()) {
      return SetStatusError(res, InvalidArgumentError("request body: reason: expected a string"));
    }
    int index = 0;
    if (j.contains("index")) {
      if (!j["index"].is_number_integer() || j["index"].get<int64_t>() < 0 ||
          j["index"].get<int64_t>() > 1024) {
        return SetStatusError(
            res, InvalidArgumentError("request body: index: expected an integer in [0, 1024]"));
      }
      index = j["index"].get<int>();
    } else if (j["component"] != "node") {
      return SetStatusError(
          res, InvalidArgumentError("request body: index: required for a gpu, nic or nvlink"));
    }
    Status st = svc.ReportHealth(j["component"].get<std::string>(), j["node"].get<std::string>(),
                                 index, j["health"].get<std::string>(), j.value("reason", ""));
    if (!st.ok()) return SetStatusError(res, st);
    SetJson(res, 200, json{{"status", "recorded"}}.dump());
  });
}

// A node's own topology, as `toposched agent` sends it; and the topology the scheduler uses.
void AddNodeTopologyRoutes(Router& h, Service& svc) {
  const std::string node_topology = R"(/api/v1/nodes/([A-Za-z0-9_.\-]{1,128})/topology)";
  h.Post(node_topology, [&svc](const http::Request& req, http::Response& res) {
    StatusOr<json> b = ParseObject(req.body, {"topology", "source"});
    if (!b.ok()) return SetStatusError(res, b.status());
    const json& j = *b;
    if (!j.contains("topology") || !j["topology"].is_object()) {
      return SetStatusError(
          res, InvalidArgumentError("request body: topology: required, an object (what "
                                    "`toposched topo discover --to json` writes)"));
    }
    std::string source;
    if (j.contains("source")) {
      if (!j["source"].is_string() || j["source"].get_ref<const std::string&>().size() > 256) {
        return SetStatusError(
            res, InvalidArgumentError("request body: source: expected a string of at most 256 "
                                      "bytes"));
      }
      source = j["source"].get<std::string>();
    }
    const std::string node = req.matches[1].str();
    Status st = svc.ReportTopology(node, j["topology"].dump(), source);
    if (!st.ok()) return SetStatusError(res, st);
    SetJson(res, 200, json{{"node", node}, {"status", "recorded"}}.dump());
  });
  h.Get(node_topology, [&svc](const http::Request& req, http::Response& res) {
    if (Status p = CheckParams(req, {}); !p.ok()) return SetStatusError(res, p);
    StatusOr<std::string> r = svc.NodeTopologyJson(req.matches[1].str());
    if (!r.ok()) return SetStatusError(res, r.status());
    SetJson(res, 200, std::move(r).value());
  });
}

// The scheduling pass on demand, and the cluster-wide reads: nodes, topology, events.
void AddClusterRoutes(Router& h, Service& svc) {
  h.Post("/api/v1/schedule", [&svc](const http::Request& req, http::Response& res) {
    if (!req.body.empty()) {
      if (auto b = ParseObject(req.body, {}); !b.ok()) return SetStatusError(res, b.status());
    }
    StatusOr<std::vector<int64_t>> r = svc.RunPass();
    if (!r.ok()) return SetStatusError(res, r.status());
    SetJson(res, 200, json{{"started", *r}}.dump());
  });

  h.Get("/api/v1/nodes", [&svc](const http::Request& req, http::Response& res) {
    if (Status p = CheckParams(req, {}); !p.ok()) return SetStatusError(res, p);
    SetJson(res, 200, svc.NodesJson());
  });
  h.Get("/api/v1/topology", [&svc](const http::Request&, http::Response& res) {
    SetJson(res, 200, svc.TopologyJson());
  });
  h.Get("/api/v1/events", [&svc](const http::Request& req, http::Response& res) {
    if (Status p = CheckParams(req, {"after", "limit", "job"}); !p.ok()) {
      return SetStatusError(res, p);
    }
    StatusOr<int64_t> after = IntParam(req, "after", 0, 0, INT64_MAX);
    if (!after.ok()) return SetStatusError(res, after.status());
    StatusOr<int64_t> limit = IntParam(req, "limit", 1000, 1, 100000);
    if (!limit.ok()) return SetStatusError(res, limit.status());
    std::string job = req.has_param("job") ? req.get_param_value("job") : "";
    if (!job.empty() && job.rfind("job-", 0) != 0) job = "job-" + job;
    SetJson(res, 200, svc.EventsJson(*after, static_cast<int>(*limit), job));
  });
}

}  // namespace

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnimplemented:
      return 501;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
    case StatusCode::kDataLoss:
      return 500;
  }
  return 500;
}

std::string ErrorCodeName(StatusCode code) {
  std::string s = StatusCodeName(code);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsLoopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

Status ServerOptions::Validate() const {
  if (host.empty()) return InvalidArgumentError("listen host is empty");
  if (port < 0 || port > 65535) return InvalidArgumentError("port out of range");
  if (!IsLoopback(host) && token.empty()) {
    return InvalidArgumentError("listening on " + host +
                                " (beyond loopback) needs a bearer token (--token-file)");
  }
  if (!agent_token.empty() && agent_token == token) {
    return InvalidArgumentError("the agents' token must differ from the bearer token");
  }
  if (max_body_bytes < 1024) return InvalidArgumentError("max_body_bytes must be >= 1024");
  if (read_timeout_ms < 1 || write_timeout_ms < 1) {
    return InvalidArgumentError("timeouts must be >= 1 ms");
  }
  if (threads < 1 || threads > 1024) return InvalidArgumentError("threads must be in [1, 1024]");
  if (max_connections < 1 || max_connections > 65536) {
    return InvalidArgumentError("max_connections must be in [1, 65536]");
  }
  if (extender_tls.enabled()) {
    if (!extender) return InvalidArgumentError("an extender listener without the extender");
    if (extender_tls.key_file.empty() || extender_tls.client_ca_file.empty()) {
      return InvalidArgumentError(
          "the extender listener needs a certificate, its key and the CA of its clients "
          "(--extender-tls-cert, --extender-tls-key, --extender-client-ca)");
    }
    if (extender_tls.host.empty()) return InvalidArgumentError("extender listen host is empty");
    if (extender_tls.port < 0 || extender_tls.port > 65535) {
      return InvalidArgumentError("extender port out of range");
    }
  }
  return OkStatus();
}

Server::Server(Service& service, Options options)
    : service_(&service), options_(std::move(options)) {}

Server::~Server() { Stop(); }

void Server::Stop() {
  if (tls_) tls_->Stop();
  if (http_) http_->Stop();
}

void Server::Wait() {
  if (http_) http_->Wait();
}

void Router::Add(std::string method, const std::string& pattern, http::Handler fn) {
  routes_.push_back({std::move(method), std::regex(pattern), std::move(fn)});
}

bool Router::Dispatch(http::Request& req, http::Response& res) const {
  // HEAD is GET without the body (the listener leaves the body out).
  const std::string& method = req.method == "HEAD" ? std::string("GET") : req.method;
  for (const Route& r : routes_) {
    if (r.method == method && std::regex_match(req.path, req.matches, r.pattern)) {
      r.fn(req, res);
      return true;
    }
  }
  return false;
}

http::ListenerOptions Server::ListenerOptionsFor(const std::string& name) const {
  http::ListenerOptions lo;
  lo.name = name;
  lo.host = options_.host;
  lo.port = options_.port;
  lo.max_body_bytes = options_.max_body_bytes;
  lo.read_timeout_ms = options_.read_timeout_ms;
  lo.write_timeout_ms = options_.write_timeout_ms;
  lo.max_connections = options_.max_connections;
  lo.workers = options_.threads;
  lo.log_refusals = options_.log_requests;
  return lo;
}

StatusOr<std::unique_ptr<Server>> Server::Start(Service& service, Options options) {
  RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<Server> s(new Server(service, std::move(options)));
  s->Routes();
  Server* self = s.get();
  StatusOr<std::unique_ptr<http::Listener>> l = http::Listener::Start(
      s->ListenerOptionsFor("api"),
      [self](http::Request& req, http::Response& res) { self->Handle(req, res); });
  if (!l.ok()) return l.status();
  {
    std::lock_guard<std::mutex> lk(s->listeners_mu_);
    s->http_ = std::move(l).value();
  }
  s->port_ = s->http_->port();
  spdlog::info("msg=listening host={} port={}", s->options_.host, s->port_);
  if (s->options_.extender_tls.enabled()) RETURN_IF_ERROR(s->StartExtenderTls());
  return s;
}

// The refusal of a request for its credentials, or "" when it may go on.
std::string Server::Refusal(const http::Request& req) const {
  const bool mutating = req.method != "GET" && req.method != "HEAD";
  // Every change needs the token here, the extender verbs included (kube-scheduler, which
  // cannot send one, uses the extender listener with its client certificate).
  if (!mutating && IsLoopback(options_.host)) return "";
  // The dashboard's page and scripts hold no cluster data: a browser loads them without a
  // token, and the page then reads the API with the token it is given.
  if (!mutating && FindWebAsset(req.path) != nullptr) return "";
  const std::string& token = options_.token;
  const std::string auth = req.get_header_value("Authorization");
  const std::string prefix = "bearer ";  // the scheme is case-insensitive (RFC 7235, 2.1)
  if (token.empty()) {
    return "this server has no token configured, so it refuses changes (start it with "
           "--token-file)";
  }
  if (auth.size() < prefix.size() || ToLower(auth.substr(0, prefix.size())) != prefix) {
    std::string refused = "missing bearer token (Authorization: Bearer <token>)";
    // kube-scheduler cannot send one: say where its verbs are served.
    if (req.path.rfind("/extender/", 0) == 0 && req.path != "/extender/pod-deleted") {
      refused +=
          "; kube-scheduler calls the extender listener instead (serve --extender-listen, "
          "client certificates: docs/kubernetes.md)";
    }
    return refused;
  }
  const std::string presented = auth.substr(prefix.size());
  if (!options_.agent_token.empty() && TokenMatches(presented, options_.agent_token)) {
    static const std::regex kAgentRoute(R"(/api/v1/nodes/[A-Za-z0-9_.\-]{1,128}/topology)");
    if (req.method == "POST" && std::regex_match(req.path, kAgentRoute)) return "";
    return "the node agents' token may only send a node's topology (POST "
           "/api/v1/nodes/<name>/topology)";
  }
  if (!TokenMatches(presented, token)) return "wrong bearer token";
  return "";
}

// Every request of the main listener, its head and body complete and within their limits (the
// listener answers 413, 431 and 503 itself): authentication, the route, one log line. The body
// of a refused request was read whole, so nothing of it can be taken for another request.
bool Server::RedirectToLeader(const http::Request& req, http::Response& res) const {
  if (!options_.replica || req.method == "GET" || req.method == "HEAD") return false;
  const ReplicaStatus rs = options_.replica();
  if (rs.leader) return false;
  if (rs.leader_url.empty()) {
    SetError(res, 503, "no_leader",
             "this daemon is a standby and no leader is elected yet: retry shortly");
    // A takeover completes within one lease TTL; a client polls at 1 s meanwhile.
    res.set_header("Retry-After", "1");
    return true;
  }
  std::string query;
  for (const auto& [k, v] : req.params) {
    query += (query.empty() ? "?" : "&") + httplib::detail::encode_query_param(k) + "=" +
             httplib::detail::encode_query_param(v);
  }
  const std::string location = rs.leader_url + req.path + query;
  SetError(res, 307, "not_leader",
           "this daemon is a standby: send changes to the leader at " + rs.leader_url);
  res.set_header("Location", location);
  return true;
}

void Server::Handle(http::Request& req, http::Response& res) const {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    if (options_.replica) {
      // Set before the answer is built: what it shows includes at least this input.
      res.set_header("X-Toposched-Applied-Seq", std::to_string(service_->applied_seq()));
      if (options_.replica().stale) res.set_header("X-Toposched-Stale", "true");
    }
    if (const std::string refused = Refusal(req); !refused.empty()) {
      SetErrorRefused(res, refused);
    } else if (RedirectToLeader(req, res)) {
    } else if (!routes_.Dispatch(req, res)) {
      SetError(res, 404, "not_found", "no route " + req.method + " " + req.path);
    }
  } catch (const std::exception& e) {
    res = http::Response{};
    SetError(res, 500, "internal", e.what());
  }
  if (options_.log_requests) {
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    spdlog::info(
        "msg=request method={} path={} status={} remote={}:{} req_bytes={} resp_bytes={} "
        "duration_us={}",
        req.method, req.path, res.status, req.remote_addr, req.remote_port, req.body.size(),
        res.body.size(), us);
  }
}

// The listeners' own figures, in Prometheus text: open connections and the refusals of their
// limits (the connection limit, the read timeout, the size limits).
std::string Server::ListenerMetrics() const {
  std::vector<std::pair<std::string, http::Listener::Stats>> all;
  {
    // /metrics can be served before Start has stored the listeners.
    std::lock_guard<std::mutex> lk(listeners_mu_);
    if (http_) all.emplace_back("api", http_->stats());
    if (tls_) all.emplace_back("extender", tls_->stats());
  }
  std::string out =
      "# HELP toposched_http_connections_open Connections open now, per listener.\n"
      "# TYPE toposched_http_connections_open gauge\n";
  for (const auto& [name, st] : all) {
    out += "toposched_http_connections_open{listener=\"" + name + "\"} " + std::to_string(st.open) +
           "\n";
  }
  out +=
      "# HELP toposched_http_refused_total Connections or requests refused by a listener's "
      "limits: connection_limit (503), timeout (head or body not in time), too_large (413, "
      "431).\n"
      "# TYPE toposched_http_refused_total counter\n";
  for (const auto& [name, st] : all) {
    const std::pair<const char*, uint64_t> reasons[] = {{"connection_limit", st.refused_over_limit},
                                                        {"timeout", st.timed_out},
                                                        {"too_large", st.too_large}};
    for (const auto& [reason, n] : reasons) {
      out += "toposched_http_refused_total{listener=\"" + name + "\",reason=\"" + reason + "\"} " +
             std::to_string(n) + "\n";
    }
  }
  return out;
}

Status Server::StartExtenderTls() {
  const ServerOptions::ExtenderTls& t = options_.extender_tls;
  for (const std::string* f : {&t.cert_file, &t.key_file, &t.client_ca_file}) {
    if (::access(f->c_str(), R_OK) != 0) {
      return InvalidArgumentError("extender listener: cannot read " + *f);
    }
  }
  http::ListenerOptions lo = ListenerOptionsFor("extender");
  lo.host = t.host;
  lo.port = t.port;
  lo.workers = 8;
  lo.cert_file = t.cert_file;
  lo.key_file = t.key_file;
  lo.client_ca_file = t.client_ca_file;
  auto ext = options_.extender;
  const bool log_requests = options_.log_requests;
  // The client certificate is the credential (checked in the handshake): no bearer token here.
  StatusOr<std::unique_ptr<http::Listener>> l =
      http::Listener::Start(lo, [ext, log_requests](http::Request& req, http::Response& res) {
        static const std::regex verbs(R"(/extender/(filter|prioritize|bind|preempt))");
        if (req.method == "POST" && std::regex_match(req.path, req.matches, verbs)) {
          StatusOr<std::string> r = ext(req.matches[1].str(), req.body);
          if (r.ok()) {
            SetJson(res, 200, std::move(r).value());
          } else {
            SetStatusError(res, r.status());
          }
        } else {
          SetError(res, 404, "not_found",
                   "no route " + req.method + " " + req.path +
                       " (this listener serves POST /extender/{filter,prioritize,bind,preempt})");
        }
        if (log_requests) {
          spdlog::info("msg=request listener=extender method={} path={} status={}", req.method,
                       req.path, res.status);
        }
      });
  if (!l.ok()) return l.status().WithPrefix("extender listener");
  {
    std::lock_guard<std::mutex> lk(listeners_mu_);
    tls_ = std::move(l).value();
  }
  extender_port_ = tls_->port();
  spdlog::info("msg=listening listener=extender tls=client-certificate host={} port={}", t.host,
               extender_port_);
  return OkStatus();
}

void Server::Routes() {
  Router& h = routes_;
  Service& svc = *service_;

  AddDashboardRoutes(h);

  h.Get("/healthz", [&svc](const http::Request&, http::Response& res) {
    Status st = svc.health();
    if (!st.ok()) return SetStatusError(res, st);
    SetJson(res, 200,
            json{{"status", "ok"},
                 {"applied_seq", svc.applied_seq()},
                 {"durable_seq", svc.durable_seq()}}
                .dump());
  });

  // Ready to take changes: the leader (a daemon alone always is) with no failed commit.
  h.Get("/readyz", [this, &svc](const http::Request&, http::Response& res) {
    const ReplicaStatus rs = options_.replica ? options_.replica() : ReplicaStatus{};
    const Status st = svc.health();
    json body{{"status", st.ok() && rs.leader ? "ready" : "not_ready"},
              {"leader", rs.leader},
              {"leader_url", rs.leader_url},
              {"applied_seq", svc.applied_seq()}};
    if (!st.ok()) body["error"] = st.message();
    SetJson(res, st.ok() && rs.leader ? 200 : 503, body.dump());
  });

  h.Get("/metrics", [this, &svc](const http::Request&, http::Response& res) {
    res.status = 200;
    res.set_content(svc.MetricsText() + ListenerMetrics() +
                        (options_.extra_metrics ? options_.extra_metrics() : std::string()),
                    "text/plain; version=0.0.4");
  });

  AddJobListRoutes(h, svc);
  AddJobRoutes(h, svc);
  AddNodeStateRoutes(h, svc);
  AddNodeTopologyRoutes(h, svc);
  AddClusterRoutes(h, svc);

  // Kubernetes scheduler extender verbs, served by the extender given in the options.
  if (options_.extender) {
    auto ext = options_.extender;
    h.Post(R"(/extender/(filter|prioritize|bind|preempt|pod-deleted))",
           [ext](const http::Request& req, http::Response& res) {
             StatusOr<std::string> r = ext(req.matches[1].str(), req.body);
             if (!r.ok()) return SetStatusError(res, r.status());
             SetJson(res, 200, std::move(r).value());
           });
  }
}

}  // namespace toposched::api
