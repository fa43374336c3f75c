// Live discovery: hwloc on the running system (conversion shared with the hwloc XML reader),
// then sysfs for what hwloc does not export: InfiniBand port rate and link layer
// (<sysfs>/class/infiniband/<dev>/ports/<port>/{rate,link_layer}) and netdev speed
// (<sysfs>/class/net/<dev>/speed, Mb/s). RDMA devices that sysfs lists but hwloc did not
// report (hwloc built without its I/O backends, some containers) are added without PCIe
// placement. hwloc itself always reads the real /sys; sysfs_root only redirects these reads.
#include "topo/io/discover.h"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/strings.h"
#include "topo/io/hwloc_internal.h"

namespace toposched::topo::io {

namespace {

namespace fs = std::filesystem;

// First line of a small sysfs file, trimmed; nullopt when it cannot be read.
std::optional<std::string> ReadSysfsLine(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  if (in.bad()) return std::nullopt;
  return std::string(Trim(line));
}

// "100 Gb/sec (4X EDR)" -> 100.
std::optional<double> ParseIbRate(const std::string& text) {
  auto toks = SplitWhitespace(text);
  if (toks.empty()) return std::nullopt;
  auto v = ParseDouble(toks[0]);
  if (!v.ok() || *v <= 0) return std::nullopt;
  return *v;
}

LinkLayer IbLinkLayer(const std::string& text) {
  std::string s = ToLower(text);
  if (s == "infiniband") return LinkLayer::kInfiniBand;
  if (s == "ethernet") return LinkLayer::kRoCE;  // RDMA over an Ethernet port
  return LinkLayer::kUnknown;
}

// Lowest-numbered port directory of an RDMA device, or nullopt.
std::optional<int> FirstIbPort(const fs::path& dev_dir) {
  std::error_code ec;
  std::optional<int> best;
  for (const auto& e : fs::directory_iterator(dev_dir / "ports", ec)) {
    auto v = ParseInt(e.path().filename().string());
    if (v.ok() && *v >= 0 && *v < 1024 && (!best || *v < *best)) best = static_cast<int>(*v);
  }
  return best;
}

void FillFromIbSysfs(const fs::path& dev_dir, Nic* nic) {
  fs::path port_dir = dev_dir / "ports" / std::to_string(nic->port);
  if (auto rate = ReadSysfsLine(port_dir / "rate")) {
    if (auto gbps = ParseIbRate(*rate)) nic->rate_gbps = *gbps;
  }
  if (auto ll = ReadSysfsLine(port_dir / "link_layer")) {
    LinkLayer l = IbLinkLayer(*ll);
    if (l != LinkLayer::kUnknown) nic->link_layer = l;
  }
}

void FillFromNetSysfs(const fs::path& net_dir, Nic* nic) {
  if (!nic->rate_gbps) {
    if (auto speed = ReadSysfsLine(net_dir / "speed")) {
      auto mbps = ParseInt(*speed);
      if (mbps.ok() && *mbps > 0) nic->rate_gbps = static_cast<double>(*mbps) / 1000.0;
    }
  }
  if (nic->link_layer == LinkLayer::kUnknown) {
    if (auto type = ReadSysfsLine(net_dir / "type")) {
      if (*type == "1") nic->link_layer = LinkLayer::kEthernet;     // ARPHRD_ETHER
      if (*type == "32") nic->link_layer = LinkLayer::kInfiniBand;  // ARPHRD_INFINIBAND
    }
  }
}

// Sysfs facts for NICs hwloc reported, plus RDMA devices it missed.
void EnrichFromSysfs(const fs::path& root, NodeTopology* t) {
  const fs::path ib_root = root / "class" / "infiniband";
  const fs::path net_root = root / "class" / "net";
  std::error_code ec;
  for (Nic& nic : t->nics) {
    if (fs::is_directory(ib_root / nic.name, ec)) FillFromIbSysfs(ib_root / nic.name, &nic);
    if (fs::is_directory(net_root / nic.name, ec)) FillFromNetSysfs(net_root / nic.name, &nic);
  }
  std::vector<std::string> missing;
  for (const auto& e : fs::directory_iterator(ib_root, ec)) {
    std::string name = e.path().filename().string();
    if (t->nic_pos(name) < 0) missing.push_back(name);
  }
  std::sort(missing.begin(), missing.end());
  for (const std::string& name : missing) {
    const fs::path dev_dir = ib_root / name;
    Nic nic;
    nic.name = name;
    nic.port = FirstIbPort(dev_dir).value_or(1);
    FillFromIbSysfs(dev_dir, &nic);
    // <dev>/device links to the PCI device directory, named by its bus id.
    fs::path target = fs::read_symlink(dev_dir / "device", ec);
    if (!ec) {
      std::string bus = target.filename().string();
      if (std::count(bus.begin(), bus.end(), ':') == 2) nic.pci_bus_id = ToLower(bus);
    }
    ec.clear();
    if (auto numa = ReadSysfsLine(dev_dir / "device" / "numa_node")) {
      auto v = ParseInt(*numa);
      if (v.ok() && *v >= 0 && *v < 1 << 16) nic.numa = static_cast<int>(*v);
    }
    t->nics.push_back(std::move(nic));
  }
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

Status DiscoverOptions::Validate() const {
  if (sysfs_root.empty()) return InvalidArgumentError("discover: sysfs_root must not be empty");
  return OkStatus();
}

StatusOr<NodeTopology> DiscoverLocal(const DiscoverOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return InternalError(std::string("discover: hwloc_topology_init failed: ") +
                         std::strerror(errno));
  }
  hwloc_internal::TopologyPtr topo(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(raw) != 0) {
    return InternalError(std::string("discover: hwloc could not read this machine: ") +
                         std::strerror(errno));
  }
  const fs::path root = options.sysfs_root;
  return hwloc_internal::ToNodeTopology(raw, "discover:" + HostName(),
                                        [&root](NodeTopology* t) { EnrichFromSysfs(root, t); });
}

}  // namespace toposched::topo::io
