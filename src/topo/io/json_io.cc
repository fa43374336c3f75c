#include "topo/io/json_io.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <vector>

#include "core/strings.h"

namespace toposched::topo::io {

using nlohmann::json;

namespace {

json OptInt(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }

json PlacementJson(const PciePlacement& p) {
  return json{{"switches", p.switches}, {"host_bridge", p.host_bridge}};
}

// Reading: a small cursor that remembers the JSON path for error messages.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  Status Error(const std::string& path, const std::string& what) const {
    return InvalidArgumentError(source_ + ": " + path + ": " + what);
  }
  template <typename T>
  struct IsIntVector : std::false_type {};
  template <typename U>
  struct IsIntVector<std::vector<U>>
      : std::bool_constant<std::is_integral_v<U> && !std::is_same_v<U, bool>> {};
  // A JSON number as T: a number outside T (1e38 for an int) would be converted with undefined
  // behaviour, a fraction truncated.
  template <typename T>
  StatusOr<T> Whole(const json& v, const std::string& path) const {
    const bool whole =
        v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                  std::floor(v.get<double>()) == v.get<double>());
    if (!whole) return Error(path, "expected a whole number");
    const long double x = v.is_number_unsigned()  ? v.get<uint64_t>()
                          : v.is_number_integer() ? v.get<int64_t>()
                                                  : v.get<double>();
    if (x < static_cast<long double>(std::numeric_limits<T>::min()) ||
        x > static_cast<long double>(std::numeric_limits<T>::max())) {
      return Error(path, "out of range: " + v.dump());
    }
    return static_cast<T>(x);
  }
  template <typename T>
  Status Get(const json& j, const char* key, const std::string& path, T& out,
             bool required = true) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required) return Error(path + "." + key, "missing");
      return OkStatus();
    }
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (it->is_number()) {
        ASSIGN_OR_RETURN(out, Whole<T>(*it, path + "." + key));
        return OkStatus();
      }
    } else if constexpr (IsIntVector<T>::value) {
      if (it->is_array()) {
        T v;
        for (size_t i = 0; i < it->size(); ++i) {
          const json& e = (*it)[i];
          if (!e.is_number()) break;  // the type error below names it
          ASSIGN_OR_RETURN(
              typename T::value_type x,
              Whole<typename T::value_type>(e, path + "." + key + "[" + std::to_string(i) + "]"));
          v.push_back(x);
        }
        if (v.size() == it->size()) {
          out = std::move(v);
          return OkStatus();
        }
      }
    }
    try {
      out = it->get<T>();
    } catch (const std::exception& e) {
      return Error(path + "." + key, std::string("wrong type: ") + e.what());
    }
    return OkStatus();
  }
  template <typename T>
  Status GetOpt(const json& j, const char* key, const std::string& path,
                std::optional<T>& out) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      out.reset();
      return OkStatus();
    }
    T v{};
    RETURN_IF_ERROR(Get(j, key, path, v));
    out = v;
    return OkStatus();
  }

 private:
  std::string source_;
};

Status ReadPlacement(const Reader& r, const json& j, const std::string& path, PciePlacement& p) {
  auto it = j.find("pcie");
  if (it == j.end()) return OkStatus();
  RETURN_IF_ERROR(r.Get(*it, "switches", path + ".pcie", p.switches, false));
  RETURN_IF_ERROR(r.Get(*it, "host_bridge", path + ".pcie", p.host_bridge, false));
  return OkStatus();
}

