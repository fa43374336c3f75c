#include "sim/openb_cluster.h"

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "core/file.h"
#include "core/strings.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::sim {

namespace {

constexpr int kNodesPerLeaf = 32;
constexpr int kNicGbps = 100;

std::string Synthetic(const std::string& model, int gpus) {
  std::string d = "gpu:" + std::to_string(gpus);
  if (gpus == 8 && StartsWith(model, "V100")) {
    d += " cubemesh";
  } else {
    const int sockets = gpus >= 2 ? 2 : 1;
    const int switches = gpus >= 8 ? 4 : sockets;
    d += " pcie sockets:" + std::to_string(sockets) + " switches:" + std::to_string(switches);
  }
  return d + " model:" + model + " nics:1 nic_gbps:" + std::to_string(kNicGbps) + " linklayer:roce";
}

// A YAML-safe profile name: "v100m16-8g".
std::string ProfileName(const std::string& model, int gpus) {
  std::string s;
  for (char c : ToLower(model)) s += (std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
  return (s.empty() ? "gpu" : s) + "-" + std::to_string(gpus) + "g";
}

}  // namespace

StatusOr<std::string> OpenbNodesToClusterYaml(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  std::map<std::string, int> col;
  struct Node {
    std::string name, profile;
  };
  std::vector<Node> nodes;
  std::map<std::string, std::pair<std::string, int>> profiles;  // name → (model, gpus)
  std::set<std::string> names;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (Trim(line).empty()) continue;
    std::vector<std::string> cells = Split(line, ',');
    for (std::string& c : cells) c = std::string(Trim(c));
    if (col.empty()) {
      for (size_t i = 0; i < cells.size(); ++i) col[cells[i]] = static_cast<int>(i);
      for (const char* need : {"sn", "gpu", "model"}) {
        if (!col.count(need)) {
          return InvalidArgumentError(source + ":" + std::to_string(n) +
                                      ": openb node list: missing column \"" + need + "\"");
        }
      }
      continue;
    }
    if (cells.size() != col.size()) {
      return InvalidArgumentError(source + ":" + std::to_string(n) + ": expected " +
                                  std::to_string(col.size()) + " fields (as the header), got " +
                                  std::to_string(cells.size()));
    }
    const std::string& name = cells[col["sn"]];
    const std::string& gtext = cells[col["gpu"]];
    const std::string& model = cells[col["model"]];
    auto g = ParseInt(gtext);
    if (!g.ok() || *g < 0 || *g > 64) {
      return InvalidArgumentError(source + ":" + std::to_string(n) +
                                  ": column \"gpu\": expected 0..64, got \"" + gtext + "\"");
    }
    if (name.empty()) {
      return InvalidArgumentError(source + ":" + std::to_string(n) + ": column \"sn\": empty");
    }
    if (!names.insert(name).second) {
      return InvalidArgumentError(source + ":" + std::to_string(n) + ": column \"sn\": node \"" +
                                  name + "\" listed twice");
    }
    if (*g == 0) continue;  // CPU-only node
    const int gpus = static_cast<int>(*g);
    const std::string pname = ProfileName(model, gpus);
    profiles.emplace(pname, std::make_pair(model.empty() ? std::string("unknown") : model, gpus));
    nodes.push_back({name, pname});
  }
  if (nodes.empty()) return InvalidArgumentError(source + ": no GPU node in the node list");

  std::ostringstream y;
  y << "# Built from the openb node list " << source << " (" << nodes.size()
    << " GPU nodes). The trace has no topology: intra-node links, one " << kNicGbps
    << " Gb/s RoCE NIC per node\n# and leaves of " << kNodesPerLeaf
    << " nodes under one spine are assumptions (docs/simulator.md).\n"
    << "version: 1\nname: openb\n\nprofiles:\n";
  for (const auto& [pname, mg] : profiles) {
    y << "  - name: " << pname << "\n    synthetic: \"" << Synthetic(mg.first, mg.second)
      << "\"\n    gpu_model: \"" << mg.first << "\"\n";
  }
  y << "\nnodes:\n";
  for (const Node& node : nodes) {
    y << "  - {hosts: \"" << node.name << "\", profile: " << node.profile << "}\n";
  }
  const int64_t leaf_uplink = int64_t{kNodesPerLeaf} * kNicGbps;
  y << "\nnetwork:\n  levels:\n"
    << "    - {name: spine, generate: {count: 1, prefix: spine}}\n"
    << "    - {name: leaf, uplink_gbps: " << leaf_uplink
    << ", oversubscription: 1, generate: {size: " << kNodesPerLeaf << ", prefix: leaf}}\n";
  return y.str();
}

StatusOr<topo::Cluster> ReadOpenbNodeList(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, size_t{64} << 20, "a node list"));
  ASSIGN_OR_RETURN(std::string yaml, OpenbNodesToClusterYaml(text, path));
  auto c = topo::io::ParseClusterYaml(yaml, path + " (as a cluster spec)", ".");
  if (!c.ok()) return c.status();
  topo::Cluster cluster = std::move(c).value();
  cluster.Finalize();
  return cluster;
}

bool LooksLikeOpenbNodeList(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return false;
  return StartsWith(first, "sn,");
}

}  // namespace toposched::sim
