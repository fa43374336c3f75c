// Reading the pieces of Kubernetes objects the extender needs (a v1.Pod's identity, labels,
// annotations, GPU requests; gang membership and layout annotations) out of JSON, and writing
// JSON strings fast. Internal to the api module's extender; knows nothing of placement.
// Includes nlohmann/json: include it only from .cc files and tests.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/extender.h"
#include "core/status.h"
#include "job/job_spec.h"

namespace toposched::api::k8s {

// ASCII case-insensitive equality (Go's encoding/json matches keys this way).
bool EqualFold(std::string_view a, std::string_view b);

// The member `key` of a JSON object, matched as Go's encoding/json does: exactly, else
// case-insensitively. nullptr when absent (or `obj` is not an object).
const nlohmann::json* Member(const nlohmann::json& obj, std::string_view key);

// InvalidArgument "<path>: unknown field "X" (known: A, B)" for a key of `obj` that matches
// none of `known` case-insensitively.
Status CheckKnownFields(const nlohmann::json& obj, const std::vector<std::string>& known,
                        const std::string& path);

// Parses a request body; InvalidArgument "<what>: malformed JSON: ..." or "<what>: expected a
// JSON object".
StatusOr<nlohmann::json> ParseBody(std::string_view body, const std::string& what);

// A Kubernetes quantity of a countable resource: a non-negative integer as a JSON number or
// string ("8"). InvalidArgument naming `path` otherwise.
StatusOr<int64_t> ParseCount(const nlohmann::json& v, const std::string& path);

// What the extender reads from a v1.Pod.
struct Pod {
  std::string name_space;  // metadata.namespace, "default" when empty
  std::string name;        // metadata.name
  std::string uid;         // metadata.uid (may be empty in hand-written requests)
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  int gpus = 0;      // max(Σ containers, max init container) of limits (else requests)
  int priority = 0;  // spec.priority (the PriorityClass value the API server resolved), else 0
  // Pod id: the UID, else "<namespace>/<name>".
  std::string Id() const { return uid.empty() ? name_space + "/" + name : uid; }
  std::string FullName() const { return name_space + "/" + name; }
  // Label, else annotation; nullptr when neither.
  const std::string* Get(const std::string& key) const;
};

// InvalidArgument naming the JSON path (`path` is the pod's own, e.g. "$.Pod") for a pod that
// is not an object, has no metadata.name, non-string labels/annotations, or a bad GPU count.
StatusOr<Pod> ParsePod(const nlohmann::json& pod, const std::string& gpu_resource,
                       const std::string& path);

// Gang membership of a pod, from the options' keys.
struct Membership {
  std::string key;   // "<namespace>/<group>"; "<namespace>/<pod name>" for a lone pod
  bool lone = true;  // no group labels: a gang of one
  int size = 0;      // pods, 0 = not given
  int index = -1;    // rank slot, -1 = not given
};

// FailedPrecondition with a message for the pod's events: a malformed size/index value, an
// unknown Kubeflow replica type, an index outside the size.
StatusOr<Membership> MembershipOf(const Pod& pod, const ExtenderOptions& o);

// The job spec of a gang from the first pod's annotations: priority = the pod's priority; user
// and queue = <prefix>user and <prefix>queue, else the namespace; replicas = `size` pods of
// pod.gpus GPUs, layout tp/pp/dp/ep (tp defaults to the pod's GPUs, pp to 1), traffic, and
// constraints. When `size` is 0 it comes from tp·pp·dp / GPUs per pod. Normalized.
// FailedPrecondition with the annotation's name for a bad value, an unknown annotation under the
// prefix, a layout that does not match the gang, or an unknown size.
StatusOr<job::JobSpec> GangSpec(const Pod& pod, const Membership& m, const ExtenderOptions& o);

// Appends `s` as a JSON string (quotes and escapes) to `out`.
void AppendJsonString(std::string& out, std::string_view s);
// `s` as a JSON string: quoted and escaped (error messages that name a value from a request).
std::string JsonQuoted(std::string_view s);

}  // namespace toposched::api::k8s
