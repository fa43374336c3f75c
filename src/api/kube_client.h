// Talking to the Kubernetes API server: where it is, the service-account token (re-read on
// every call: projected tokens are rotated by the kubelet), the CA, and one configured HTTP
// client per call. Shared by the binder (kube_binder.h) and the watcher (kube_watch.h).
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include "core/status.h"

namespace toposched::api {

struct KubeApiOptions {
  // "https://10.96.0.1:443" in a cluster; "http://127.0.0.1:PORT" only for tests.
  std::string server;
  // Re-read on every call: projected service-account tokens are rotated by the kubelet.
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  // CA bundle that signed the API server's certificate (https only; empty = system store).
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  int timeout_ms = 5000;
  // InvalidArgument: server not http(s)://host[:port], timeout outside [1, 60000].
  Status Validate() const;
};

// The token, trimmed. NotFound when the file cannot be read or is empty.
StatusOr<std::string> ReadKubeToken(const KubeApiOptions& options);

// A client for options.server with its CA (https), timeouts and the bearer token. `read_timeout_ms`
// replaces options.timeout_ms for reads (a watch waits for events far longer than a call).
std::unique_ptr<httplib::Client> MakeKubeClient(const KubeApiOptions& options,
                                                const std::string& token, int read_timeout_ms);

// Whether `s` is a lower-case DNS-1123 subdomain, as pod, namespace and node names are: 1 to 253
// letters, digits, '-' and '.'.
bool IsDnsSubdomain(const std::string& s);

// The message of a metav1.Status answer body, else the body itself (at most 512 bytes).
std::string KubeStatusMessage(const std::string& body);

}  // namespace toposched::api
