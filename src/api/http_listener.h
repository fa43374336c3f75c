// One HTTP/1.1 listener (plain, or HTTPS that requires a client certificate) that a few slow or
// idle clients cannot starve. Connections are served asynchronously (Boost.Beast over Asio), so
// a connection costs a socket and a buffer, not a thread, while it is read; only a request whose
// head and body have fully arrived, within their limits, reaches a worker thread.
//
// Limits, each answered with a JSON error body {"code","message"} naming the limit:
// - the request head must arrive whole within `read_timeout_ms` of the connection's start
//   (`keep_alive_timeout_ms` after the previous answer on a kept-alive connection), and must be
//   at most `max_header_bytes`: 431;
// - the body (Content-Length or chunked) must arrive within `read_timeout_ms` of its head and
//   is held to `max_body_bytes` while it is read: 413;
// - at most `max_connections` connections are served; beyond it a connection is told 503 at
//   once, except `GET /healthz`, which is still answered;
// - at most `keep_alive_max_requests` requests per connection; every answer must be written
//   within `write_timeout_ms`.
// A refused request (413, 431, 400, 503) closes its connection, after reading and dropping what
// the client still sends for a short while, so that the client reads the answer and nothing of
// the refused request is ever parsed as another request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <string>

#include "core/status.h"

namespace toposched::api::http {

struct CaseLess {
  bool operator()(const std::string& a, const std::string& b) const;
};
using Headers = std::multimap<std::string, std::string, CaseLess>;

struct Request {
  std::string method;                              // as sent: "GET", "POST", ...
  std::string path;                                // percent-decoded, without the query
  std::multimap<std::string, std::string> params;  // the query, decoded
  Headers headers;
  std::string body;
  std::string remote_addr;
  int remote_port = 0;
  std::smatch matches;  // set by the router: the route's pattern against `path`

  bool has_header(const std::string& name) const { return headers.count(name) > 0; }
  std::string get_header_value(const std::string& name) const;
  bool has_param(const std::string& name) const { return params.count(name) > 0; }
  std::string get_param_value(const std::string& name) const;
};

struct Response {
  int status = 200;
  std::string body;
  Headers headers;

  void set_content(std::string content, const std::string& content_type);
  void set_header(const std::string& name, const std::string& value);
  std::string get_header_value(const std::string& name) const;
};

// The JSON error body every refusal carries: {"code": code, "message": message}.
std::string ErrorBody(const std::string& code, const std::string& message);

struct ListenerOptions {
  std::string name = "api";  // in log lines: listener=<name>
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 16 << 10;
  int read_timeout_ms = 5000;
  int write_timeout_ms = 5000;
  int keep_alive_timeout_ms = 5000;
  int keep_alive_max_requests = 10000;
  int max_connections = 512;
  int workers = 16;          // threads that run request handlers
  bool log_refusals = true;  // a log line per refused request (413, 431, 400, 503)
  // HTTPS when `cert_file` is set: clients must present a certificate signed by
  // `client_ca_file`; the handshake fails otherwise, before any request is read.
  std::string cert_file, key_file, client_ca_file;
  Status Validate() const;
};

// Runs on a worker thread for every request whose head and body arrived within the limits.
using Handler = std::function<void(Request&, Response&)>;

class Listener {
 public:
  // Binds (Unavailable when the address cannot be bound; InvalidArgument for bad options or TLS
  // files that cannot be loaded) and serves on threads of its own; returns once it accepts.
  static StatusOr<std::unique_ptr<Listener>> Start(ListenerOptions options, Handler handler);
  ~Listener();  // Stop()
  int port() const;
  // Stops accepting, closes every connection and waits for running handlers.
  void Stop();
  // Blocks until Stop() is called from another thread.
  void Wait();

  struct Stats {
    uint64_t accepted = 0;
    uint64_t refused_over_limit = 0;  // 503 for --max-connections
    uint64_t timed_out = 0;           // head or body not in time
    uint64_t too_large = 0;           // 413 and 431
    int open = 0;                     // connections open now
  };
  Stats stats() const;

  struct Impl;

 private:
  explicit Listener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace toposched::api::http
