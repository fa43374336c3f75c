// Kernel and driver lines (dmesg/syslog NVRM, PCIe AER), nvidia-smi -q / nvlink -e output and
// dcgmi diag tables. Patterns: docs/diagnose.md, sources "NVIDIA Xid catalogue", "NVIDIA GPU
// memory error management", "Linux PCIe AER".
#include <string>
#include <string_view>

#include "diag/readers.h"
#include "diag/text.h"
#include "diag/xid.h"

namespace toposched::diag {

namespace {

// The Xid as other tools report it: the Kubernetes device plugin's "XidCriticalError: Xid=79 on
// Device=GPU-...", DCGM's and node-problem-detectors' "Xid=48", "XID 79".
void ReadOtherXid(const LineRef& line, EvidenceSet& out) {
  for (std::string_view m : {"Xid=", "XID=", "xid=", "XID "}) {
    auto code = IntAfter(line.text, m);
    if (!code || *code <= 0 || *code > 100000) continue;
    if (Evidence* e = out.Add(Kind::kXid, line)) {
      const XidInfo info = LookupXid(static_cast<int>(*code));
      e->fields.emplace_back("code", std::to_string(*code));
      e->fields.emplace_back("pci", std::string(TokenAfter(line.text, "Device=")));
      e->fields.emplace_back("meaning",
                             info.known ? std::string(info.meaning) : "not in the table");
      e->fields.emplace_back("action", XidActionName(info.action));
    }
    return;
  }
}

// "NVRM: Xid (PCI:0000:9b:00): 119, pid=..., ..." (also "Xid (0000:01:00): 3, ...").
void ReadXid(const LineRef& line, EvidenceSet& out) {
  auto rest = After(line.text, "Xid (");
  if (!rest) {
    ReadOtherXid(line, out);
    return;
  }
  const size_t close = rest->find(')');
  if (close == std::string_view::npos) return;
  std::string_view pci = rest->substr(0, close);
  std::string_view after = rest->substr(close + 1);
  if (!after.empty() && after.front() == ':') after.remove_prefix(1);
  auto code = LeadingInt(after);
  if (!code || *code < 0 || *code > 100000) return;
  if (Evidence* e = out.Add(Kind::kXid, line)) {
    const XidInfo info = LookupXid(static_cast<int>(*code));
    if (pci.starts_with("PCI:")) pci.remove_prefix(4);
    e->fields.emplace_back("code", std::to_string(*code));
    e->fields.emplace_back("pci", std::string(pci));
    // "Xid (PCI:...): 45, ... caused by previous Xid 149": the earlier Xid is the fault.
    if (auto prev = IntAfter(line.text, "caused by previous Xid ")) {
      e->fields.emplace_back("previous", std::to_string(*prev));
    }
    e->fields.emplace_back("meaning", info.known ? std::string(info.meaning) : "not in the table");
    e->fields.emplace_back("action", XidActionName(info.action));
  }
}

// nvidia-smi -q ECC and row-remapping sections: "SRAM Uncorrectable : 5", "Pending : Yes",
// "Remapping Failure Occurred : Yes".
void ReadSmiQuery(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = SkipSpaces(line.text);
  if (t.starts_with("SRAM Uncorrectable") || t.starts_with("DRAM Uncorrectable")) {
    auto n = IntAfter(t, ":");
    if (n && *n > 0) {
      if (Evidence* e = out.Add(Kind::kEccUncorrectable, line)) {
        e->fields.emplace_back("count", std::to_string(*n));
      }
    }
  } else if (t.starts_with("Pending") && Has(t, ": Yes")) {
    out.Add(Kind::kRowRemapPending, line);
  } else if (t.starts_with("Remapping Failure Occurred") && Has(t, ": Yes")) {
    out.Add(Kind::kRowRemapFailure, line);
  }
}

// nvidia-smi nvlink -e: "Link 3: Replay Errors: 0".
void ReadNvlinkCounter(const LineRef& line, EvidenceSet& out) {
  auto n = IntAfter(line.text, "Errors:");
  if (!n) return;
  out.Add(*n == 0 ? Kind::kNvlinkCountersClean : Kind::kNvlinkErrors, line);
}

}  // namespace

void ReadDriverLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (Has(t, "Xid") || Has(t, "XID") || Has(t, "xid=")) ReadXid(line, out);
  if (Has(t, "fallen off the bus")) out.Add(Kind::kFallenOffBus, line);
  if (Has(t, "ncorrectable")) {
    if (Has(t, "uncorrectable ECC error") || Has(t, "uncorrectable memory error")) {
      out.Add(Kind::kEccUncorrectable, line);
    } else {
      ReadSmiQuery(line, out);
    }
  }
  if (Has(t, "row remappings are pending")) out.Add(Kind::kRowRemapPending, line);
  if (Has(t, ": Yes")) ReadSmiQuery(line, out);
  if (Has(t, "Unable to determine the device handle") || Has(t, "GPU is lost")) {
    out.Add(Kind::kGpuLost, line);
  }
  if (Has(t, "Fail - GPU")) out.Add(Kind::kGpuDiagFail, line);
  if (Has(t, "available PCIe bandwidth, limited by")) out.Add(Kind::kPcieLinkLimited, line);
  if (Has(t, "PCIe Bus Error:")) {
    if (Evidence* e = out.Add(Kind::kPcieAerError, line)) {
      e->fields.emplace_back("severity", std::string(TokenAfter(t, "severity=")));
    }
  }
  // A NIC's link went down, as the kernel's NIC drivers word it: mlx5_core "Link down", e1000e/
  // ixgbe/ice "NIC Link is Down", IPoIB "ib0: ... link is down".
  const bool link_down = Has(t, "ink ") && (Has(t, "Link down") || Has(t, "link down") ||
                                            Has(t, "Link is Down") || Has(t, "link is down"));
  if (link_down && (Has(t, "mlx") || Has(t, "NIC") || Has(t, "ib") || Has(t, "eth") ||
                    Has(t, "ens") || Has(t, "enp") || Has(t, "bond"))) {
    out.Add(Kind::kNicLinkDown, line);
  }
  if (Has(t, "Link ") &&
      (Has(t, "Replay Errors:") || Has(t, "Recovery Errors:") || Has(t, "CRC Errors:"))) {
    ReadNvlinkCounter(line, out);
  }
}

}  // namespace toposched::diag
