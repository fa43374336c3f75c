#include "cost/gpu_spec.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/strings.h"

namespace toposched::cost {

StatusOr<double> ParseByteSize(std::string_view text) {
  std::string s(Trim(text));
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0)
    return InvalidArgumentError("bad size \"" + s + "\" (e.g. 1GiB, 512MiB, 1GB, 1048576)");
  auto v = ParseDouble(s.substr(0, i));
  if (!v.ok()) return InvalidArgumentError("bad size \"" + s + "\"");
  std::string unit = ToLower(Trim(s.substr(i)));
  double mult = 1;
  if (!unit.empty() && unit != "b") {
    static const std::string kPrefixes = "kmgtp";
    size_t p = kPrefixes.find(unit[0]);
    std::string rest = unit.substr(1);
    if (p == std::string::npos || !(rest.empty() || rest == "b" || rest == "ib")) {
      return InvalidArgumentError("bad size unit in \"" + s +
                                  "\" (B, K/KiB/KB, M/MiB/MB, G/GiB/GB)");
    }
    mult = std::pow(rest == "b" ? 1000.0 : 1024.0, static_cast<double>(p + 1));
  }
  double bytes = *v * mult;
  if (!(bytes >= 0) || bytes > std::pow(2.0, 50)) {
    return InvalidArgumentError("size \"" + s + "\" out of range (0 .. 1 PiB)");
  }
  return bytes;
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = bytes;
  while (v >= 1024 && u < 5 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++u;
  }
  if (u == 0 && bytes >= 1024) {
    while (v >= 1024 && u < 5) {
      v /= 1024;
      ++u;
    }
  }
  char buf[64];
  if (v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.0f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g %s", v, kUnits[u]);
  }
  return buf;
}

namespace {

StatusOr<std::vector<int>> IndicesToPositions(const topo::NodeTopology& t,
                                              const std::vector<int>& indices,
                                              const std::string& where) {
  std::vector<int> out;
  for (int idx : indices) {
    int pos = t.gpu_pos(idx);
    if (pos < 0) return InvalidArgumentError(where + "has no GPU" + std::to_string(idx));
    out.push_back(pos);
  }
  return out;
}

// Splits on commas that are not inside [...].
std::vector<std::string> SplitTopLevel(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.emplace_back(Trim(cur));
  return out;
}

bool IsIndexItem(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return std::isdigit(static_cast<unsigned char>(s[0]));
}

}  // namespace

StatusOr<std::vector<int>> ParseNodeGpuSpec(const topo::NodeTopology& t, std::string_view spec) {
  std::string s(Trim(spec));
  if (s.empty()) return InvalidArgumentError("empty GPU list");
  std::vector<int> out;
  if (ToLower(s) == "all") {
    for (int i = 0; i < static_cast<int>(t.gpus.size()); ++i) out.push_back(i);
  } else {
    std::set<int> seen;
    for (const std::string& item : Split(s, ',')) {
      std::string_view it = Trim(item);
      ASSIGN_OR_RETURN(std::vector<int> idx, ParseIntList(it, 4096));
      if (idx.empty()) return InvalidArgumentError("empty item in GPU list \"" + s + "\"");
      ASSIGN_OR_RETURN(std::vector<int> pos, IndicesToPositions(t, idx, "the topology "));
      for (int p : pos) {
        if (!seen.insert(p).second) {
          return InvalidArgumentError("GPU" + std::to_string(t.gpus[p].index) +
                                      " listed twice in \"" + s + "\"");
        }
        out.push_back(p);
      }
    }
  }
  if (out.empty()) return InvalidArgumentError("the GPU list \"" + s + "\" selects no GPU");
  return out;
}

StatusOr<std::vector<GpuRef>> ParseClusterGpuSpec(const topo::Cluster& c, std::string_view spec) {
  std::string s(Trim(spec));
  if (s.empty()) return InvalidArgumentError("empty GPU list");
  std::vector<GpuRef> out;
  std::set<std::pair<int, int>> seen;
  auto add = [&](int node, int pos) -> Status {
    if (!seen.insert({node, pos}).second) {
      return InvalidArgumentError(c.nodes[node].name + "/GPU" +
                                  std::to_string(c.topology(node).gpus[pos].index) +
                                  " listed twice");
    }
    out.push_back(GpuRef{node, pos});
    return OkStatus();
  };
  auto add_all = [&](int node) -> Status {
    for (int p = 0; p < static_cast<int>(c.topology(node).gpus.size()); ++p) {
      RETURN_IF_ERROR(add(node, p));
    }
    return OkStatus();
  };
  if (ToLower(s) == "all") {
    for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) RETURN_IF_ERROR(add_all(n));
  } else {
    std::vector<int> current;  // nodes of the last host:list item
    for (const std::string& item : SplitTopLevel(s)) {
      if (item.empty()) return InvalidArgumentError("empty item in GPU list \"" + s + "\"");
      size_t colon = item.rfind(':');
      if (colon == std::string::npos && IsIndexItem(item)) {
        if (current.empty()) {
          return InvalidArgumentError("GPU index \"" + item + "\" without a host before it");
        }
        ASSIGN_OR_RETURN(std::vector<int> idx, ParseIntList(item, 4096));
        for (int node : current) {
          ASSIGN_OR_RETURN(std::vector<int> pos,
                           IndicesToPositions(c.topology(node), idx, c.nodes[node].name + " "));
          for (int p : pos) RETURN_IF_ERROR(add(node, p));
        }
        continue;
      }
      std::string hosts = colon == std::string::npos ? item : item.substr(0, colon);
      ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandHostList(hosts, 1 << 16));
      current.clear();
      for (const std::string& h : names) {
        int node = c.FindNode(h);
        if (node < 0) return InvalidArgumentError("unknown node \"" + h + "\"");
        current.push_back(node);
      }
      if (colon == std::string::npos) {
        for (int node : current) RETURN_IF_ERROR(add_all(node));
        current.clear();
        continue;
      }
      ASSIGN_OR_RETURN(std::vector<int> idx, ParseIntList(item.substr(colon + 1), 4096));
      if (idx.empty()) return InvalidArgumentError("no GPU after \"" + hosts + ":\"");
      for (int node : current) {
        ASSIGN_OR_RETURN(std::vector<int> pos,
                         IndicesToPositions(c.topology(node), idx, c.nodes[node].name + " "));
        for (int p : pos) RETURN_IF_ERROR(add(node, p));
      }
    }
  }
  if (out.empty()) return InvalidArgumentError("the GPU list \"" + s + "\" selects no GPU");
  return out;
}

}  // namespace toposched::cost
