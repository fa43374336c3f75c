#include "deviceplugin/node_pods.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

namespace toposched::deviceplugin {

namespace {

using nlohmann::json;

// The member `key` of `j` when it is an object holding it, else null.
const json* Field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

StatusOr<std::string> TextField(const json& j, const char* key, const std::string& where) {
  const json* v = Field(j, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return InvalidArgumentError(where + "." + key + ": expected a string");
  return v->get<std::string>();
}

// A whole, non-negative device count below 2^20 (extended resources are integers).
StatusOr<int> DeviceCount(const json& v, const std::string& where) {
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  int n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0 || n >= (1 << 20)) {
    return InvalidArgumentError(where + ": expected a whole number of devices, got " +
                                json(text).dump());
  }
  return n;
}

// The resource asked by one container: its limit, else its request (0 when neither).
StatusOr<int> ContainerAsks(const json& c, const std::string& resource, const std::string& where) {
  const json* res = Field(c, "resources");
  if (res == nullptr) return 0;
  for (const char* kind : {"limits", "requests"}) {
    const json* m = Field(*res, kind);
    if (m == nullptr) continue;
    if (!m->is_object()) return InvalidArgumentError(where + ".resources." + kind + ": not a map");
    const json* q = Field(*m, resource.c_str());
    if (q != nullptr) {
      return DeviceCount(*q, where + ".resources." + kind + "[" + resource + "]");
    }
  }
  return 0;
}

StatusOr<NodePod> ReadOnePod(const json& item, const std::string& where,
                             const std::string& resource, const std::string& annotation) {
  NodePod p;
  const json* meta = Field(item, "metadata");
  if (meta == nullptr || !meta->is_object()) {
    return InvalidArgumentError(where + ".metadata: missing");
  }
  ASSIGN_OR_RETURN(p.uid, TextField(*meta, "uid", where + ".metadata"));
  ASSIGN_OR_RETURN(const std::string name, TextField(*meta, "name", where + ".metadata"));
  ASSIGN_OR_RETURN(const std::string ns, TextField(*meta, "namespace", where + ".metadata"));
  if (name.empty()) return InvalidArgumentError(where + ".metadata.name: missing");
  p.name = ns + "/" + name;
  ASSIGN_OR_RETURN(p.created, TextField(*meta, "creationTimestamp", where + ".metadata"));
  if (const json* ann = Field(*meta, "annotations"); ann != nullptr) {
    if (!ann->is_object()) return InvalidArgumentError(where + ".metadata.annotations: not a map");
    ASSIGN_OR_RETURN(p.choice,
                     TextField(*ann, annotation.c_str(), where + ".metadata.annotations"));
    p.has_choice = Field(*ann, annotation.c_str()) != nullptr;
  }
  if (const json* spec = Field(item, "spec"); spec != nullptr) {
    if (const json* cs = Field(*spec, "containers"); cs != nullptr) {
      if (!cs->is_array()) return InvalidArgumentError(where + ".spec.containers: not a list");
      for (size_t i = 0; i < cs->size(); ++i) {
        const std::string cw = where + ".spec.containers[" + std::to_string(i) + "]";
        ASSIGN_OR_RETURN(int n, ContainerAsks((*cs)[i], resource, cw));
        p.requested += n;
      }
    }
  }
  std::string phase = "Pending", started;
  if (const json* status = Field(item, "status"); status != nullptr) {
    ASSIGN_OR_RETURN(phase, TextField(*status, "phase", where + ".status"));
    ASSIGN_OR_RETURN(started, TextField(*status, "startTime", where + ".status"));
  }
  p.taken = !(phase.empty() || phase == "Pending") || !started.empty();
  return p;
}

}  // namespace

StatusOr<std::vector<NodePod>> ReadNodePods(std::string_view pod_list_json,
                                            const std::string& resource_name,
                                            const std::string& choice_annotation) {
  const json list = json::parse(pod_list_json, nullptr, false);
  if (list.is_discarded()) return InvalidArgumentError("pod list: not JSON");
  const json* items = Field(list, "items");
  if (!list.is_object() || (items != nullptr && !items->is_array())) {
    return InvalidArgumentError("pod list: expected a PodList (an object with an items list)");
  }
  std::vector<NodePod> out;
  if (items == nullptr) return out;  // an empty list may come without items
  for (size_t i = 0; i < items->size(); ++i) {
    ASSIGN_OR_RETURN(NodePod p, ReadOnePod((*items)[i], "items[" + std::to_string(i) + "]",
                                           resource_name, choice_annotation));
    out.push_back(std::move(p));
  }
  return out;
}

StatusOr<std::vector<int>> ParseChoice(std::string_view value, const std::string& annotation) {
  std::vector<int> out;
  std::set<int> seen;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    const std::string_view part = value.substr(start, comma - start);
    int n = -1;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), n);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || n < 0) {
      return InvalidArgumentError(annotation + ": expected GPU indices like \"4,5,6,7\", got " +
                                  json(std::string(value)).dump());
    }
    if (!seen.insert(n).second) {
      return InvalidArgumentError(annotation + ": GPU " + std::to_string(n) + " given twice in " +
                                  json(std::string(value)).dump());
    }
    out.push_back(n);
    start = comma + 1;
  }
  return out;
}

}  // namespace toposched::deviceplugin
