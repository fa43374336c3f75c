// libFuzzer target: the extender's request bodies (kube-scheduler's ExtenderArgs and the pod in
// them), its raw JSON scanner, and a Kubernetes Node object as the watch reads it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/extender_k8s.h"
#include "api/extender_scan.h"
#include "api/kube_watch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  namespace api = toposched::api;
  auto j = api::k8s::ParseBody(body, "fuzz");
  if (j.ok() && j->contains("Pod"))
    (void)api::k8s::ParsePod((*j)["Pod"], "nvidia.com/gpu", "$.Pod");
  std::string error;
  (void)api::scan::Validate(body, &error);
  (void)api::ReadKubeNode(body);
  return 0;
}
