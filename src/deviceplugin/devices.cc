#include "deviceplugin/devices.h"

#include <cctype>
#include <fstream>
#include <set>

#include "core/strings.h"

namespace toposched::deviceplugin {

namespace {

// The driver's information file is about 500 bytes; anything far larger is not it.
constexpr std::streamsize kMaxInfoBytes = 64 * 1024;

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return !s.empty();
}

// "GPU-" followed by hex digits and dashes (the driver prints a 36-character RFC 4122 form).
bool IsGpuUuid(std::string_view s) {
  if (!StartsWith(s, "GPU-") || s.size() > 63) return false;
  bool hex = false;
  for (char c : s.substr(4)) {
    if (c == '-') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    hex = true;
  }
  return hex;
}

StatusOr<DriverGpu> ParseDriverInfo(const std::string& path, const std::string& text) {
  DriverGpu g;
  int line_no = 0;
  for (const std::string& raw : Split(text, '\n')) {
    ++line_no;
    const size_t colon = raw.find(':');
    if (colon == std::string::npos) continue;
    const std::string_view key = Trim(std::string_view(raw).substr(0, colon));
    const std::string_view value = Trim(std::string_view(raw).substr(colon + 1));
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    if (key == "GPU UUID") {
      if (!IsGpuUuid(value)) {
        return InvalidArgumentError(where + "GPU UUID: expected GPU-<hex>, got " + Quote(value));
      }
      g.uuid = std::string(value);
    } else if (key == "Device Minor") {
      auto minor = ParseInt(value);
      if (!minor.ok() || *minor < 0 || *minor > 255) {
        return InvalidArgumentError(where + "Device Minor: expected 0..255, got " + Quote(value));
      }
      g.minor = static_cast<int>(*minor);
    }
  }
  return g;
}

}  // namespace

std::string NormalizeBusId(std::string_view bus_id) {
  const std::vector<std::string> parts = Split(ToLower(Trim(bus_id)), ':');
  if (parts.size() != 2 && parts.size() != 3) return "";
  std::string domain = parts.size() == 3 ? parts[0] : "0000";
  const std::string& bus = parts[parts.size() - 2];
  const std::string& devfn = parts.back();
  if (!IsHex(domain) || domain.size() > 8 || !IsHex(bus) || bus.size() != 2) return "";
  const size_t dot = devfn.find('.');
  if (dot != 2 || devfn.size() != 4 || !IsHex(devfn.substr(0, 2)) || !IsHex(devfn.substr(3))) {
    return "";
  }
  while (domain.size() > 4 && domain.front() == '0') domain.erase(0, 1);
  while (domain.size() < 4) domain.insert(0, "0");
  return domain + ":" + bus + ":" + devfn;
}

StatusOr<std::map<std::string, DriverGpu>> ReadDriverGpus(const std::string& proc_root,
                                                          const topo::NodeTopology& t) {
  std::map<std::string, DriverGpu> out;
  for (const topo::Gpu& gpu : t.gpus) {
    const std::string bus = NormalizeBusId(gpu.pci_bus_id);
    if (bus.empty()) continue;
    const std::string path = proc_root + "/driver/nvidia/gpus/" + bus + "/information";
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    std::string text(static_cast<size_t>(kMaxInfoBytes) + 1, '\0');
    in.read(text.data(), kMaxInfoBytes + 1);
    text.resize(static_cast<size_t>(in.gcount()));
    if (text.size() > static_cast<size_t>(kMaxInfoBytes)) {
      return InvalidArgumentError(path + ": larger than 64 KiB; not a driver information file");
    }
    ASSIGN_OR_RETURN(DriverGpu g, ParseDriverInfo(path, text));
    out[bus] = g;
  }
  return out;
}

StatusOr<DeviceTable> DeviceTable::Create(const topo::NodeTopology& t,
                                          const std::map<std::string, DriverGpu>& driver) {
  if (t.gpus.empty()) return InvalidArgumentError("the node's topology has no GPU");
  DeviceTable table;
  std::set<std::string> ids;
  for (size_t pos = 0; pos < t.gpus.size(); ++pos) {
    const topo::Gpu& gpu = t.gpus[pos];
    GpuDevice d;
    d.pos = static_cast<int>(pos);
    d.index = gpu.index;
    d.numa = gpu.numa;
    d.healthy = gpu.health != topo::Health::kUnhealthy;
    auto it = driver.find(NormalizeBusId(gpu.pci_bus_id));
    if (it != driver.end()) {
      d.uuid = it->second.uuid;
      d.minor = it->second.minor;
    }
    d.id = d.uuid.empty() ? std::to_string(gpu.index) : d.uuid;
    if (!ids.insert(d.id).second) {
      return InvalidArgumentError("GPU " + std::to_string(gpu.index) + ": device id " +
                                  Quote(d.id) + " is another GPU's too");
    }
    table.devices_.push_back(std::move(d));
  }
  return table;
}

StatusOr<int> DeviceTable::Position(std::string_view id) const {
  for (const GpuDevice& d : devices_) {
    if (d.id == id) return d.pos;
  }
  std::string known;
  for (const GpuDevice& d : devices_) known += (known.empty() ? "" : ",") + d.id;
  return NotFoundError("unknown device id " + Quote(id) + " (this node's devices: " + known + ")");
}

StatusOr<std::vector<int>> DeviceTable::Positions(std::span<const std::string> ids,
                                                  const std::string& field) const {
  std::vector<int> out;
  std::set<int> seen;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto pos = Position(ids[i]);
    if (!pos.ok()) return pos.status().WithPrefix(field + "[" + std::to_string(i) + "]");
    if (!seen.insert(*pos).second) {
      return InvalidArgumentError(field + "[" + std::to_string(i) + "]: device id " +
                                  Quote(ids[i]) + " given twice");
    }
    out.push_back(*pos);
  }
  return out;
}

bool DeviceTable::SetHealthy(int pos, bool healthy) {
  if (devices_[pos].healthy == healthy) return false;
  devices_[pos].healthy = healthy;
  return true;
}

}  // namespace toposched::deviceplugin