json TopologyJsonValue(const NodeTopology& t) {
  json j;
  j["source"] = t.source;
  j["gpu_model"] = t.gpu_model;
  j["nvswitch"] = t.nvswitch;
  j["nvswitch_count"] = t.nvswitch_count;
  j["nvlink_known"] = !t.nvlink_unknown;
  json gpus = json::array();
  for (const Gpu& g : t.gpus) {
    json e{{"index", g.index},
           {"name", "GPU" + std::to_string(g.index)},
           {"pci_bus_id", g.pci_bus_id},
           {"model", g.model},
           {"memory_mib", g.memory_mib ? json(*g.memory_mib) : json(nullptr)},
           {"numa", OptInt(g.numa)},
           {"cpus", g.cpus ? json(FormatIntList(*g.cpus)) : json(nullptr)},
           {"health", HealthName(g.health)},
           {"nvlink_ports", g.nvlink_ports},
           {"pcie", PlacementJson(g.pcie)}};
    gpus.push_back(e);
  }
  j["gpus"] = gpus;
  json nics = json::array();
  for (const Nic& c : t.nics) {
    nics.push_back(json{{"index", c.index},
                        {"name", c.name},
                        {"port", c.port},
                        {"rate_gbps", c.rate_gbps ? json(*c.rate_gbps) : json(nullptr)},
                        {"link_layer", LinkLayerName(c.link_layer)},
                        {"pci_bus_id", c.pci_bus_id},
                        {"numa", OptInt(c.numa)},
                        {"health", HealthName(c.health)},
                        {"pcie", PlacementJson(c.pcie)}});
  }
  j["nics"] = nics;
  json numa = json::array();
  for (const NumaNode& n : t.numa_nodes) {
    numa.push_back(json{{"id", n.id}, {"cpus", FormatIntList(n.cpus)}});
  }
  j["numa_nodes"] = numa;
  json sw = json::array();
  for (const PcieSwitch& s : t.pcie_switches) {
    sw.push_back(json{{"id", s.id},
                      {"parent", s.parent},
                      {"host_bridge", s.host_bridge},
                      {"pci_bus_id", s.pci_bus_id},
                      {"gen", s.gen},
                      {"width", s.width}});
  }
  j["pcie_switches"] = sw;
  json hb = json::array();
  for (const HostBridge& h : t.host_bridges) {
    hb.push_back(json{{"id", h.id}, {"numa", OptInt(h.numa)}, {"pci_bus_id", h.pci_bus_id}});
  }
  j["host_bridges"] = hb;
  json links = json::array();
  int n = t.num_devices();
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const Path& p = t.path(a, b);
      links.push_back(json{{"a", t.device_name(a)},
                           {"b", t.device_name(b)},
                           {"path", PathName(p)},
                           {"nvlinks", p.nvlinks}});
    }
  }
  j["links"] = links;
  return j;
}

