#include "topo/synthetic.h"

#include <algorithm>
#include <map>

#include "core/strings.h"

namespace toposched::topo {

namespace {

// DGX-1 hybrid cube-mesh link counts (V100): two quads with NV2/NV1 inside and one link to the
// mirror GPU of the other quad.
int CubeMeshLinks(int a, int b) {
  static const int kLinks[8][8] = {{0, 2, 2, 1, 1, 0, 0, 0}, {2, 0, 1, 1, 0, 2, 0, 0},
                                   {2, 1, 0, 2, 0, 0, 1, 0}, {1, 1, 2, 0, 0, 0, 0, 2},
                                   {1, 0, 0, 0, 0, 2, 2, 1}, {0, 2, 0, 0, 2, 0, 1, 1},
                                   {0, 0, 1, 0, 2, 1, 0, 2}, {0, 0, 0, 2, 1, 1, 2, 0}};
  return kLinks[a][b];
}

}  // namespace

StatusOr<NodeTopology> MakeSyntheticTopology(std::string_view description) {
  std::map<std::string, std::string> kv;
  for (const std::string& tok : SplitWhitespace(description)) {
    size_t colon = tok.find(':');
    std::string key = colon == std::string::npos ? tok : tok.substr(0, colon);
    std::string val = colon == std::string::npos ? "" : tok.substr(colon + 1);
    static const char* kKeys[] = {"gpu",    "nvswitch", "cubemesh", "pcie",
                                  "nvlink", "sockets",  "switches", "nics",
                                  "model",  "nic_gbps", "linklayer"};
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) {
      return InvalidArgumentError("synthetic topology \"" + std::string(description) +
                                  "\": unknown key \"" + key + "\"");
    }
    kv[key] = val;
  }
  auto num = [&](const std::string& key, long long def) -> StatusOr<long long> {
    auto it = kv.find(key);
    if (it == kv.end() || it->second.empty()) return def;
    auto v = ParseInt(it->second);
    if (!v.ok()) return v.status().WithPrefix("synthetic topology: " + key);
    return v;
  };
  ASSIGN_OR_RETURN(long long ngpu, num("gpu", 8));
  ASSIGN_OR_RETURN(long long sockets, num("sockets", 1));
  ASSIGN_OR_RETURN(long long nswitch, num("switches", 0));
  ASSIGN_OR_RETURN(long long nnics, num("nics", 0));
  ASSIGN_OR_RETURN(long long nvsw_links, num("nvswitch", 18));
  ASSIGN_OR_RETURN(long long direct, num("nvlink", 0));
  if (ngpu < 1 || ngpu > 72) return InvalidArgumentError("synthetic topology: gpu must be 1..72");
  if (sockets < 1 || sockets > 8 || nswitch < 0 || nswitch > 64 || nnics < 0 || nnics > 64) {
    return InvalidArgumentError("synthetic topology: sockets 1..8, switches/nics 0..64");
  }
  if (kv.count("cubemesh") && ngpu != 8) {
    return InvalidArgumentError("synthetic topology: cubemesh needs gpu:8");
  }
  NodeTopology t;
  t.source = "synthetic:" + std::string(description);
  if (kv.count("model")) t.gpu_model = kv["model"];
  if (nswitch == 0) nswitch = std::max<long long>(1, std::min<long long>(ngpu / 2, 4 * sockets));
  if (nswitch % sockets != 0) {
    return InvalidArgumentError("synthetic topology: switches must be a multiple of sockets");
  }
  for (int s = 0; s < sockets; ++s) {
    NumaNode n;
    n.id = s;
    for (int c = 0; c < 16; ++c) n.cpus.push_back(s * 16 + c);
    t.numa_nodes.push_back(n);
    // One host bridge per switch: DGX/HGX boards put each switch on its own root port.
  }
  for (int w = 0; w < nswitch; ++w) {
    int socket = static_cast<int>(w * sockets / nswitch);
    t.host_bridges.push_back(HostBridge{w, socket, ""});
    t.pcie_switches.push_back(PcieSwitch{w, -1, w, "", 0, 16});
  }
  for (int i = 0; i < ngpu; ++i) {
    Gpu g;
    g.index = i;
    g.model = t.gpu_model;
    int w = static_cast<int>(i * nswitch / ngpu);
    g.pcie.switches = {w};
    g.pcie.host_bridge = w;
    g.numa = t.host_bridges[w].numa;
    g.cpus = t.numa_nodes[*g.numa].cpus;
    t.gpus.push_back(g);
  }
  std::optional<double> rate;
  if (kv.count("nic_gbps")) {
    ASSIGN_OR_RETURN(double r, ParseDouble(kv["nic_gbps"]));
    rate = r;
  }
  LinkLayer ll = LinkLayer::kInfiniBand;
  if (kv.count("linklayer")) {
    ASSIGN_OR_RETURN(ll, ParseLinkLayer(kv["linklayer"]));
  }
  for (int c = 0; c < nnics; ++c) {
    Nic n;
    n.index = c;
    n.name = "mlx5_" + std::to_string(c);
    n.rate_gbps = rate;
    n.link_layer = ll;
    int w = static_cast<int>(c * nswitch / nnics);
    n.pcie.switches = {w};
    n.pcie.host_bridge = w;
    n.numa = t.host_bridges[w].numa;
    t.nics.push_back(n);
  }
  std::vector<std::vector<int>> nv(ngpu, std::vector<int>(ngpu, 0));
  if (kv.count("nvswitch")) {
    t.nvswitch = true;
    t.nvswitch_count = ngpu >= 8 ? 4 : 2;
    for (auto& g : t.gpus) g.nvlink_ports = static_cast<int>(nvsw_links);
    for (int a = 0; a < ngpu; ++a)
      for (int b = 0; b < ngpu; ++b)
        if (a != b) nv[a][b] = static_cast<int>(nvsw_links);
  } else if (kv.count("cubemesh")) {
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 8; ++b) nv[a][b] = CubeMeshLinks(a, b);
  } else if (direct > 0) {
    for (int a = 0; a < ngpu; ++a)
      for (int b = 0; b < ngpu; ++b)
        if (a != b) nv[a][b] = static_cast<int>(direct);
  }
  t.DerivePathsFromStructure(nv);
  t.InferNvSwitch();
  RETURN_IF_ERROR(t.Validate());
  return t;
}

}  // namespace toposched::topo
