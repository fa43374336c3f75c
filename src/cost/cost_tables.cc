#include "cost/cost_tables.h"

#include <nlohmann/json.hpp>

namespace toposched::cost {

namespace {

// data/hardware/cost.json, embedded by the build as a raw string literal (CMakeLists.txt).
constexpr char kEmbeddedCostJson[] =
#include "embedded_cost_json.inc"
    ;
std::string LoadCostJson() { return kEmbeddedCostJson; }

double Value(const nlohmann::json& v) {
  if (v.is_object())
    return v.contains("value") ? v.at("value").get<double>() : v.at("gbps").get<double>();
  return v.get<double>();
}

const char* kTransportKeys[5] = {"nvlink", "pcie_p2p", "shm", "net_ib", "net_socket"};

}  // namespace

double CostTables::NvlsFactor(int nvlink_gen) const {
  auto it = nvls_busbw_factor.find(nvlink_gen);
  return it == nvls_busbw_factor.end() ? 0.0 : it->second;
}

double CostTables::NicRateGBps(const topo::Nic& nic) const {
  if (nic.rate_gbps && *nic.rate_gbps > 0) return *nic.rate_gbps / 8.0;
  auto it = default_nic_gbps.find(nic.link_layer);
  if (it != default_nic_gbps.end()) return it->second / 8.0;
  return 100.0 / 8.0;
}

StatusOr<CostTables> CostTables::FromJson(const std::string& text) {
  CostTables t;
  std::string at = "";
  try {
    auto j = nlohmann::json::parse(text);
    at = "efficiency";
    for (int i = 0; i < 5; ++i) t.efficiency[i] = Value(j.at("efficiency").at(kTransportKeys[i]));
    at = "latency_us";
    const auto& lat = j.at("latency_us");
    for (int i = 0; i < 5; ++i) t.latency_us[i] = Value(lat.at(kTransportKeys[i]));
    t.base_latency_us = Value(lat.at("base"));
    t.nvls_latency_us = Value(lat.at("nvls"));
    at = "nvls_busbw_factor";
    for (auto& [k, v] : j.at("nvls_busbw_factor").items()) {
      if (!k.empty() && k[0] == '_') continue;
      t.nvls_busbw_factor[std::stoi(k)] = Value(v);
    }
    at = "nvls_tree_efficiency";
    t.nvls_tree_efficiency = Value(j.at("nvls_tree_efficiency"));
    at = "gdr_off_factor";
    t.gdr_off_factor = Value(j.at("gdr_off_factor"));
    at = "socket_max_gbps_per_node";
    t.socket_max_gbps_per_node = Value(j.at("socket_max_gbps_per_node"));
    at = "nic_gbps";
    for (auto& [k, v] : j.at("nic_gbps").items()) {
      if (!k.empty() && k[0] == '_') continue;
      t.nic_gbps[k] = Value(v);
    }
    at = "default_nic_gbps";
    for (auto& [k, v] : j.at("default_nic_gbps").items()) {
      if (!k.empty() && k[0] == '_') continue;
      topo::LinkLayer ll = topo::LinkLayer::kUnknown;
      if (k != "unknown") {
        auto parsed = topo::ParseLinkLayer(k);
        if (!parsed.ok()) return parsed.status().WithPrefix("cost tables: default_nic_gbps");
        ll = *parsed;
      }
      t.default_nic_gbps[ll] = Value(v);
    }
    at = "host_nic_gbps";
    t.host_nic_gbps = Value(j.at("host_nic_gbps"));
    at = "nvswitch_systems";
    for (const auto& s : j.at("nvswitch_systems")) {
      NvSwitchSystem sys;
      sys.name = s.at("name").get<std::string>();
      sys.nvlink_gen = s.at("nvlink_gen").get<int>();
      sys.gpus = s.at("gpus").get<int>();
      sys.links_per_gpu = s.at("links_per_gpu").get<int>();
      sys.nvls = s.at("nvls").get<bool>();
      t.nvswitch_systems.push_back(sys);
    }
  } catch (const std::exception& e) {
    return InvalidArgumentError("cost tables: " + at + ": " + e.what());
  }
  for (int i = 0; i < 5; ++i) {
    if (!(t.efficiency[i] > 0 && t.efficiency[i] <= 1.5)) {
      return InvalidArgumentError(std::string("cost tables: efficiency.") + kTransportKeys[i] +
                                  " must be in (0, 1.5]");
    }
    if (!(t.latency_us[i] >= 0)) {
      return InvalidArgumentError(std::string("cost tables: latency_us.") + kTransportKeys[i] +
                                  " must be >= 0");
    }
  }
  if (!(t.nvls_tree_efficiency > 0 && t.nvls_tree_efficiency <= 1)) {
    return InvalidArgumentError("cost tables: nvls_tree_efficiency must be in (0, 1]");
  }
  if (!(t.gdr_off_factor > 0 && t.gdr_off_factor <= 1)) {
    return InvalidArgumentError("cost tables: gdr_off_factor must be in (0, 1]");
  }
  if (!(t.socket_max_gbps_per_node > 0) || !(t.host_nic_gbps > 0)) {
    return InvalidArgumentError("cost tables: socket_max_gbps_per_node and host_nic_gbps > 0");
  }
  return t;
}

const std::string& DefaultCostJson() {
  static const std::string text = LoadCostJson();
  return text;
}

const CostTables& CostTables::Default() {
  static const CostTables tables = [] {
    const std::string& text = DefaultCostJson();
    if (text.empty()) {
      DieBadStatusOrAccess(
          InternalError("cost tables: data/hardware/cost.json not embedded "
                        "and not found in the source tree"));
    }
    auto t = FromJson(text);
    if (!t.ok()) DieBadStatusOrAccess(t.status());
    return std::move(t).value();
  }();
  return tables;
}

}  // namespace toposched::cost
