#include "topo/io/kube_cluster.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "core/strings.h"
#include "topo/io/import.h"

namespace toposched::topo::io {

namespace {

using json = nlohmann::json;

// What the import reads of one Node.
struct KubeNodeInfo {
  std::string name;
  int gpus = 0;
  std::string product;
  std::map<std::string, std::string> labels;
};

// "12" → 12; InvalidArgument naming `what` otherwise.
StatusOr<int> WholeCount(const json& v, const std::string& what) {
  if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < (1 << 20)) {
    return static_cast<int>(v.get<int64_t>());
  }
  if (v.is_string()) {
    auto n = ParseInt(v.get<std::string>());
    if (n.ok() && *n >= 0 && *n < (1 << 20)) return static_cast<int>(*n);
  }
  return InvalidArgumentError(what + ": expected a whole number of GPUs, got " + v.dump());
}

StatusOr<KubeNodeInfo> ReadNode(const json& item, const std::string& where) {
  if (!item.is_object()) return InvalidArgumentError(where + ": expected a Node object");
  const json& meta = item.contains("metadata") ? item["metadata"] : json();
  if (!meta.is_object() || !meta.contains("name") || !meta["name"].is_string() ||
      meta["name"].get<std::string>().empty()) {
    return InvalidArgumentError(where + ": metadata.name: expected a non-empty string");
  }
  KubeNodeInfo n;
  n.name = meta["name"];
  const std::string at = where + " (" + n.name + ")";
  if (meta.contains("labels") && !meta["labels"].is_null()) {
    if (!meta["labels"].is_object()) {
      return InvalidArgumentError(at + ": metadata.labels: expected an object");
    }
    for (const auto& [k, v] : meta["labels"].items()) {
      if (!v.is_string()) {
        return InvalidArgumentError(at + ": metadata.labels[" + Quote(k) + "]: expected a string");
      }
      n.labels[k] = v.get<std::string>();
    }
  }
  if (auto it = n.labels.find("nvidia.com/gpu.count"); it != n.labels.end()) {
    ASSIGN_OR_RETURN(n.gpus, WholeCount(json(it->second), at + ": label nvidia.com/gpu.count"));
  } else if (item.contains("status") && item["status"].is_object() &&
             item["status"].contains("capacity") && item["status"]["capacity"].is_object() &&
             item["status"]["capacity"].contains("nvidia.com/gpu")) {
    ASSIGN_OR_RETURN(n.gpus, WholeCount(item["status"]["capacity"]["nvidia.com/gpu"],
                                        at + ": status.capacity[\"nvidia.com/gpu\"]"));
  }
  if (auto it = n.labels.find("nvidia.com/gpu.product"); it != n.labels.end()) {
    n.product = it->second;
  }
  return n;
}

// Levels and domains from the tier labels; every GPU node attached at the lowest level.
Status BuildTiers(const std::vector<KubeNodeInfo>& nodes, const KubeClusterOptions& o,
                  const std::string& source, Cluster& c) {
  std::vector<std::string> keys;
  for (const std::string& k : o.level_labels) {
    for (const KubeNodeInfo& n : nodes) {
      if (n.labels.count(k)) {
        keys.push_back(k);
        break;
      }
    }
  }
  if (keys.empty()) {
    // No tier labels: one flat network.
    c.levels.push_back({"cluster", 0, 1.0});
    NetworkDomain d;
    d.name = "cluster";
    for (size_t i = 0; i < nodes.size(); ++i) d.nodes.push_back(static_cast<int>(i));
    c.domains.push_back(std::move(d));
    for (ClusterNode& cn : c.nodes) cn.domain = 0;
    return OkStatus();
  }
  for (const std::string& k : keys) c.levels.push_back({LevelName(k), 0, 1.0});
  std::map<std::string, int> domain_of;  // domain name → id
  std::set<std::string> names_used;
  for (size_t i = 0; i < nodes.size(); ++i) {
    int parent = -1;
    for (size_t l = 0; l < keys.size(); ++l) {
      auto it = nodes[i].labels.find(keys[l]);
      if (it == nodes[i].labels.end() || it->second.empty()) {
        return InvalidArgumentError(source + ": node " + Quote(nodes[i].name) + " has no label " +
                                    keys[l] + " (other GPU nodes have it: every tier label " +
                                    "must be on every GPU node, or on none)");
      }
      const std::string name = c.levels[l].name + "-" + it->second;
      auto [d, fresh] = domain_of.emplace(name, static_cast<int>(c.domains.size()));
      if (fresh) {
        NetworkDomain nd;
        nd.name = name;
        nd.level = static_cast<int>(l);
        nd.parent = parent;
        if (parent >= 0) c.domains[parent].children.push_back(d->second);
        c.domains.push_back(std::move(nd));
      } else if (c.domains[d->second].parent != parent) {
        return InvalidArgumentError(
            source + ": " + keys[l] + "=" + it->second + " is under two " + c.levels[l - 1].name +
            "s (" + c.domains[c.domains[d->second].parent].name + " and " + c.domains[parent].name +
            ", seen at node " + Quote(nodes[i].name) + "): the tiers are not a tree");
      }
      parent = d->second;
    }
    c.domains[parent].nodes.push_back(static_cast<int>(i));
    c.nodes[i].domain = parent;
  }
  return OkStatus();
}

Status BuildCliques(const std::vector<KubeNodeInfo>& nodes, const KubeClusterOptions& o,
                    const std::string& source, Cluster& c) {
  std::map<std::string, int> domain_of;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& k : o.clique_labels) {
      auto it = nodes[i].labels.find(k);
      if (it == nodes[i].labels.end() || it->second.empty()) continue;
      if (o.nvlink_gbps <= 0) {
        return InvalidArgumentError(
            source + ": node " + Quote(nodes[i].name) + " has " + k + "=" + it->second +
            " (a multi-node NVLink domain): give its per-GPU NVLink bandwidth (nvlink_gbps)");
      }
      auto [d, fresh] = domain_of.emplace(it->second, static_cast<int>(c.nvlink_domains.size()));
      if (fresh) c.nvlink_domains.push_back({"nvl-" + it->second, {}, o.nvlink_gbps});
      c.nvlink_domains[d->second].nodes.push_back(static_cast<int>(i));
      c.nodes[i].nvlink_domain = d->second;
      break;
    }
  }
  return OkStatus();
}

}  // namespace

