#include "api/kube_binder.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace toposched::api {

namespace {

// POSTs `body` to `path` with the service account's token: the HTTP answer, or Unavailable when
// the server cannot be reached.
StatusOr<httplib::Result> PostToApi(const KubeApiOptions& o, const std::string& path,
                                    const nlohmann::json& body) {
  ASSIGN_OR_RETURN(const std::string token, ReadKubeToken(o));
  std::unique_ptr<httplib::Client> client = MakeKubeClient(o, token, o.timeout_ms);
  httplib::Result res = client->Post(path, body.dump(), "application/json");
  if (!res) {
    return Status(StatusCode::kUnavailable,
                  "kube api: POST " + o.server + path + ": " + httplib::to_string(res.error()));
  }
  return res;
}

}  // namespace

StatusOr<std::unique_ptr<KubeApiBinder>> KubeApiBinder::Create(KubeApiOptions options) {
  if (Status s = options.Validate(); !s.ok()) return s;
  return std::unique_ptr<KubeApiBinder>(new KubeApiBinder(std::move(options)));
}

Status KubeApiBinder::Bind(const PodRef& pod, const std::string& node) {
  return BindAnnotated(pod, node, {});
}

Status KubeApiBinder::BindAnnotated(const PodRef& pod, const std::string& node,
                                    const std::map<std::string, std::string>& annotations) {
  for (const std::string* n : {&pod.name_space, &pod.name, &node}) {
    if (!IsDnsSubdomain(*n)) return InvalidArgumentError("kube api: bad name \"" + *n + "\"");
  }
  nlohmann::json binding = {{"apiVersion", "v1"},
                            {"kind", "Binding"},
                            {"metadata", {{"name", pod.name}, {"namespace", pod.name_space}}},
                            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  // The UID makes the API server refuse to bind a newer pod of the same name.
  if (!pod.uid.empty()) binding["metadata"]["uid"] = pod.uid;
  if (!annotations.empty()) binding["metadata"]["annotations"] = annotations;

  ASSIGN_OR_RETURN(
      httplib::Result res,
      PostToApi(options_, "/api/v1/namespaces/" + pod.name_space + "/pods/" + pod.name + "/binding",
                binding));
  if (res->status == 201 || res->status == 200) return OkStatus();
  const std::string message = KubeStatusMessage(res->body);
  return FailedPreconditionError("kube api: binding " + pod.name_space + "/" + pod.name + " to " +
                                 node + ": HTTP " + std::to_string(res->status) + ": " + message);
}

StatusOr<std::unique_ptr<KubeApiEvictor>> KubeApiEvictor::Create(KubeApiOptions options) {
  if (Status s = options.Validate(); !s.ok()) return s;
  return std::unique_ptr<KubeApiEvictor>(new KubeApiEvictor(std::move(options)));
}

Status KubeApiEvictor::Evict(const PodRef& pod, const std::string& reason) {
  for (const std::string* n : {&pod.name_space, &pod.name}) {
    if (!IsDnsSubdomain(*n)) return InvalidArgumentError("kube api: bad name \"" + *n + "\"");
  }
  (void)reason;  // an Eviction carries no reason; the daemon logs it
  nlohmann::json eviction = {{"apiVersion", "policy/v1"},
                             {"kind", "Eviction"},
                             {"metadata", {{"name", pod.name}, {"namespace", pod.name_space}}}};
  // A precondition on the UID: a newer pod of the same name is not evicted in its place.
  if (!pod.uid.empty()) eviction["deleteOptions"] = {{"preconditions", {{"uid", pod.uid}}}};
  ASSIGN_OR_RETURN(httplib::Result res, PostToApi(options_,
                                                  "/api/v1/namespaces/" + pod.name_space +
                                                      "/pods/" + pod.name + "/eviction",
                                                  eviction));
  // 404: gone already; 409: the UID precondition failed, the name is a newer pod's (ours is gone).
  if ((res->status >= 200 && res->status < 300) || res->status == 404 || res->status == 409) {
    return OkStatus();
  }
  const std::string message = KubeStatusMessage(res->body);
  const std::string what = "kube api: evicting " + pod.name_space + "/" + pod.name + ": HTTP " +
                           std::to_string(res->status) + ": " + message;
  if (res->status == 429) return Status(StatusCode::kUnavailable, what);
  return FailedPreconditionError(what);
}

}  // namespace toposched::api
