// FormatClusterYaml: a Cluster back into the cluster spec YAML (docs/cluster-spec.md).
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "core/strings.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::topo::io {

namespace {

// A YAML double-quoted scalar: every name and host list is quoted, so '[', ',' and ':' in
// host lists and domain names ("s[4-7]") never turn into YAML syntax.
std::string Q(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Shortest text that reads back as the same double.
std::string Num(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string Names(const Cluster& c, const std::vector<int>& nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (int n : nodes) names.push_back(c.nodes[n].name);
  return CompressHostList(names);
}

std::string Comment(const std::string& header) {
  std::string out;
  if (header.empty()) return out;
  for (const std::string& line : Split(header, '\n')) {
    out += line.empty() ? "#\n" : "# " + line + "\n";
  }
  return out;
}

void WriteNodes(const Cluster& c, std::string& out) {
  out += "\nnodes:\n";
  size_t begin = 0;
  while (begin < c.nodes.size()) {
    size_t end = begin + 1;
    while (end < c.nodes.size() && c.nodes[end].profile == c.nodes[begin].profile &&
           c.nodes[end].health == c.nodes[begin].health) {
      ++end;
    }
    std::vector<int> run;
    for (size_t n = begin; n < end; ++n) run.push_back(static_cast<int>(n));
    out += "  - hosts: " + Q(Names(c, run)) + "\n";
    out += "    profile: " + Q(c.profiles[c.nodes[begin].profile].name) + "\n";
    if (c.nodes[begin].health != Health::kHealthy) {
      out += "    health: " + std::string(HealthName(c.nodes[begin].health)) + "\n";
    }
    begin = end;
  }
}

void WriteNetwork(const Cluster& c, std::string& out) {
  if (c.levels.empty()) return;
  out += "\nnetwork:\n  levels:\n";
  for (const NetworkLevel& l : c.levels) {
    out += "    - name: " + Q(l.name) + "\n";
    if (l.uplink_gbps > 0) out += "      uplink_gbps: " + Num(l.uplink_gbps) + "\n";
    if (l.oversubscription != 1.0) {
      out += "      oversubscription: " + Num(l.oversubscription) + "\n";
    }
  }
  out += "  domains:\n";
  // Top level first, so every parent is written before its children.
  for (size_t level = 0; level < c.levels.size(); ++level) {
    for (const NetworkDomain& d : c.domains) {
      if (d.level != static_cast<int>(level)) continue;
      out += "    - {name: " + Q(d.name) + ", level: " + Q(c.levels[level].name);
      if (d.parent >= 0) out += ", parent: " + Q(c.domains[d.parent].name);
      if (!d.nodes.empty()) out += ", nodes: " + Q(Names(c, d.nodes));
      out += "}\n";
    }
  }
}

}  // namespace

StatusOr<std::string> FormatClusterYaml(const Cluster& cluster, const std::string& header) {
  Status valid = cluster.Validate();
  if (!valid.ok()) return valid.WithPrefix("cannot write cluster " + Q(cluster.name));
  std::string out = Comment(header);
  out += "version: 1\nname: " + Q(cluster.name) + "\n\nprofiles:\n";
  for (const HardwareProfile& p : cluster.profiles) {
    if (p.topology_file.empty()) {
      return InvalidArgumentError("profile " + Q(p.name) +
                                  " has no topology file to write (synthetic profiles are not "
                                  "written back)");
    }
    out += "  - name: " + Q(p.name) + "\n    topology: " + Q(p.topology_file) + "\n";
  }
  WriteNodes(cluster, out);
  WriteNetwork(cluster, out);
  if (cluster.rails.count > 0) {
    out += "\nrails:\n  count: " + std::to_string(cluster.rails.count) + "\n";
    if (!cluster.rails.scope_level.empty()) {
      out += "  scope: " + Q(cluster.rails.scope_level) + "\n";
    }
  }
  if (!cluster.nvlink_domains.empty()) {
    out += "\nnvlink_domains:\n";
    for (const NvlinkDomain& nv : cluster.nvlink_domains) {
      out += "  - {name: " + Q(nv.name) + ", nodes: " + Q(Names(cluster, nv.nodes)) +
             ", gpu_bandwidth_gbps: " + Num(nv.gpu_bandwidth_gbps) + "}\n";
    }
  }
  return out;
}

}  // namespace toposched::topo::io
