#include "api/kube_pods.h"

#include <httplib.h>

#include <memory>

namespace toposched::api {

StatusOr<std::string> ListNodePods(const KubeApiOptions& options, const std::string& node) {
  if (!IsDnsSubdomain(node))
    return InvalidArgumentError("kube api: bad node name \"" + node + "\"");
  ASSIGN_OR_RETURN(const std::string token, ReadKubeToken(options));
  std::unique_ptr<httplib::Client> client = MakeKubeClient(options, token, options.timeout_ms);
  const std::string path =
      "/api/v1/pods?fieldSelector=" + httplib::detail::encode_query_param("spec.nodeName=" + node);
  std::string body;
  bool too_big = false;
  int http_status = 0;
  httplib::Result res = client->Get(
      path, httplib::Headers{},
      [&](const httplib::Response& r) {
        http_status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (body.size() + n > kMaxNodePodListBytes) {
          too_big = true;
          return false;
        }
        body.append(data, n);
        return true;
      });
  const std::string what = "kube api: GET " + options.server + path;
  if (too_big) {
    return Status(StatusCode::kUnavailable,
                  what + ": answer longer than " + std::to_string(kMaxNodePodListBytes) + " bytes");
  }
  if (!res) return Status(StatusCode::kUnavailable, what + ": " + httplib::to_string(res.error()));
  if (http_status != 200) {
    return Status(StatusCode::kUnavailable,
                  what + ": HTTP " + std::to_string(http_status) + ": " + KubeStatusMessage(body));
  }
  return body;
}

}  // namespace toposched::api
