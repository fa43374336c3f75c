// Binding pods through the Kubernetes API server: the extender's bind verb hands binding over to
// toposched, which creates the pod's Binding (POST /api/v1/namespaces/NS/pods/NAME/binding) with
// its service account's token. Knows nothing of gangs or placement; only `main` decides where
// the server, token and CA come from (in a pod: KUBERNETES_SERVICE_HOST/PORT and the mounted
// service account).
#pragma once

#include <memory>
#include <string>

#include "api/extender.h"
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

// Thread-safe (one HTTP client per call).
class KubeApiBinder : public PodBinder {
 public:
  static StatusOr<std::unique_ptr<KubeApiBinder>> Create(KubeApiOptions options);

  // OK on 201 Created (or 200). Errors: InvalidArgument for a pod or node name that is not a
  // DNS-1123 name; NotFound when the token file cannot be read; Unavailable when the server
  // cannot be reached; FailedPrecondition with the API server's Status message otherwise
  // ("pods "x" is already assigned to node "y"", HTTP 409).
  Status Bind(const PodRef& pod, const std::string& node) override;

 private:
  explicit KubeApiBinder(KubeApiOptions o) : options_(std::move(o)) {}
  KubeApiOptions options_;
};

}  // namespace toposched::api