StatusOr<NodeTopology> TopologyFromJsonValue(const json& j, const Reader& r,
                                             const std::string& path) {
  if (!j.is_object()) return r.Error(path, "expected an object");
  NodeTopology t;
  RETURN_IF_ERROR(r.Get(j, "source", path, t.source, false));
  RETURN_IF_ERROR(r.Get(j, "gpu_model", path, t.gpu_model, false));
  RETURN_IF_ERROR(r.Get(j, "nvswitch", path, t.nvswitch, false));
  RETURN_IF_ERROR(r.Get(j, "nvswitch_count", path, t.nvswitch_count, false));
  bool nvlink_known = true;
  RETURN_IF_ERROR(r.Get(j, "nvlink_known", path, nvlink_known, false));
  t.nvlink_unknown = !nvlink_known;
  auto list = [&](const char* key) -> StatusOr<json> {
    auto it = j.find(key);
    if (it == j.end()) return json::array();
    if (!it->is_array()) return r.Error(path + "." + key, "expected an array");
    return *it;
  };
  ASSIGN_OR_RETURN(json gpus, list("gpus"));
  for (size_t i = 0; i < gpus.size(); ++i) {
    std::string p = path + ".gpus[" + std::to_string(i) + "]";
    const json& e = gpus[i];
    Gpu g;
    RETURN_IF_ERROR(r.Get(e, "index", p, g.index));
    RETURN_IF_ERROR(r.Get(e, "pci_bus_id", p, g.pci_bus_id, false));
    RETURN_IF_ERROR(r.Get(e, "model", p, g.model, false));
    RETURN_IF_ERROR(r.GetOpt(e, "memory_mib", p, g.memory_mib));
    RETURN_IF_ERROR(r.GetOpt(e, "numa", p, g.numa));
    std::optional<std::string> cpus;
    RETURN_IF_ERROR(r.GetOpt(e, "cpus", p, cpus));
    if (cpus) {
      auto v = ParseIntList(*cpus);
      if (!v.ok()) return r.Error(p + ".cpus", v.status().message());
      g.cpus = *v;
    }
    std::string health = "healthy";
    RETURN_IF_ERROR(r.Get(e, "health", p, health, false));
    auto h = ParseHealth(health);
    if (!h.ok()) return r.Error(p + ".health", h.status().message());
    g.health = *h;
    RETURN_IF_ERROR(r.Get(e, "nvlink_ports", p, g.nvlink_ports, false));
    RETURN_IF_ERROR(ReadPlacement(r, e, p, g.pcie));
    t.gpus.push_back(g);
  }
  ASSIGN_OR_RETURN(json nics, list("nics"));
  for (size_t i = 0; i < nics.size(); ++i) {
    std::string p = path + ".nics[" + std::to_string(i) + "]";
    const json& e = nics[i];
    Nic c;
    RETURN_IF_ERROR(r.Get(e, "index", p, c.index, false));
    c.index = static_cast<int>(i);
    RETURN_IF_ERROR(r.Get(e, "name", p, c.name));
    RETURN_IF_ERROR(r.Get(e, "port", p, c.port, false));
    RETURN_IF_ERROR(r.GetOpt(e, "rate_gbps", p, c.rate_gbps));
    std::string ll = "unknown";
    RETURN_IF_ERROR(r.Get(e, "link_layer", p, ll, false));
    auto l = ParseLinkLayer(ll);
    if (!l.ok()) return r.Error(p + ".link_layer", l.status().message());
    c.link_layer = *l;
    RETURN_IF_ERROR(r.Get(e, "pci_bus_id", p, c.pci_bus_id, false));
    RETURN_IF_ERROR(r.GetOpt(e, "numa", p, c.numa));
    std::string health = "healthy";
    RETURN_IF_ERROR(r.Get(e, "health", p, health, false));
    auto h = ParseHealth(health);
    if (!h.ok()) return r.Error(p + ".health", h.status().message());
    c.health = *h;
    RETURN_IF_ERROR(ReadPlacement(r, e, p, c.pcie));
    t.nics.push_back(c);
  }
  ASSIGN_OR_RETURN(json numa, list("numa_nodes"));
  for (size_t i = 0; i < numa.size(); ++i) {
    std::string p = path + ".numa_nodes[" + std::to_string(i) + "]";
    NumaNode n;
    RETURN_IF_ERROR(r.Get(numa[i], "id", p, n.id));
    std::string cpus;
    RETURN_IF_ERROR(r.Get(numa[i], "cpus", p, cpus, false));
    auto v = ParseIntList(cpus);
    if (!v.ok()) return r.Error(p + ".cpus", v.status().message());
    n.cpus = *v;
    t.numa_nodes.push_back(n);
  }
  ASSIGN_OR_RETURN(json sws, list("pcie_switches"));
  for (size_t i = 0; i < sws.size(); ++i) {
    std::string p = path + ".pcie_switches[" + std::to_string(i) + "]";
    PcieSwitch s;
    RETURN_IF_ERROR(r.Get(sws[i], "id", p, s.id));
    RETURN_IF_ERROR(r.Get(sws[i], "parent", p, s.parent, false));
    RETURN_IF_ERROR(r.Get(sws[i], "host_bridge", p, s.host_bridge, false));
    RETURN_IF_ERROR(r.Get(sws[i], "pci_bus_id", p, s.pci_bus_id, false));
    RETURN_IF_ERROR(r.Get(sws[i], "gen", p, s.gen, false));
    RETURN_IF_ERROR(r.Get(sws[i], "width", p, s.width, false));
    t.pcie_switches.push_back(s);
  }
  ASSIGN_OR_RETURN(json hbs, list("host_bridges"));
  for (size_t i = 0; i < hbs.size(); ++i) {
    std::string p = path + ".host_bridges[" + std::to_string(i) + "]";
    HostBridge h;
    RETURN_IF_ERROR(r.Get(hbs[i], "id", p, h.id));
    RETURN_IF_ERROR(r.GetOpt(hbs[i], "numa", p, h.numa));
    RETURN_IF_ERROR(r.Get(hbs[i], "pci_bus_id", p, h.pci_bus_id, false));
    t.host_bridges.push_back(h);
  }
  t.ResetPaths();
  std::map<std::string, int> dev;
  for (int d = 0; d < t.num_devices(); ++d) dev[t.device_name(d)] = d;
  ASSIGN_OR_RETURN(json links, list("links"));
  std::vector<char> seen(static_cast<size_t>(t.num_devices()) * t.num_devices(), 0);
  for (size_t i = 0; i < links.size(); ++i) {
    std::string p = path + ".links[" + std::to_string(i) + "]";
    std::string a, b, ps;
    RETURN_IF_ERROR(r.Get(links[i], "a", p, a));
    RETURN_IF_ERROR(r.Get(links[i], "b", p, b));
    RETURN_IF_ERROR(r.Get(links[i], "path", p, ps));
    auto ia = dev.find(a), ib = dev.find(b);
    if (ia == dev.end()) return r.Error(p + ".a", "unknown device \"" + a + "\"");
    if (ib == dev.end()) return r.Error(p + ".b", "unknown device \"" + b + "\"");
    if (ia->second == ib->second) return r.Error(p, "a device linked to itself");
    auto path_v = ParsePath(ps);
    if (!path_v.ok()) return r.Error(p + ".path", path_v.status().message());
    t.set_path(ia->second, ib->second, *path_v);
    seen[ia->second * t.num_devices() + ib->second] = 1;
    seen[ib->second * t.num_devices() + ia->second] = 1;
  }
  for (int a = 0; a < t.num_devices(); ++a) {
    for (int b = a + 1; b < t.num_devices(); ++b) {
      if (!seen[a * t.num_devices() + b]) {
        return r.Error(path + ".links", "no entry for the pair " + t.device_name(a) + "-" +
                                            t.device_name(b) + " (every pair must be listed)");
      }
    }
  }
  Status v = t.Validate();
  if (!v.ok()) return r.Error(path, v.message());
  return t;
}

}  // namespace

