#include "cli/client.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "core/file.h"

namespace toposched::cli {

using json = nlohmann::json;

std::string UrlEncode(const std::string& s) {
  std::string out;
  const char* hex = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string ServerUrl(const ClientArgs& a) {
  if (!a.server.empty()) return a.server;
  const char* env = std::getenv("TOPOSCHED_SERVER");
  return env != nullptr && *env != '\0' ? env : kDefaultServer;
}

StatusOr<std::string> Token(const ClientArgs& a) {
  std::string path = a.token_file;
  if (path.empty()) {
    const char* env = std::getenv("TOPOSCHED_TOKEN_FILE");
    if (env == nullptr || *env == '\0') return std::string();
    path = env;
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, 64 * 1024, "a token file"));
  std::string t = text.substr(0, text.find('\n'));
  while (!t.empty() && (t.back() == '\r' || t.back() == ' ')) t.pop_back();
  return t;
}

namespace {

// One request to `url`; retries connection failures (not HTTP errors) for about 5 s.
httplib::Result SendRetrying(const std::string& url, const std::string& method,
                             const std::string& path, const std::string& body,
                             const httplib::Headers& h) {
  httplib::Client cli(url);
  cli.set_connection_timeout(std::chrono::seconds(5));
  cli.set_tcp_nodelay(true);
  cli.set_read_timeout(std::chrono::seconds(60));
  auto send = [&]() {
    return method == "GET" ? cli.Get(path, h) : cli.Post(path, h, body, "application/json");
  };
  httplib::Result r = send();
  for (int attempt = 1; !r && attempt < 50; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    r = send();
  }
  return r;
}

// "http://host:port/a/b?c" → {"http://host:port", "/a/b?c"}; false when it is not such a URL.
bool SplitLocation(const std::string& location, std::string& base, std::string& path) {
  const size_t scheme = location.find("://");
  if (scheme == std::string::npos) return false;
  const size_t slash = location.find('/', scheme + 3);
  base = location.substr(0, slash);
  path = slash == std::string::npos ? "/" : location.substr(slash);
  return true;
}

// A standby's redirect to its leader is followed this many times (one hop is the rule; more
// means the leadership moved meanwhile).
constexpr int kMaxRedirects = 5;
// A standby that knows no leader yet says when to come back; a takeover takes about a lease TTL
// (15 s by default), so the client waits that long in all.
constexpr int kMaxNoLeaderWaitS = 20;

}  // namespace

StatusOr<Reply> Call(const ClientArgs& a, const std::string& method, const std::string& path,
                     const std::string& body, const httplib::Headers& extra) {
  std::string url = ServerUrl(a);
  ASSIGN_OR_RETURN(std::string token, Token(a));
  // The HTTP client writes without MSG_NOSIGNAL: a server that closes the connection while the
  // request is still being sent (413) must fail the call, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  if (!httplib::Client(url).is_valid()) {
    return InvalidArgumentError("--server: bad URL \"" + url + "\"");
  }
  httplib::Headers h = extra;
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  std::string target = path;
  httplib::Result r = SendRetrying(url, method, target, body, h);
  int redirects = 0, waited_s = 0;
  while (r) {
    if ((r->status == 307 || r->status == 308) && redirects < kMaxRedirects &&
        SplitLocation(r->get_header_value("Location"), url, target)) {
      ++redirects;
    } else if (r->status == 503 && r->body.find("\"no_leader\"") != std::string::npos &&
               waited_s < kMaxNoLeaderWaitS) {
      int after = 1;
      try {
        after = std::clamp(std::stoi(r->get_header_value("Retry-After")), 1, 5);
      } catch (...) {
      }
      std::this_thread::sleep_for(std::chrono::seconds(after));
      waited_s += after;
    } else {
      break;
    }
    r = SendRetrying(url, method, target, body, h);
  }
  if (!r) {
    return Status(StatusCode::kUnavailable,
                  "cannot reach " + url + ": " + httplib::to_string(r.error()));
  }
  Reply rep;
  rep.status = r->status;
  rep.body = json::parse(r->body, nullptr, false);
  if (r->status >= 400) {
    std::string code = "error", msg = r->body;
    if (rep.body.is_object()) {
      code = rep.body.value("code", code);
      msg = rep.body.value("message", msg);
    }
    return Status(StatusCode::kFailedPrecondition,
                  msg + " (HTTP " + std::to_string(r->status) + " " + code + ")");
  }
  if (rep.body.is_discarded()) return InternalError("server answered with malformed JSON");
  return rep;
}

std::string JobPath(const std::string& job) {
  std::string id = job.rfind("job-", 0) == 0 ? job.substr(4) : job;
  return "/api/v1/jobs/" + UrlEncode(id);
}

}  // namespace toposched::cli
