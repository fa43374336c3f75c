// The `toposched` client side of the daemon's REST API, shared by the client subcommands and
// `diagnose --server`: where the daemon is, its token, one call with retries through a daemon
// restart.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace toposched::cli {

inline constexpr const char* kDefaultServer = "http://127.0.0.1:8470";

struct ClientArgs {
  std::string server;
  std::string token_file;
  bool json = false;
};

struct Reply {
  int status = 0;
  nlohmann::json body;
};

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(const std::string& s);
// --server, else $TOPOSCHED_SERVER, else kDefaultServer.
std::string ServerUrl(const ClientArgs& a);
// The token of --token-file (else $TOPOSCHED_TOKEN_FILE); "" when neither is given.
StatusOr<std::string> Token(const ClientArgs& a);
// One request; retries connection failures (not HTTP errors) for about 5 s so that a client
// riding out a daemon restart gets through. Requests are idempotent or carry a key. An HTTP
// error is FailedPrecondition with the server's message, status and code.
StatusOr<Reply> Call(const ClientArgs& a, const std::string& method, const std::string& path,
                     const std::string& body = "",
                     const httplib::Headers& extra = httplib::Headers());
// "/api/v1/jobs/<id>" for "17" or "job-17".
std::string JobPath(const std::string& job);

}  // namespace toposched::cli
