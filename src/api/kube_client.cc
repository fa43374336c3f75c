#include "api/kube_client.h"

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "core/strings.h"

namespace toposched::api {

bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

Status KubeApiOptions::Validate() const {
  if (!(StartsWith(server, "https://") || StartsWith(server, "http://")) ||
      server.find('/', server.find("//") + 2) != std::string::npos ||
      server.size() <= server.find("//") + 2) {
    return InvalidArgumentError("kube api: server: expected http(s)://host[:port], got \"" +
                                server + "\"");
  }
  if (timeout_ms < 1 || timeout_ms > 60000) {
    return InvalidArgumentError("kube api: timeout_ms: must be in [1, 60000]");
  }
  if (token_file.empty()) return InvalidArgumentError("kube api: token_file: empty");
  return OkStatus();
}

StatusOr<std::string> ReadKubeToken(const KubeApiOptions& options) {
  // A token is a JWT of a few KB; anything past 64 KiB is not one.
  auto text = ReadFileBounded(options.token_file, 64 * 1024, "a token file");
  if (!text.ok()) return text.status().WithPrefix("kube api");
  const std::string token(Trim(*text));
  if (token.empty()) return NotFoundError("kube api: empty token file " + options.token_file);
  return token;
}

std::unique_ptr<httplib::Client> MakeKubeClient(const KubeApiOptions& options,
                                                const std::string& token, int read_timeout_ms) {
  auto client = std::make_unique<httplib::Client>(options.server);
  if (StartsWith(options.server, "https://") && !options.ca_file.empty()) {
    client->set_ca_cert_path(options.ca_file);
    client->enable_server_certificate_verification(true);
  }
  const time_t sec = options.timeout_ms / 1000;
  const time_t usec = (options.timeout_ms % 1000) * 1000;
  client->set_connection_timeout(sec, usec);
  client->set_write_timeout(sec, usec);
  client->set_read_timeout(read_timeout_ms / 1000, (read_timeout_ms % 1000) * 1000);
  client->set_bearer_token_auth(token);
  return client;
}

std::string KubeStatusMessage(const std::string& body) {
  const nlohmann::json st = nlohmann::json::parse(body, nullptr, false);
  if (st.is_object() && st.contains("message") && st["message"].is_string()) {
    return st["message"].get<std::string>();
  }
  return body.substr(0, 512);
}

}  // namespace toposched::api
