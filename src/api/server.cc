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
#include "core/strings.h"

namespace toposched::api {

namespace {

using json = nlohmann::ordered_json;

thread_local std::chrono::steady_clock::time_point t_request_start;
// A request refused for its credentials whose body is still on the connection: the pre-routing
// handler lets the HTTP library read (and so consume) the body, and the route refuses it here
// instead. Answering before the body is read would leave it to be parsed as the next request
// (request smuggling behind a proxy; the library keeps the connection open after a 401).
thread_local std::string t_refused;

// Whether the request carries a body the library will read before routing.
bool HasBody(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  const std::string n = req.get_header_value("Content-Length");
  return !n.empty() && n != "0";
}

void SetError(httplib::Response& res, int http, const std::string& code,
              const std::string& message) {
  res.status = http;
  res.set_content(json{{"code", code}, {"message", message}}.dump(-1, ' ', false,
                                                                  json::error_handler_t::replace),
                  "application/json");
}

void SetErrorRefused(httplib::Response& res, const std::string& message) {
  SetError(res, 401, "unauthorized", message);
  res.set_header("WWW-Authenticate", "Bearer");
}

// The route's answer for a request the pre-routing handler found unauthorized.
bool RefusedAfterBody(httplib::Response& res) {
  if (t_refused.empty()) return false;
  SetErrorRefused(res, t_refused);
  return true;
}

// Every route runs behind this: a request the pre-routing handler refused is answered 401 here,
// after its body was read, and the route itself never runs.
httplib::Server::Handler Guarded(httplib::Server::Handler route) {
  return [route = std::move(route)](const httplib::Request& req, httplib::Response& res) {
    if (RefusedAfterBody(res)) return;
    route(req, res);
  };
}

// A route whose body is read here, chunk by chunk, up to `max` bytes, rather than whole by the
// HTTP library: the library holds Content-Length bodies to the limit but read chunked ones
// whole. Over the limit: 413, and the rest of the body is read and dropped (up to 16 × the
// limit, then the connection is given up) so that it cannot be parsed as the next request.
httplib::Server::HandlerWithContentReader Bounded(size_t max, httplib::Server::Handler route) {
  return [max, route = std::move(route)](const httplib::Request& req, httplib::Response& res,
                                         const httplib::ContentReader& reader) {
    httplib::Request r = req;
    size_t seen = 0;
    bool over = false;
    const bool read = reader([&](const char* data, size_t n) {
      seen += n;
      if (over || r.body.size() + n > max) {
        over = true;
        r.body.clear();
        return seen <= 16 * max;
      }
      r.body.append(data, n);
      return true;
    });
    if (over || !read) {
      // !read: the library stopped first (its own limit, or a broken chunk stream).
      SetError(res, 413, "payload_too_large",
               "request body over the server's limit of " + std::to_string(max) +
                   " bytes (or a chunked body that could not be read)");
      return;
    }
    route(r, res);
  };
}

void SetStatusError(httplib::Response& res, const Status& s) {
  SetError(res, HttpStatusOf(s.code()), ErrorCodeName(s.code()), s.message());
}

void SetJson(httplib::Response& res, int http, std::string body) {
  res.status = http;
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
Status CheckParams(const httplib::Request& req, const std::set<std::string>& allowed) {
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

StatusOr<int64_t> IntParam(const httplib::Request& req, const std::string& name, int64_t def,
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

int64_t JobIdOf(const httplib::Request& req) { return std::stoll(req.matches[1].str()); }

// Debian's cpp-httplib (0.11) compresses a response with Brotli whenever the client accepts it,
// at Brotli's slowest setting: measured here, the 386 KB topology of a 4,096-node cluster took
// 0.80 s to serve with `br` against 0.027 s with gzip and 0.022 s plain, and every browser asks
// for `br`. So "br" is taken out of Accept-Encoding before the library sees it; gzip stays. The
// library keeps the request as a non-const object and hands it on by const reference.
void DropBrotli(const httplib::Request& creq) {
  auto& headers = const_cast<httplib::Request&>(creq).headers;
  auto it = headers.find("Accept-Encoding");
  if (it == headers.end() || it->second.find("br") == std::string::npos) return;
  // The library picks Brotli on any "br" in the value and gzip on any "gzip" (substring
  // matches): so the value becomes "gzip" when gzip is accepted at all, else nothing.
  it->second = it->second.find("gzip") != std::string::npos ? "gzip" : "";
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
  if (max_body_bytes < 1024) return InvalidArgumentError("max_body_bytes must be >= 1024");
  if (read_timeout_ms < 1 || write_timeout_ms < 1) {
    return InvalidArgumentError("timeouts must be >= 1 ms");
  }
  if (threads < 1 || threads > 1024) return InvalidArgumentError("threads must be in [1, 1024]");
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
    : service_(&service), options_(std::move(options)), http_(new httplib::Server) {}

Server::~Server() { Stop(); }

void Server::Stop() {
  if (tls_) tls_->stop();
  if (tls_thread_.joinable()) tls_thread_.join();
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

void Server::Wait() {
  if (thread_.joinable()) thread_.join();
}

StatusOr<std::unique_ptr<Server>> Server::Start(Service& service, Options options) {
  RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<Server> s(new Server(service, std::move(options)));
  httplib::Server& h = *s->http_;
  const int threads = s->options_.threads;
  h.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  h.set_payload_max_length(s->options_.max_body_bytes);
  h.set_read_timeout(std::chrono::milliseconds(s->options_.read_timeout_ms));
  h.set_write_timeout(std::chrono::milliseconds(s->options_.write_timeout_ms));
  h.set_tcp_nodelay(true);
  h.set_keep_alive_timeout(5);
  h.set_keep_alive_max_count(10000);
  s->Routes();
  const int port =
      s->options_.port == 0
          ? h.bind_to_any_port(s->options_.host)
          : (h.bind_to_port(s->options_.host, s->options_.port) ? s->options_.port : -1);
  if (port <= 0) {
    return Status(StatusCode::kUnavailable,
                  "cannot listen on " + s->options_.host + ":" + std::to_string(s->options_.port));
  }
  s->port_ = port;
  s->thread_ = std::thread([hp = s->http_.get()] { hp->listen_after_bind(); });
  for (int i = 0; i < 5000 && !h.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!h.is_running()) return InternalError("HTTP server did not start");
  spdlog::info("msg=listening host={} port={}", s->options_.host, port);
  if (s->options_.extender_tls.enabled()) RETURN_IF_ERROR(s->StartExtenderTls());
  return s;
}

Status Server::StartExtenderTls() {
  const ServerOptions::ExtenderTls& t = options_.extender_tls;
  for (const std::string* f : {&t.cert_file, &t.key_file, &t.client_ca_file}) {
    if (::access(f->c_str(), R_OK) != 0) {
      return InvalidArgumentError("extender listener: cannot read " + *f);
    }
  }
  auto tls = std::make_unique<httplib::SSLServer>(t.cert_file.c_str(), t.key_file.c_str(),
                                                  t.client_ca_file.c_str());
  if (!tls->is_valid()) {
    return InvalidArgumentError("extender listener: the certificate " + t.cert_file + ", key " +
                                t.key_file + " or client CA " + t.client_ca_file +
                                " could not be loaded (PEM files expected)");
  }
  httplib::Server& h = *tls;
  h.new_task_queue = [] { return new httplib::ThreadPool(8); };
  h.set_payload_max_length(options_.max_body_bytes);
  h.set_read_timeout(std::chrono::milliseconds(options_.read_timeout_ms));
  h.set_write_timeout(std::chrono::milliseconds(options_.write_timeout_ms));
  h.set_tcp_nodelay(true);
  h.set_keep_alive_timeout(5);
  h.set_keep_alive_max_count(10000);  // a TLS handshake per connection, not per few requests
  // The client certificate is the credential (checked in the handshake): no bearer token here.
  h.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    t_request_start = std::chrono::steady_clock::now();
    t_refused.clear();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  const bool log_requests = options_.log_requests;
  h.set_logger([log_requests](const httplib::Request& req, const httplib::Response& res) {
    if (log_requests) {
      spdlog::info("msg=request listener=extender method={} path={} status={}", req.method,
                   req.path, res.status);
    }
  });
  auto ext = options_.extender;
  h.Post(R"(/extender/(filter|prioritize|bind|preempt))",
         Bounded(options_.max_body_bytes,
                 Guarded([ext](const httplib::Request& req, httplib::Response& res) {
                   StatusOr<std::string> r = ext(req.matches[1].str(), req.body);
                   if (!r.ok()) return SetStatusError(res, r.status());
                   SetJson(res, 200, std::move(r).value());
                 })));
  h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404) {
      SetError(res, 404, "not_found",
               "no route " + req.method + " " + req.path +
                   " (this listener serves POST /extender/{filter,prioritize,bind,preempt})");
    }
  });
  const int port =
      t.port == 0 ? h.bind_to_any_port(t.host) : (h.bind_to_port(t.host, t.port) ? t.port : -1);
  if (port <= 0) {
    return Status(StatusCode::kUnavailable,
                  "cannot listen on " + t.host + ":" + std::to_string(t.port) + " (extender)");
  }
  extender_port_ = port;
  tls_ = std::move(tls);
  tls_thread_ = std::thread([hp = tls_.get()] { hp->listen_after_bind(); });
  for (int i = 0; i < 5000 && !h.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!h.is_running()) return InternalError("extender HTTPS listener did not start");
  spdlog::info("msg=listening listener=extender tls=client-certificate host={} port={}", t.host,
               port);
  return OkStatus();
}

void Server::Routes() {
  httplib::Server& h = *http_;
  Service& svc = *service_;
  const bool loopback = IsLoopback(options_.host);
  const std::string token = options_.token;
  const bool log_requests = options_.log_requests;
  const size_t max_body = options_.max_body_bytes;

  h.set_pre_routing_handler([loopback, token](const httplib::Request& req, httplib::Response& res) {
    t_request_start = std::chrono::steady_clock::now();
    t_refused.clear();
    DropBrotli(req);
    const bool mutating = req.method != "GET" && req.method != "HEAD";
    // Every change needs the token here, the extender verbs included (kube-scheduler, which
    // cannot send one, uses the extender listener with its client certificate).
    if (!mutating && loopback) return httplib::Server::HandlerResponse::Unhandled;
    // The dashboard's page and scripts hold no cluster data: a browser loads them without a
    // token, and the page then reads the API with the token it is given.
    if (!mutating && FindWebAsset(req.path) != nullptr) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "bearer ";  // the scheme is case-insensitive (RFC 7235, 2.1)
    std::string refused;
    if (token.empty()) {
      refused =
          "this server has no token configured, so it refuses changes (start it with "
          "--token-file)";
    } else if (auth.size() < prefix.size() || ToLower(auth.substr(0, prefix.size())) != prefix) {
      refused = "missing bearer token (Authorization: Bearer <token>)";
      // kube-scheduler cannot send one: say where its verbs are served.
      if (req.path.rfind("/extender/", 0) == 0 && req.path != "/extender/pod-deleted") {
        refused +=
            "; kube-scheduler calls the extender listener instead (serve --extender-listen, "
            "client certificates: docs/kubernetes.md)";
      }
    } else if (!TokenMatches(auth.substr(prefix.size()), token)) {
      refused = "wrong bearer token";
    } else {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (HasBody(req)) {
      t_refused = refused;  // answered by the route once the body is read (RefusedAfterBody)
      return httplib::Server::HandlerResponse::Unhandled;
    }
    SetErrorRefused(res, refused);
    return httplib::Server::HandlerResponse::Handled;
  });

  h.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        // An unauthorized request to no route: still 401 (its body was read).
        if (res.status == 404 && !t_refused.empty()) {
          SetErrorRefused(res, t_refused);
          return httplib::Server::HandlerResponse::Handled;
        }
        switch (res.status) {
          case 404:
            SetError(res, 404, "not_found", "no route " + req.method + " " + req.path);
            break;
          case 413:
            SetError(res, 413, "payload_too_large", "request body over the server's limit");
            break;
          case 400:
            SetError(res, 400, "bad_request", "malformed HTTP request");
            break;
          default:
            SetError(res, res.status, "error", "HTTP " + std::to_string(res.status));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));

  h.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SetError(res, 500, "internal", what);
      });

  if (log_requests) {
    h.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - t_request_start)
                          .count();
      spdlog::info(
          "msg=request method={} path={} status={} remote={}:{} req_bytes={} "
          "resp_bytes={} duration_us={}",
          req.method, req.path, res.status, req.remote_addr, req.remote_port, req.body.size(),
          res.body.size(), us);
    });
  }

  // The dashboard: fixed paths, each an asset compiled into the binary (src/api/dashboard.h).
  for (const WebAsset& asset : WebAssets()) {
    std::string pattern;
    for (char c : asset.path) {
      if (c == '.') pattern += '\\';
      pattern += c;
    }
    h.Get(pattern, [&asset](const httplib::Request&, httplib::Response& res) {
      res.status = 200;
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Content-Security-Policy", std::string(kWebCsp));
      res.set_header("Referrer-Policy", "no-referrer");
      res.set_content(asset.body.data(), asset.body.size(), std::string(asset.content_type));
    });
  }

  h.Get("/healthz", Guarded([&svc](const httplib::Request&, httplib::Response& res) {
          Status st = svc.health();
          if (!st.ok()) return SetStatusError(res, st);
          SetJson(res, 200,
                  json{{"status", "ok"},
                       {"applied_seq", svc.applied_seq()},
                       {"durable_seq", svc.durable_seq()}}
                      .dump());
        }));

  h.Get("/metrics", Guarded([&svc](const httplib::Request&, httplib::Response& res) {
          res.status = 200;
          res.set_content(svc.MetricsText(), "text/plain; version=0.0.4");
        }));

  h.Post("/api/v1/jobs",
         Bounded(max_body, Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
                   if (Status p = CheckParams(req, {}); !p.ok()) return SetStatusError(res, p);
                   StatusOr<Service::SubmitResult> r =
                       svc.Submit(req.body, req.get_header_value("Idempotency-Key"));
                   if (!r.ok()) return SetStatusError(res, r.status());
                   SetJson(res, r->created ? 201 : 200,
                           json{{"id", r->id},
                                {"job_id", "job-" + std::to_string(r->id)},
                                {"created", r->created}}
                               .dump());
                 })));

  h.Get("/api/v1/jobs", Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
          if (Status p = CheckParams(req, {"state", "user", "queue", "name", "after", "limit"});
              !p.ok()) {
            return SetStatusError(res, p);
          }
          ListFilter f;
          if (req.has_param("state")) {
            StatusOr<job::JobState> st = job::ParseJobState(req.get_param_value("state"));
            if (!st.ok())
              return SetStatusError(res, st.status().WithPrefix("query parameter \"state\""));
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
        }));

  const std::string job_re = R"(/api/v1/jobs/(?:job-)?(\d{1,18}))";
  h.Get(job_re, Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
          if (Status p = CheckParams(req, {}); !p.ok()) return SetStatusError(res, p);
          StatusOr<std::string> j = svc.JobJson(JobIdOf(req), true);
          if (!j.ok()) return SetStatusError(res, j.status());
          SetJson(res, 200, *j);
        }));
  h.Get(job_re + "/explain", Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
          StatusOr<std::string> j = svc.ExplainJson(JobIdOf(req));
          if (!j.ok()) return SetStatusError(res, j.status());
          SetJson(res, 200, *j);
        }));
  h.Post(job_re + "/cancel",
         Bounded(max_body, Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
                   if (!req.body.empty()) {
                     if (auto b = ParseObject(req.body, {}); !b.ok())
                       return SetStatusError(res, b.status());
                   }
                   Status st = svc.Cancel(JobIdOf(req));
                   if (!st.ok()) return SetStatusError(res, st);
                   StatusOr<std::string> j = svc.JobJson(JobIdOf(req), false);
                   SetJson(res, 200, j.ok() ? *j : "{}");
                 })));
  h.Post(
      job_re + "/complete",
      Bounded(max_body, Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
                ExitReport report;
                bool with_report = false;
                if (!req.body.empty()) {
                  StatusOr<json> b = ParseObject(req.body, {"exit_code", "signal", "log", "node"});
                  if (!b.ok()) return SetStatusError(res, b.status());
                  StatusOr<bool> r = ParseExitReport(*b, &report);
                  if (!r.ok()) return SetStatusError(res, r.status());
                  with_report = *r;
                }
                Status st =
                    with_report ? svc.Complete(JobIdOf(req), report) : svc.Complete(JobIdOf(req));
                if (!st.ok()) return SetStatusError(res, st);
                StatusOr<std::string> j = svc.JobJson(JobIdOf(req), false);
                SetJson(res, 200, j.ok() ? *j : "{}");
              })));

  // A running job's log, diagnosed now (Service::ReportLog).
  h.Post(job_re + "/report",
         Bounded(max_body, Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
                   StatusOr<json> b = ParseObject(req.body, {"log", "node"});
                   if (!b.ok()) return SetStatusError(res, b.status());
                   ExitReport report;
                   StatusOr<bool> r = ParseExitReport(*b, &report);
                   if (!r.ok()) return SetStatusError(res, r.status());
                   StatusOr<std::string> out = svc.ReportLog(JobIdOf(req), report);
                   if (!out.ok()) return SetStatusError(res, out.status());
                   SetJson(res, 200, *out);
                 })));

  h.Post(job_re + "/priority",
         Bounded(max_body, Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
                   StatusOr<json> b = ParseObject(req.body, {"priority"});
                   if (!b.ok()) return SetStatusError(res, b.status());
                   if (!b->contains("priority") || !(*b)["priority"].is_number_integer() ||
                       (*b)["priority"].get<int64_t>() < -1000000000 ||
                       (*b)["priority"].get<int64_t>() > 1000000000) {
                     return SetStatusError(
                         res, InvalidArgumentError(
                                  "request body: priority: expected an integer in [-1e9, 1e9]"));
                   }
                   Status st = svc.SetPriority(JobIdOf(req), (*b)["priority"].get<int>());
                   if (!st.ok()) return SetStatusError(res, st);
                   StatusOr<std::string> j = svc.JobJson(JobIdOf(req), false);
                   SetJson(res, 200, j.ok() ? *j : "{}");
                 })));

  for (bool drain : {true, false}) {
    h.Post(std::string(R"(/api/v1/nodes/([A-Za-z0-9_.\-]{1,128})/)") + (drain ? "drain" : "resume"),
           Bounded(max_body,
                   Guarded([&svc, drain](const httplib::Request& req, httplib::Response& res) {
                     std::string reason;
                     if (!req.body.empty()) {
                       StatusOr<json> b = ParseObject(req.body, {"reason"});
                       if (!b.ok()) return SetStatusError(res, b.status());
                       if (b->contains("reason")) {
                         if (!(*b)["reason"].is_string()) {
                           return SetStatusError(
                               res,
                               InvalidArgumentError("request body: reason: expected a string"));
                         }
                         reason = (*b)["reason"].get<std::string>();
                       }
                     }
                     const std::string node = req.matches[1].str();
                     Status st = svc.SetDrained(node, drain, reason);
                     if (!st.ok()) return SetStatusError(res, st);
                     SetJson(res, 200, json{{"node", node}, {"drained", drain}}.dump());
                   })));
  }

  h.Post(
      "/api/v1/health",
      Bounded(
          max_body, Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
            StatusOr<json> b =
                ParseObject(req.body, {"node", "component", "index", "health", "reason"});
            if (!b.ok()) return SetStatusError(res, b.status());
            const json& j = *b;
            for (const char* k : {"node", "component", "health"}) {
              if (!j.contains(k) || !j[k].is_string()) {
                return SetStatusError(res, InvalidArgumentError(std::string("request body: ") + k +
                                                                ": required, a string"));
              }
            }
            if (j.contains("reason") && !j["reason"].is_string()) {
              return SetStatusError(
                  res, InvalidArgumentError("request body: reason: expected a string"));
            }
            int index = 0;
            if (j.contains("index")) {
              if (!j["index"].is_number_integer() || j["index"].get<int64_t>() < 0 ||
                  j["index"].get<int64_t>() > 1024) {
                return SetStatusError(
                    res,
                    InvalidArgumentError("request body: index: expected an integer in [0, 1024]"));
              }
              index = j["index"].get<int>();
            } else if (j["component"] != "node") {
              return SetStatusError(
                  res,
                  InvalidArgumentError("request body: index: required for a gpu, nic or nvlink"));
            }
            Status st =
                svc.ReportHealth(j["component"].get<std::string>(), j["node"].get<std::string>(),
                                 index, j["health"].get<std::string>(), j.value("reason", ""));
            if (!st.ok()) return SetStatusError(res, st);
            SetJson(res, 200, json{{"status", "recorded"}}.dump());
          })));

  h.Post("/api/v1/schedule",
         Bounded(max_body, Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
                   if (!req.body.empty()) {
                     if (auto b = ParseObject(req.body, {}); !b.ok())
                       return SetStatusError(res, b.status());
                   }
                   StatusOr<std::vector<int64_t>> r = svc.RunPass();
                   if (!r.ok()) return SetStatusError(res, r.status());
                   SetJson(res, 200, json{{"started", *r}}.dump());
                 })));

  h.Get("/api/v1/nodes", Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
          if (Status p = CheckParams(req, {}); !p.ok()) return SetStatusError(res, p);
          SetJson(res, 200, svc.NodesJson());
        }));
  h.Get("/api/v1/topology", Guarded([&svc](const httplib::Request&, httplib::Response& res) {
          SetJson(res, 200, svc.TopologyJson());
        }));
  h.Get("/api/v1/events", Guarded([&svc](const httplib::Request& req, httplib::Response& res) {
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
        }));

  // Kubernetes scheduler extender verbs, served by the extender given in the options.
  if (options_.extender) {
    auto ext = options_.extender;
    h.Post(R"(/extender/(filter|prioritize|bind|preempt|pod-deleted))",
           Bounded(max_body, Guarded([ext](const httplib::Request& req, httplib::Response& res) {
                     StatusOr<std::string> r = ext(req.matches[1].str(), req.body);
                     if (!r.ok()) return SetStatusError(res, r.status());
                     SetJson(res, 200, std::move(r).value());
                   })));
  }

  // Every other request with a body: its body is held to the limit too (the library would read
  // a chunked one whole before finding no route), then 401 or 404.
  const auto no_route =
      Bounded(max_body, Guarded([](const httplib::Request& req, httplib::Response& res) {
                SetError(res, 404, "not_found", "no route " + req.method + " " + req.path);
              }));
  h.Post(".*", no_route);
  h.Put(".*", no_route);
  h.Patch(".*", no_route);
  h.Delete(".*", no_route);
}

}  // namespace toposched::api