std::string TopologyToJson(const NodeTopology& t, int indent) {
  return TopologyJsonValue(t).dump(indent);
}

StatusOr<NodeTopology> TopologyFromJson(std::string_view text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number overflow
    return InvalidArgumentError(source + ": not valid JSON: " + e.what());
  }
  return TopologyFromJsonValue(j, Reader(source), "$");
}

std::string ClusterToJson(const Cluster& c, int indent) {
  json j;
  j["name"] = c.name;
  json profiles = json::array();
  for (const HardwareProfile& p : c.profiles) {
    profiles.push_back(json{{"name", p.name},
                            {"topology_file", p.topology_file},
                            {"topology", TopologyJsonValue(p.topology)}});
  }
  j["profiles"] = profiles;
  json levels = json::array();
  for (const NetworkLevel& l : c.levels) {
    levels.push_back(json{{"name", l.name},
                          {"uplink_gbps", l.uplink_gbps},
                          {"oversubscription", l.oversubscription}});
  }
  j["levels"] = levels;
  json domains = json::array();
  for (const NetworkDomain& d : c.domains) {
    domains.push_back(json{{"name", d.name},
                           {"level", d.level},
                           {"parent", d.parent},
                           {"children", d.children},
                           {"nodes", d.nodes}});
  }
  j["domains"] = domains;
  json nodes = json::array();
  for (const ClusterNode& n : c.nodes) {
    nodes.push_back(json{{"name", n.name},
                         {"profile", n.profile},
                         {"domain", n.domain},
                         {"nvlink_domain", n.nvlink_domain},
                         {"health", HealthName(n.health)}});
  }
  j["nodes"] = nodes;
  json nvd = json::array();
  for (const NvlinkDomain& d : c.nvlink_domains) {
    nvd.push_back(
        json{{"name", d.name}, {"nodes", d.nodes}, {"gpu_bandwidth_gbps", d.gpu_bandwidth_gbps}});
  }
  j["nvlink_domains"] = nvd;
  j["rails"] = json{{"count", c.rails.count}, {"scope_level", c.rails.scope_level}};
  return j.dump(indent);
}

