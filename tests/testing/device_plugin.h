// A running device plugin over a real topology sample, for tests: the plugin serves on a
// socket in a fresh directory (a kubelet may or may not be started there by the test).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "deviceplugin/plugin.h"
#include "testing/kubelet.h"
#include "testing/samples.h"
#include "topo/io/import.h"

namespace toposched::testing {

// Real node topologies the device plugin tests use (data/samples, each with its provenance): an
// 8x H100 NVSwitch node with a NIC per GPU, a DGX-1 hybrid cube-mesh, PCIe switches without
// NVLink.
inline constexpr char kDgxH100Sample[] =
    "nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt";
inline constexpr char kDgx1CubeMeshSample[] =
    "nvidia-smi/01-v100-sxm2-8gpu-hybrid-cubemesh-paddle-fleetx.txt";
inline constexpr char kPcieSwitchSample[] =
    "nvidia-smi/partial/P11-8gpu-mlx4-pix-phb-2017-kubernetes53497.txt";

// The path of a file of data/samples.
inline std::string SamplePath(const std::string& rel) {
  return SourceDir() + "/data/samples/" + rel;
}

inline topo::NodeTopology LoadSample(const std::string& path) {
  auto t = topo::io::ImportTopologyFile(path, topo::io::TopoFormat::kAuto);
  EXPECT_TRUE(t.ok()) << path << ": " << t.status().ToString();
  return t.ok() ? *t : topo::NodeTopology{};
}

// Options for a plugin in `dir`: a 50 ms check interval keeps the re-registration tests short.
inline deviceplugin::PluginOptions TestPluginOptions(const std::string& dir) {
  deviceplugin::PluginOptions o;
  o.kubelet_dir = dir;
  o.restart_check_ms = 50;
  o.dev_root = dir + "/dev";
  o.proc_root = dir + "/proc";
  o.sys_root = dir + "/sys";
  return o;
}

// Creates and starts a plugin; null (with a test failure) when it cannot.
inline std::unique_ptr<deviceplugin::DevicePlugin> StartPlugin(
    const topo::NodeTopology& t, const deviceplugin::PluginOptions& o,
    const std::map<std::string, deviceplugin::DriverGpu>& driver = {}) {
  auto p = deviceplugin::DevicePlugin::Create(t, driver, o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return nullptr;
  Status s = (*p)->Start();
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return nullptr;
  return std::move(*p);
}

}  // namespace toposched::testing
