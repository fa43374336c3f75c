// A ClusterState as JSON and back (`place --state`, saved states): health that differs from the
// cluster spec, drains, and every allocation by node name and GPU positions.
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/strings.h"
#include "state/cluster_state.h"

namespace toposched::sched {

using topo::Health;

std::string WriteClusterStateJson(const ClusterState& state) {
  using Json = nlohmann::ordered_json;
  const topo::Cluster& c = state.cluster();
  Json root = Json::object();
  root["version"] = 1;
  root["cluster"] = c.name;
  Json nodes = Json::array();
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    Json gh = Json::array();
    for (int g = 0; g < state.GpuCount(n); ++g) {
      if (state.GpuHealth(n, g) != c.topology(n).gpus[g].health) {
        gh.push_back(Json{{"gpu", g}, {"health", topo::HealthName(state.GpuHealth(n, g))}});
      }
    }
    const bool node_health_changed = state.NodeHealth(n) != c.nodes[n].health;
    if (gh.empty() && !node_health_changed && !state.NodeDrained(n)) continue;
    Json node = Json::object();
    node["name"] = c.nodes[n].name;
    if (node_health_changed) {
      node["health"] = topo::HealthName(state.NodeHealth(n));
    }
    if (state.NodeDrained(n)) node["drained"] = true;
    if (!gh.empty()) node["gpu_health"] = std::move(gh);
    nodes.push_back(std::move(node));
  }
  root["nodes"] = std::move(nodes);
  Json allocs = Json::array();
  for (AllocId id : state.AllocationIds()) {
    Json parts = Json::array();
    for (const NodeGpus& p : *state.Allocation(id)) {
      parts.push_back(Json{{"node", c.nodes[p.node].name}, {"gpus", p.gpus.Positions()}});
    }
    const int milli = state.AllocationMilli(id);
    if (milli > 0) {
      allocs.push_back(Json{{"id", id.key()}, {"milli", milli}, {"nodes", std::move(parts)}});
    } else {
      allocs.push_back(Json{{"id", id.key()}, {"nodes", std::move(parts)}});
    }
  }
  root["allocations"] = std::move(allocs);
  return root.dump(2) + "\n";
}

namespace {

using Json = nlohmann::json;

class StateReader {
 public:
  StateReader(const topo::Cluster& cluster, std::string source)
      : cluster_(cluster), source_(std::move(source)) {}

  Status Err(const std::string& path, const std::string& msg) const {
    return InvalidArgumentError(source_ + ": " + path + ": " + msg);
  }

  static const char* Kind(const Json& v) { return v.type_name(); }

  Status CheckKeys(const Json& v, const std::string& path,
                   std::initializer_list<const char*> allowed) const {
    if (!v.is_object()) return Err(path, std::string("expected an object, got ") + Kind(v));
    for (auto it = v.begin(); it != v.end(); ++it) {
      bool ok = false;
      for (const char* a : allowed) ok |= it.key() == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return Err(path + "." + it.key(), "unknown key (expected one of: " + list + ")");
      }
    }
    return OkStatus();
  }

  StatusOr<int> Node(const Json& v, const std::string& path) const {
    if (!v.is_string()) return Err(path, std::string("expected a node name, got ") + Kind(v));
    const int n = cluster_.FindNode(v.get<std::string>());
    if (n < 0) return Err(path, "unknown node " + Quote(v.get<std::string>()));
    return n;
  }

  StatusOr<Health> ReadHealth(const Json& v, const std::string& path) const {
    if (!v.is_string()) return Err(path, std::string("expected a health name, got ") + Kind(v));
    StatusOr<Health> h = topo::ParseHealth(v.get<std::string>());
    if (!h.ok()) return Err(path, h.status().message());
    return h;
  }

  StatusOr<int> Gpu(const Json& v, const std::string& path, const ClusterState& st,
                    int node) const {
    if (!v.is_number_integer()) {
      return Err(path, std::string("expected a GPU number, got ") + Kind(v));
    }
    const long long g = v.get<long long>();
    if (g < 0 || g >= st.GpuCount(node)) {
      return Err(path, "GPU " + std::to_string(g) + " out of range (node " +
                           Quote(cluster_.nodes[node].name) + " has " +
                           std::to_string(st.GpuCount(node)) + " GPUs)");
    }
    return static_cast<int>(g);
  }