StatusOr<Cluster> ClusterFromJson(std::string_view text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number overflow
    return InvalidArgumentError(source + ": not valid JSON: " + e.what());
  }
  Reader r(source);
  if (!j.is_object()) return r.Error("$", "expected an object");
  Cluster c;
  RETURN_IF_ERROR(r.Get(j, "name", "$", c.name, false));
  auto arr = [&](const char* key) -> StatusOr<json> {
    auto it = j.find(key);
    if (it == j.end()) return json::array();
    if (!it->is_array()) return r.Error(std::string("$.") + key, "expected an array");
    return *it;
  };
  ASSIGN_OR_RETURN(json profiles, arr("profiles"));
  for (size_t i = 0; i < profiles.size(); ++i) {
    std::string p = "$.profiles[" + std::to_string(i) + "]";
    HardwareProfile hp;
    RETURN_IF_ERROR(r.Get(profiles[i], "name", p, hp.name));
    RETURN_IF_ERROR(r.Get(profiles[i], "topology_file", p, hp.topology_file, false));
    auto it = profiles[i].find("topology");
    if (it == profiles[i].end()) return r.Error(p + ".topology", "missing");
    ASSIGN_OR_RETURN(hp.topology, TopologyFromJsonValue(*it, r, p + ".topology"));
    c.profiles.push_back(std::move(hp));
  }
  ASSIGN_OR_RETURN(json levels, arr("levels"));
  for (size_t i = 0; i < levels.size(); ++i) {
    std::string p = "$.levels[" + std::to_string(i) + "]";
    NetworkLevel l;
    RETURN_IF_ERROR(r.Get(levels[i], "name", p, l.name));
    RETURN_IF_ERROR(r.Get(levels[i], "uplink_gbps", p, l.uplink_gbps, false));
    RETURN_IF_ERROR(r.Get(levels[i], "oversubscription", p, l.oversubscription, false));
    c.levels.push_back(l);
  }
  ASSIGN_OR_RETURN(json domains, arr("domains"));
  for (size_t i = 0; i < domains.size(); ++i) {
    std::string p = "$.domains[" + std::to_string(i) + "]";
    NetworkDomain d;
    RETURN_IF_ERROR(r.Get(domains[i], "name", p, d.name));
    RETURN_IF_ERROR(r.Get(domains[i], "level", p, d.level));
    RETURN_IF_ERROR(r.Get(domains[i], "parent", p, d.parent, false));
    RETURN_IF_ERROR(r.Get(domains[i], "children", p, d.children, false));
    RETURN_IF_ERROR(r.Get(domains[i], "nodes", p, d.nodes, false));
    c.domains.push_back(d);
  }
  ASSIGN_OR_RETURN(json nodes, arr("nodes"));
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string p = "$.nodes[" + std::to_string(i) + "]";
    ClusterNode n;
    RETURN_IF_ERROR(r.Get(nodes[i], "name", p, n.name));
    RETURN_IF_ERROR(r.Get(nodes[i], "profile", p, n.profile));
    RETURN_IF_ERROR(r.Get(nodes[i], "domain", p, n.domain, false));
    RETURN_IF_ERROR(r.Get(nodes[i], "nvlink_domain", p, n.nvlink_domain, false));
    std::string health = "healthy";
    RETURN_IF_ERROR(r.Get(nodes[i], "health", p, health, false));
    auto h = ParseHealth(health);
    if (!h.ok()) return r.Error(p + ".health", h.status().message());
    n.health = *h;
    if (n.profile < 0 || n.profile >= static_cast<int>(c.profiles.size())) {
      return r.Error(p + ".profile", "no profile with index " + std::to_string(n.profile));
    }
    c.nodes.push_back(n);
  }
  ASSIGN_OR_RETURN(json nvd, arr("nvlink_domains"));
  for (size_t i = 0; i < nvd.size(); ++i) {
    std::string p = "$.nvlink_domains[" + std::to_string(i) + "]";
    NvlinkDomain d;
    RETURN_IF_ERROR(r.Get(nvd[i], "name", p, d.name));
    RETURN_IF_ERROR(r.Get(nvd[i], "nodes", p, d.nodes, false));
    RETURN_IF_ERROR(r.Get(nvd[i], "gpu_bandwidth_gbps", p, d.gpu_bandwidth_gbps, false));
    c.nvlink_domains.push_back(d);
  }
  if (auto it = j.find("rails"); it != j.end()) {
    RETURN_IF_ERROR(r.Get(*it, "count", "$.rails", c.rails.count, false));
    RETURN_IF_ERROR(r.Get(*it, "scope_level", "$.rails", c.rails.scope_level, false));
  }
  // Indices must stay in range before Validate() dereferences them.
  int nd = static_cast<int>(c.domains.size());
  for (size_t i = 0; i < c.domains.size(); ++i) {
    const NetworkDomain& d = c.domains[i];
    std::string p = "$.domains[" + std::to_string(i) + "]";
    if (d.level < 0 || d.level >= static_cast<int>(c.levels.size())) {
      return r.Error(p + ".level", "out of range");
    }
    if (d.parent < -1 || d.parent >= nd) return r.Error(p + ".parent", "out of range");
    for (int ch : d.children) {
      if (ch < 0 || ch >= nd) return r.Error(p + ".children", "out of range");
    }
    for (int n : d.nodes) {
      if (n < 0 || n >= static_cast<int>(c.nodes.size())) {
        return r.Error(p + ".nodes", "out of range");
      }
    }
  }
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const ClusterNode& n = c.nodes[i];
    std::string p = "$.nodes[" + std::to_string(i) + "]";
    if (n.domain < -1 || n.domain >= nd) return r.Error(p + ".domain", "out of range");
    if (n.nvlink_domain < -1 || n.nvlink_domain >= static_cast<int>(c.nvlink_domains.size())) {
      return r.Error(p + ".nvlink_domain", "out of range");
    }
  }
  for (size_t i = 0; i < c.nvlink_domains.size(); ++i) {
    for (int n : c.nvlink_domains[i].nodes) {
      if (n < 0 || n >= static_cast<int>(c.nodes.size())) {
        return r.Error("$.nvlink_domains[" + std::to_string(i) + "].nodes", "out of range");
      }
    }
  }
  Status v = c.Validate();
  if (!v.ok()) return r.Error("$", v.message());
  return c;
}

}  // namespace toposched::topo::io