// ("cloud.google.com/gce-topology-subblock" → "gce-topology-subblock".)
std::string LevelName(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

Status KubeClusterOptions::Validate() const {
  if (cluster_name.empty()) return InvalidArgumentError("cluster name: empty");
  for (const auto& [product, file] : product_topology) {
    if (product.empty() || file.empty()) {
      return InvalidArgumentError("product topology: expected PRODUCT=FILE, both non-empty");
    }
  }
  std::set<std::string> seen;
  for (const std::string& k : level_labels) {
    if (k.empty() || !seen.insert(k).second) {
      return InvalidArgumentError("level labels: empty or repeated key \"" + k + "\"");
    }
  }
  if (!(nvlink_gbps >= 0) || !std::isfinite(nvlink_gbps)) {
    return InvalidArgumentError("nvlink_gbps: expected a finite number >= 0");
  }
  for (const auto& [level, ratio] : oversubscription) {
    if (!(ratio > 0) || !std::isfinite(ratio)) {
      return InvalidArgumentError("oversubscription of " + level +
                                  ": expected a finite number > 0");
    }
  }
  return OkStatus();
}

StatusOr<KubeImport> ClusterFromKubeNodes(std::string_view node_list_json,
                                          const std::string& source,
                                          const KubeClusterOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const json list = json::parse(node_list_json, nullptr, false);
  if (list.is_discarded() || !list.is_object() || !list.contains("items") ||
      !list["items"].is_array()) {
    return InvalidArgumentError(source +
                                ": expected a node list (`kubectl get nodes -o json`: an object "
                                "with an \"items\" array)");
  }
  KubeImport out;
  Cluster& c = out.cluster;
  c.name = options.cluster_name;
  std::vector<KubeNodeInfo> nodes;
  std::set<std::string> names;
  std::unordered_map<std::string, int> profile_of_file;
  for (size_t i = 0; i < list["items"].size(); ++i) {
    const std::string where = source + ": items[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(KubeNodeInfo n, ReadNode(list["items"][i], where));
    if (!names.insert(n.name).second) {
      return InvalidArgumentError(where + ": node " + Quote(n.name) + " listed twice");
    }
    if (n.gpus == 0) {
      out.skipped.push_back(n.name);
      continue;
    }
    auto pt = options.product_topology.find(n.product);
    const std::string file =
        pt != options.product_topology.end() ? pt->second : options.default_topology;
    if (file.empty()) {
      return InvalidArgumentError(
          where + " (" + n.name + "): GPU product " +
          Quote(n.product.empty() ? "(no nvidia.com/gpu.product label)" : n.product) +
          " has no node topology file (give one for the product, or "
          "one for every node)");
    }
    auto [it, fresh] = profile_of_file.emplace(file, static_cast<int>(c.profiles.size()));
    if (fresh) {
      HardwareProfile p;
      p.name = "p" + std::to_string(c.profiles.size());
      p.topology_file = file;
      auto t = ImportTopologyFile(file, TopoFormat::kAuto);
      if (!t.ok()) return t.status().WithPrefix(where + " (" + n.name + ")");
      p.topology = std::move(t).value();
      c.profiles.push_back(std::move(p));
    }
    const int topo_gpus = static_cast<int>(c.profiles[it->second].topology.gpus.size());
    if (topo_gpus != n.gpus) {
      return InvalidArgumentError(where + " (" + n.name + "): Kubernetes reports " +
                                  std::to_string(n.gpus) + " GPUs, its topology file " + file +
                                  " has " + std::to_string(topo_gpus));
    }
    ClusterNode node;
    node.name = n.name;
    node.profile = it->second;
    c.nodes.push_back(std::move(node));
    nodes.push_back(std::move(n));
  }
  if (c.nodes.empty()) {
    return InvalidArgumentError(source + ": no node with GPUs (nvidia.com/gpu.count or " +
                                "status.capacity[\"nvidia.com/gpu\"]) among " +
                                std::to_string(out.skipped.size()) + " nodes");
  }
  RETURN_IF_ERROR(BuildTiers(nodes, options, source, c));
  RETURN_IF_ERROR(BuildCliques(nodes, options, source, c));
  for (const auto& [level, ratio] : options.oversubscription) {
    bool found = false;
    for (NetworkLevel& l : c.levels) {
      if (l.name == level) {
        l.oversubscription = ratio;
        found = true;
      }
    }
    if (!found) return InvalidArgumentError("oversubscription: no level " + Quote(level));
  }
  c.Finalize();
  RETURN_IF_ERROR(c.Validate());
  return out;
}

StatusOr<KubeImport> ReadKubeNodesCluster(const std::string& path,
                                          const KubeClusterOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, kMaxNodeListBytes));
  return ClusterFromKubeNodes(text, path, options);
}

}  // namespace toposched::topo::io
