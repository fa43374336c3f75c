#include "topo/hardware.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace toposched::topo {

extern const char kEmbeddedLinksJson[];

namespace {

double Rate(const nlohmann::json& v) {
  if (v.is_object()) return v.at("gbps").get<double>();
  return v.get<double>();
}

double Value(const nlohmann::json& v) {
  if (v.is_object()) return v.at("value").get<double>();
  return v.get<double>();
}

}  // namespace

StatusOr<HardwareTable> HardwareTable::FromJson(const std::string& text) {
  HardwareTable t;
  try {
    auto j = nlohmann::json::parse(text);
    for (auto& [k, v] : j.at("nvlink_link_gbps").items())
      t.nvlink_link_gbps[std::stoi(k)] = Rate(v);
    for (auto& [k, v] : j.at("pcie_x16_gbps").items()) t.pcie_x16_gbps[std::stoi(k)] = Rate(v);
    t.host_bridge_factor = Value(j.at("host_bridge_factor"));
    t.node_gbps = Value(j.at("node_gbps"));
    t.sys_gbps = Value(j.at("sys_gbps"));
    t.default_pcie_gen = j.at("default_pcie_gen").get<int>();
    for (auto& [k, v] : j.at("nvlink_gen_by_ports").items()) {
      if (!k.empty() && k[0] == '_') continue;
      t.nvlink_gen_by_ports[std::stoi(k)] = v.get<int>();
    }
    for (const auto& m : j.at("gpu_models")) {
      GpuModelInfo info;
      info.match = m.at("match").get<std::string>();
      info.nvlink_gen = m.at("nvlink_gen").get<int>();
      info.nvlink_ports = m.at("nvlink_ports").get<int>();
      info.pcie_gen = m.at("pcie_gen").get<int>();
      t.gpu_models.push_back(info);
    }
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("hardware table: ") + e.what());
  }
  if (!t.pcie_x16_gbps.count(t.default_pcie_gen)) {
    return InvalidArgumentError("hardware table: default_pcie_gen has no pcie_x16_gbps entry");
  }
  return t;
}

const HardwareTable& HardwareTable::Default() {
  static const HardwareTable table = [] {
    auto t = FromJson(kEmbeddedLinksJson);
    if (!t.ok()) DieBadStatusOrAccess(t.status());
    return std::move(t).value();
  }();
  return table;
}

std::optional<GpuModelInfo> HardwareTable::Lookup(const std::string& model) const {
  if (model.empty()) return std::nullopt;
  // Names compare without case, spaces or dashes ("H100-SXM5" matches "H100 SXM5").
  auto norm = [](std::string_view s) {
    std::string out;
    for (char c : ToLower(s)) {
      if (c != ' ' && c != '-' && c != '_') out += c;
    }
    return out;
  };
  std::string m = norm(model);
  for (const GpuModelInfo& info : gpu_models) {  // first match wins: the table lists specific first
    if (m.find(norm(info.match)) != std::string::npos) return info;
  }
  return std::nullopt;
}

int HardwareTable::NvlinkGeneration(const NodeTopology& t) const {
  std::string model = t.gpu_model;
  if (model.empty() && !t.gpus.empty()) model = t.gpus[0].model;
  if (auto info = Lookup(model)) return info->nvlink_gen;
  int most = 0;
  for (const Gpu& g : t.gpus) most = std::max(most, g.nvlink_ports);
  if (most == 0) {
    for (int a = 0; a < static_cast<int>(t.gpus.size()); ++a) {
      for (int b = 0; b < static_cast<int>(t.gpus.size()); ++b) {
        if (a != b) most = std::max(most, t.gpu_gpu(a, b).nvlinks);
      }
    }
  }
  if (most == 0) return 0;
  // Smallest table entry that holds `most` links.
  for (const auto& [ports, gen] : nvlink_gen_by_ports) {
    if (most <= ports) return gen;
  }
  return nvlink_gen_by_ports.empty() ? 4 : nvlink_gen_by_ports.rbegin()->second;
}

int HardwareTable::PcieGeneration(const NodeTopology& t) const {
  std::string model = t.gpu_model;
  if (model.empty() && !t.gpus.empty()) model = t.gpus[0].model;
  if (auto info = Lookup(model)) return info->pcie_gen;
  int gen = NvlinkGeneration(t);
  // NVLink 2 parts shipped with PCIe 3, NVLink 3 with 4, NVLink 4/5 with 5.
  if (gen == 1 || gen == 2) return 3;
  if (gen == 3) return 4;
  if (gen >= 4) return 5;
  return default_pcie_gen;
}

double PairBandwidthGbps(const NodeTopology& t, int a, int b, const HardwareTable& table) {
  if (a == b) return 0;
  const Path& p = t.path(a, b);
  auto pcie_rate = [&]() {
    auto it = table.pcie_x16_gbps.find(table.PcieGeneration(t));
    return it == table.pcie_x16_gbps.end() ? table.pcie_x16_gbps.at(table.default_pcie_gen)
                                           : it->second;
  };
  switch (p.cls) {
    case PathClass::kNV: {
      int gen = table.NvlinkGeneration(t);
      auto it = table.nvlink_link_gbps.find(gen);
      double per_link = it == table.nvlink_link_gbps.end() ? 25.0 : it->second;
      int links = p.nvlinks;
      if (t.nvswitch) {
        int ng = static_cast<int>(t.gpus.size());
        int pa = a < ng ? t.gpus[a].nvlink_ports : 0;
        int pb = b < ng ? t.gpus[b].nvlink_ports : 0;
        int ports = std::min(pa > 0 ? pa : links, pb > 0 ? pb : links);
        links = std::max(links, ports);
      }
      return links * per_link;
    }
    case PathClass::kPIX:
    case PathClass::kPXB:
      return pcie_rate();
    case PathClass::kPHB:
      return pcie_rate() * table.host_bridge_factor;
    case PathClass::kNODE:
      return std::min(pcie_rate(), table.node_gbps);
    case PathClass::kSYS:
      return std::min(pcie_rate(), table.sys_gbps);
  }
  return 0;
}

}  // namespace toposched::topo
