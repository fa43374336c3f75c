#include "api/kube_binder.h"

#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/strings.h"

namespace toposched::api {

namespace {

// Lower-case DNS-1123 subdomain (pod, namespace and node names): letters, digits, '-', '.'.
bool DnsName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

}  // namespace

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

StatusOr<std::unique_ptr<KubeApiBinder>> KubeApiBinder::Create(KubeApiOptions options) {
  if (Status s = options.Validate(); !s.ok()) return s;
  return std::unique_ptr<KubeApiBinder>(new KubeApiBinder(std::move(options)));
}

Status KubeApiBinder::Bind(const PodRef& pod, const std::string& node) {
  for (const std::string* n : {&pod.name_space, &pod.name, &node}) {
    if (!DnsName(*n)) return InvalidArgumentError("kube api: bad name \"" + *n + "\"");
  }
  std::ifstream in(options_.token_file);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return NotFoundError("kube api: cannot read token file " + options_.token_file);
  }
  const std::string token(Trim(ss.str()));
  if (token.empty()) return NotFoundError("kube api: empty token file " + options_.token_file);

  nlohmann::json binding = {{"apiVersion", "v1"},
                            {"kind", "Binding"},
                            {"metadata", {{"name", pod.name}, {"namespace", pod.name_space}}},
                            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  // The UID makes the API server refuse to bind a newer pod of the same name.
  if (!pod.uid.empty()) binding["metadata"]["uid"] = pod.uid;

  httplib::Client client(options_.server);
  if (StartsWith(options_.server, "https://") && !options_.ca_file.empty()) {
    client.set_ca_cert_path(options_.ca_file);
    client.enable_server_certificate_verification(true);
  }
  const time_t sec = options_.timeout_ms / 1000;
  const time_t usec = (options_.timeout_ms % 1000) * 1000;
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
  client.set_bearer_token_auth(token);
  const std::string path =
      "/api/v1/namespaces/" + pod.name_space + "/pods/" + pod.name + "/binding";
  httplib::Result res = client.Post(path, binding.dump(), "application/json");
  if (!res) {
    return Status(StatusCode::kUnavailable, "kube api: POST " + options_.server + path + ": " +
                                                httplib::to_string(res.error()));
  }
  if (res->status == 201 || res->status == 200) return OkStatus();
  // The API server answers errors as a metav1.Status object.
  std::string message = res->body;
  nlohmann::json st = nlohmann::json::parse(res->body, nullptr, false);
  if (st.is_object() && st.contains("message") && st["message"].is_string()) {
    message = st["message"].get<std::string>();
  }
  return FailedPreconditionError("kube api: binding " + pod.name_space + "/" + pod.name + " to " +
                                 node + ": HTTP " + std::to_string(res->status) + ": " + message);
}

}  // namespace toposched::api
