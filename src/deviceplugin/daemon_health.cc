#include "deviceplugin/daemon_health.h"

#include <nlohmann/json.hpp>

namespace toposched::deviceplugin {

StatusOr<std::vector<int>> DaemonFailedGpus(std::string_view nodes_json, const std::string& node,
                                            int gpus) {
  using nlohmann::json;
  const json body = json::parse(nodes_json, nullptr, false);
  if (!body.is_object() || !body.contains("nodes") || !body["nodes"].is_array()) {
    return InvalidArgumentError("daemon nodes: expected {\"nodes\": [...]}");
  }
  const json& nodes = body["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& n = nodes[i];
    const std::string where = "daemon nodes[" + std::to_string(i) + "]";
    if (!n.is_object() || !n.contains("name") || !n["name"].is_string()) {
      return InvalidArgumentError(where + ".name: expected a string");
    }
    if (n["name"].get<std::string>() != node) continue;
    if (!n.contains("gpus") || !n["gpus"].is_number_integer()) {
      return InvalidArgumentError(where + ".gpus: expected an integer");
    }
    if (n["gpus"].get<int>() != gpus) {
      return FailedPreconditionError("the daemon's node " + node + " has " +
                                     std::to_string(n["gpus"].get<int>()) + " GPUs, this one " +
                                     std::to_string(gpus));
    }
    if (!n.contains("gpu_health") || !n["gpu_health"].is_array()) {
      return InvalidArgumentError(where + ".gpu_health: expected a list");
    }
    std::vector<int> out;
    for (size_t k = 0; k < n["gpu_health"].size(); ++k) {
      const json& g = n["gpu_health"][k];
      const std::string gw = where + ".gpu_health[" + std::to_string(k) + "]";
      if (!g.is_object() || !g.contains("gpu") || !g["gpu"].is_number_integer() ||
          !g.contains("health") || !g["health"].is_string()) {
        return InvalidArgumentError(gw + ": expected {\"gpu\": position, \"health\": name}");
      }
      const int pos = g["gpu"].get<int>();
      if (pos < 0 || pos >= gpus) {
        return InvalidArgumentError(gw + ".gpu: " + std::to_string(pos) + " is outside 0.." +
                                    std::to_string(gpus - 1));
      }
      if (g["health"].get<std::string>() == "unhealthy") out.push_back(pos);
    }
    return out;
  }
  return NotFoundError("the daemon has no node " + node);
}

}  // namespace toposched::deviceplugin
