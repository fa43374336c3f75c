// Binding and evicting pods through the Kubernetes API server: the extender's bind verb hands
// binding over to toposched, which creates the pod's Binding (POST
// /api/v1/namespaces/NS/pods/NAME/binding) with its service account's token; a pod of a gang
// whose job the queue stopped (preempted, requeued, cancelled) is evicted (POST
// .../pods/NAME/eviction, a policy/v1 Eviction, so PodDisruptionBudgets apply). Knows nothing of
// gangs or placement; only `main` decides where the server, token and CA come from (in a pod:
// KUBERNETES_SERVICE_HOST/PORT and the mounted service account).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "api/extender.h"
#include "api/kube_client.h"
#include "core/status.h"

namespace toposched::api {

// Thread-safe (one HTTP client per call).
class KubeApiBinder : public PodBinder {
 public:
  static StatusOr<std::unique_ptr<KubeApiBinder>> Create(KubeApiOptions options);

  // OK on 201 Created (or 200). Errors: InvalidArgument for a pod or node name that is not a
  // DNS-1123 name; NotFound when the token file cannot be read; Unavailable when the server
  // cannot be reached; FailedPrecondition with the API server's Status message otherwise
  // ("pods "x" is already assigned to node "y"", HTTP 409).
  Status Bind(const PodRef& pod, const std::string& node) override;
  // The same, the Binding's metadata.annotations set (the API server copies them onto the pod
  // as it binds it: one write, so the kubelet never sees the pod bound without them). Errors as
  // Bind's; an empty map posts exactly Bind's body.
  Status BindAnnotated(const PodRef& pod, const std::string& node,
                       const std::map<std::string, std::string>& annotations) override;

 private:
  explicit KubeApiBinder(KubeApiOptions o) : options_(std::move(o)) {}
  KubeApiOptions options_;
};

// Thread-safe (one HTTP client per call).
class KubeApiEvictor : public PodEvictor {
 public:
  static StatusOr<std::unique_ptr<KubeApiEvictor>> Create(KubeApiOptions options);

  // OK on any 2xx (the API server answers 201 Created with a Success Status), on 404 (the pod
  // is gone already) and on 409 (the UID precondition failed: that name is a newer pod's). Errors:
  // InvalidArgument for a name that is not a DNS-1123 name; NotFound when the token file cannot be
  // read; Unavailable when the server cannot be reached or answers 429 (a PodDisruptionBudget
  // refuses it for now: retried later); FailedPrecondition with the API server's Status message
  // otherwise.
  Status Evict(const PodRef& pod, const std::string& reason) override;

 private:
  explicit KubeApiEvictor(KubeApiOptions o) : options_(std::move(o)) {}
  KubeApiOptions options_;
};

}  // namespace toposched::api