  StatusOr<ClusterState> Read(const std::string& text) {
    Json root;
    try {
      root = Json::parse(text);
    } catch (const std::exception& e) {
      return InvalidArgumentError(source_ + ": invalid JSON: " + e.what());
    }
    RETURN_IF_ERROR(CheckKeys(root, "$", {"version", "cluster", "nodes", "allocations"}));
    if (!root.contains("version") || root["version"] != 1) {
      return Err("$.version", "expected version 1");
    }
    if (root.contains("cluster")) {
      const Json& c = root["cluster"];
      if (!c.is_string()) return Err("$.cluster", "expected a string");
      if (c.get<std::string>() != cluster_.name) {
        return Err("$.cluster", "state is for cluster " + Quote(c.get<std::string>()) + ", not " +
                                    Quote(cluster_.name));
      }
    }
    ASSIGN_OR_RETURN(ClusterState st, ClusterState::Create(cluster_));

    if (root.contains("allocations")) {
      const Json& allocs = root["allocations"];
      if (!allocs.is_array()) return Err("$.allocations", "expected an array");
      for (size_t i = 0; i < allocs.size(); ++i) {
        const std::string path = "$.allocations[" + std::to_string(i) + "]";
        const Json& a = allocs[i];
        RETURN_IF_ERROR(CheckKeys(a, path, {"id", "milli", "nodes"}));
        int milli = 0;
        if (a.contains("milli")) {
          const Json& m = a["milli"];
          if (!m.is_number_integer() || m.get<long long>() < 1 || m.get<long long>() > 1000) {
            return Err(path + ".milli",
                       "expected an integer from 1 to 1000 (thousandths of one GPU)");
          }
          milli = static_cast<int>(m.get<long long>());
          if (milli == 1000) milli = 0;  // a whole GPU
        }
        if (!a.contains("id") || !a["id"].is_number_integer()) {
          return Err(path + ".id", "expected an integer allocation id");
        }
        const AllocId id = AllocId::FromKey(a["id"].get<int64_t>());
        if (st.HasAllocation(id))
          return Err(path + ".id", "duplicate allocation id " + std::to_string(id.key()));
        if (!a.contains("nodes") || !a["nodes"].is_array() || a["nodes"].empty()) {
          return Err(path + ".nodes", "expected a non-empty array");
        }
        std::vector<NodeGpus> parts;
        for (size_t j = 0; j < a["nodes"].size(); ++j) {
          const std::string ppath = path + ".nodes[" + std::to_string(j) + "]";
          const Json& p = a["nodes"][j];
          RETURN_IF_ERROR(CheckKeys(p, ppath, {"node", "gpus"}));
          if (!p.contains("node")) return Err(ppath + ".node", "missing");
          ASSIGN_OR_RETURN(int node, Node(p["node"], ppath + ".node"));
          for (const NodeGpus& q : parts) {
            if (q.node == node) {
              return Err(ppath + ".node", "node " + Quote(cluster_.nodes[node].name) +
                                              " listed twice in the allocation");
            }
          }
          if (!p.contains("gpus") || !p["gpus"].is_array() || p["gpus"].empty()) {
            return Err(ppath + ".gpus", "expected a non-empty array of GPU numbers");
          }
          NodeGpus part{node, GpuMask()};
          for (size_t k = 0; k < p["gpus"].size(); ++k) {
            const std::string gpath = ppath + ".gpus[" + std::to_string(k) + "]";
            ASSIGN_OR_RETURN(int g, Gpu(p["gpus"][k], gpath, st, node));
            if (part.gpus.test(g)) return Err(gpath, "GPU " + std::to_string(g) + " listed twice");
            if (std::optional<AllocId> h = st.Holder(node, g)) {
              return Err(gpath, "GPU " + std::to_string(g) + " of node " +
                                    Quote(cluster_.nodes[node].name) + " is held by allocation " +
                                    std::to_string(h->key()));
            }
            part.gpus.set(g);
          }
          parts.push_back(part);
        }
        if (milli > 0 && (parts.size() != 1 || parts[0].gpus.count() != 1)) {
          return Err(path + ".nodes", "a fractional allocation (milli " + std::to_string(milli) +
                                          ") holds exactly one GPU");
        }
        Status s = milli > 0 ? st.AllocateShared(id, parts[0].node, parts[0].gpus.lowest(), milli)
                             : st.Allocate(id, parts);
        if (!s.ok()) return Err(path, s.message());
      }
    }

    if (root.contains("nodes")) {
      const Json& nodes = root["nodes"];
      if (!nodes.is_array()) return Err("$.nodes", "expected an array");
      std::set<int> seen;
      for (size_t i = 0; i < nodes.size(); ++i) {
        const std::string path = "$.nodes[" + std::to_string(i) + "]";
        const Json& nv = nodes[i];
        RETURN_IF_ERROR(CheckKeys(nv, path, {"name", "health", "drained", "gpu_health"}));
        if (!nv.contains("name")) return Err(path + ".name", "missing");
        ASSIGN_OR_RETURN(int node, Node(nv["name"], path + ".name"));
        if (!seen.insert(node).second) {
          return Err(path + ".name", "node " + Quote(cluster_.nodes[node].name) + " listed twice");
        }
        if (nv.contains("health")) {
          ASSIGN_OR_RETURN(Health h, ReadHealth(nv["health"], path + ".health"));
          RETURN_IF_ERROR(st.SetNodeHealth(node, h).status());
        }
        if (nv.contains("drained")) {
          if (!nv["drained"].is_boolean()) return Err(path + ".drained", "expected true or false");
          RETURN_IF_ERROR(st.SetNodeDrained(node, nv["drained"].get<bool>()));
        }
        if (nv.contains("gpu_health")) {
          const Json& gh = nv["gpu_health"];
          if (!gh.is_array()) return Err(path + ".gpu_health", "expected an array");
          for (size_t k = 0; k < gh.size(); ++k) {
            const std::string gpath = path + ".gpu_health[" + std::to_string(k) + "]";
            RETURN_IF_ERROR(CheckKeys(gh[k], gpath, {"gpu", "health"}));
            if (!gh[k].contains("gpu")) return Err(gpath + ".gpu", "missing");
            if (!gh[k].contains("health")) return Err(gpath + ".health", "missing");
            ASSIGN_OR_RETURN(int g, Gpu(gh[k]["gpu"], gpath + ".gpu", st, node));
            ASSIGN_OR_RETURN(Health h, ReadHealth(gh[k]["health"], gpath + ".health"));
            RETURN_IF_ERROR(st.SetGpuHealth(node, g, h).status());
          }
        }
      }
    }
    return st;
  }

 private:
  const topo::Cluster& cluster_;
  std::string source_;
};

}  // namespace

StatusOr<ClusterState> ReadClusterStateJson(const std::string& text, const topo::Cluster& cluster,
                                            const std::string& source) {
  return StateReader(cluster, source).Read(text);
}

StatusOr<ClusterState> ReadClusterStateJsonFile(const std::string& path,
                                                const topo::Cluster& cluster) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, size_t{256} << 20, "a state file"));
  return ReadClusterStateJson(text, cluster, path);
}

}  // namespace toposched::sched
