// NCCL / RCCL topology XML reader (tinyxml2).
//
// Decisions:
//  - Host bridges: one HostBridge per <cpu> element (its numaid is the NUMA node; -1, written
//    when NCCL could not read it, is an unknown NUMA node). NCCL writes
//    one <pci> element per physical switch (it skips downstream ports and root ports when it
//    dumps sysfs), so every <pci> element that is a bridge (class 0x0604xx, or any <pci> that
//    has <pci> children, e.g. the class-less p5 file) is one PcieSwitch, nested as in the file.
//    NCCL's runtime flattening of Broadcom two-level switches is not repeated here.
//  - GPU: a <pci> with a <gpu> child, or of class 0x0300xx/0x0302xx (cloud files list GPUs as
//    bare <pci>). Index = <gpu dev> when every GPU has a distinct one, else PCI bus-id order.
//    Model from the PCI vendor/device id when it is a known data-center part, else "sm_<sm>"
//    (NVIDIA) or "AMD gfx<gcn>" (RCCL), else empty.
//  - NIC: one per <net> of a <nic> (under a <pci> or directly under <cpu>, azhpc NCv4); a
//    <pci> of class 0x02xxxx without <nic> is a bare NIC named NIC<index>. NICs are ordered by
//    <net dev> when given, then by bus id. speed (Mb/s) -> rate_gbps. Link layer: class 0x0207
//    -> InfiniBand; a net named eth*/en* -> Ethernet; otherwise unknown (EFA, RoCE cannot be told
//    apart from the file).
//  - A <pci> without class and without children (g5, p5 v2023) is an unknown device and is
//    left out: the file does not say what it is.
//  - <nvlink target count tclass>: to a GPU bus id -> that pair's NV count (the larger of the two
//    directions when they differ); tclass 0x068000 (NVSwitch) -> switched fabric, every pair of
//    switch-attached GPUs gets min(their switch link counts), nvswitch = true (NCCL shows no
//    chips, so nvswitch_count stays 0); a target equal to the GPU's own bus id (azhpc NCv4) is
//    ignored; other targets (a CPU's NVLink on POWER) count toward nvlink_ports only.
//  - <xgmi> (RCCL, AMD Infinity Fabric) is modelled like NVLink: its count becomes the pair's NV#
//    class and the GPUs' nvlink_ports. The path class keeps the NV name although the fabric is
//    xGMI; GPU models named "AMD ..." tell the two apart.
//  - A <graphs> document (NCCL_GRAPH_FILE) is rejected with InvalidArgument: it has no topology.
#include "topo/io/nccl_xml.h"

#include <tinyxml2.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/strings.h"

namespace toposched::topo::io {
namespace {

using tinyxml2::XMLElement;

constexpr size_t kMaxXmlBytes = 64u << 20;
constexpr int kMaxMaskWords = 4096;  // 131072 CPUs

struct GpuIdModel {
  unsigned vendor;
  unsigned device;
  const char* model;
};

// PCI ids of common data-center GPUs (from the PCI id database), for model names.
constexpr GpuIdModel kGpuIds[] = {
    {0x10de, 0x15f8, "Tesla P100-PCIE-16GB"},
    {0x10de, 0x15f9, "Tesla P100-SXM2-16GB"},
    {0x10de, 0x1db1, "Tesla V100-SXM2-16GB"},
    {0x10de, 0x1db4, "Tesla V100-PCIE-16GB"},
    {0x10de, 0x1db5, "Tesla V100-SXM2-32GB"},
    {0x10de, 0x1db6, "Tesla V100-PCIE-32GB"},
    {0x10de, 0x1db8, "Tesla V100-SXM3-32GB"},
    {0x10de, 0x20b0, "A100-SXM4-40GB"},
    {0x10de, 0x20b2, "A100-SXM4-80GB"},
    {0x10de, 0x20b5, "A100 80GB PCIe"},
    {0x10de, 0x20f1, "A100-PCIE-40GB"},
    {0x10de, 0x2236, "A10"},
    {0x10de, 0x2237, "A10G"},
    {0x10de, 0x2330, "H100 80GB HBM3"},
    {0x10de, 0x2331, "H100 PCIe"},
    // Not in the sources above: measured, nvidia-smi -q on an H200 (pci_device_id 0x233510DE,
    // product_name "NVIDIA H200"; data/samples/measured/README.md).
    {0x10de, 0x2335, "H200"},
    {0x10de, 0x2324, "H800"},
    {0x10de, 0x26b5, "L40"},
    {0x10de, 0x26b9, "L40S"},
    {0x10de, 0x27b8, "L4"},
    {0x1002, 0x740c, "AMD Instinct MI250X/MI250"},
    {0x1002, 0x740f, "AMD Instinct MI210"},
    {0x1002, 0x74a1, "AMD Instinct MI300X"},
    {0x1002, 0x74b5, "AMD Instinct MI300X VF"},
};

std::string Where(const std::string& source, const XMLElement* e) {
  return source + ":" + std::to_string(e->GetLineNum());
}

Status ElementError(const std::string& source, const XMLElement* e, const std::string& what) {
  return InvalidArgumentError(Where(source, e) + ": <" + e->Name() + ">: " + what);
}

std::optional<std::string> Attr(const XMLElement* e, const char* name) {
  const char* v = e->Attribute(name);
  if (v == nullptr) return std::nullopt;
  return std::string(Trim(v));
}

// Optional integer attribute; empty counts as absent. Hex with 0x.
StatusOr<std::optional<long long>> IntAttr(const std::string& source, const XMLElement* e,
                                           const char* name) {
  auto v = Attr(e, name);
  if (!v || v->empty()) return std::optional<long long>();
  std::string s = ToLower(*v);
  if (StartsWith(s, "0x")) {
    if (s.size() == 2 || s.size() > 18) {
      return ElementError(source, e, std::string(name) + "=\"" + *v + "\" is not a number");
    }
    unsigned long long out = 0;
    for (char c : s.substr(2)) {
      int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) return ElementError(source, e, std::string(name) + "=\"" + *v + "\" is not hex");
      out = out * 16 + static_cast<unsigned>(d);
    }
    return std::optional<long long>(static_cast<long long>(out));
  }
  auto n = ParseInt(s);
  if (!n.ok()) return ElementError(source, e, std::string(name) + ": " + n.status().message());
  return std::optional<long long>(*n);
}

// "0000:0c:00.0" normal form; other spellings (8-digit domains, capitals) map onto it. Text that
// is not a bus id is returned lower-cased.
std::string NormalizeBusId(std::string_view text) {
  std::string s = ToLower(Trim(text));
  unsigned domain = 0, bus = 0, dev = 0, func = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &func, &tail) == 4 &&
      bus < 256 && dev < 32 && func < 8) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain, bus, dev, func);
    return buf;
  }
  return s;
}

// Linux cpumask "000000ff,ffff0000,00ffffff" (32-bit words, most significant first) -> CPUs.
StatusOr<std::vector<int>> ParseCpuMask(std::string_view mask) {
  std::vector<std::string> words = Split(Trim(mask), ',');
  if (words.size() > kMaxMaskWords) return InvalidArgumentError("cpu mask too long");
  std::vector<int> cpus;
  const int n = static_cast<int>(words.size());
  for (int w = 0; w < n; ++w) {
    std::string word = ToLower(Trim(words[w]));
    if (StartsWith(word, "0x")) word = word.substr(2);
    if (word.empty() || word.size() > 8) {
      return InvalidArgumentError("bad cpu mask word \"" + words[w] + "\"");
    }
    unsigned long bits = 0;
    for (char c : word) {
      int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) return InvalidArgumentError("bad cpu mask word \"" + words[w] + "\"");
      bits = bits * 16 + static_cast<unsigned>(d);
    }
    const int base = (n - 1 - w) * 32;
    for (int b = 0; b < 32; ++b) {
      if (bits & (1ul << b)) cpus.push_back(base + b);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

// "8 GT/s", "16.0 GT/s PCIe", "32 GT/s PCIe/s" -> PCIe generation; 0 when unknown.
int PcieGenFromSpeed(std::string_view text) {
  auto toks = SplitWhitespace(Trim(text));
  if (toks.empty()) return 0;
  auto v = ParseDouble(toks[0]);
  if (!v.ok()) return 0;
  const double gts = *v;
  if (gts >= 60) return 6;
  if (gts >= 30) return 5;
  if (gts >= 15) return 4;
  if (gts >= 7.5) return 3;
  if (gts >= 4.5) return 2;
  if (gts >= 2) return 1;
  return 0;
}

struct LinkRef {
  std::string target;  // normalized bus id
  int count = 1;
  long long tclass = -1;
};

struct GpuRec {
  Gpu gpu;
  std::optional<long long> dev;
  std::vector<LinkRef> links;
};

struct NicRec {
  Nic nic;
  std::optional<long long> dev;
  int order = 0;
};

struct CpuCtx {
  int host_bridge = -1;
  std::optional<int> numa;
  std::optional<std::vector<int>> cpus;
};

class Parser {
 public:
  explicit Parser(const std::string& source) : source_(source) {}

  StatusOr<NodeTopology> Run(const XMLElement* system);

 private:
  Status ParseCpu(const XMLElement* cpu);
  Status ParsePci(const XMLElement* pci, const CpuCtx& cpu, const std::vector<int>& switches);
  Status ParseGpu(const XMLElement* pci, const XMLElement* gpu_elem, const CpuCtx& cpu,
                  const PciePlacement& placement);
  Status ParseNic(const XMLElement* nic, long long pci_class, const std::string& busid,
                  const CpuCtx& cpu, const PciePlacement& placement);
  NicRec BaseNic(const std::string& busid, const CpuCtx& cpu, const PciePlacement& placement);

  const std::string& source_;
  NodeTopology t_;
  std::vector<GpuRec> gpus_;
  std::vector<NicRec> nics_;
  int nic_order_ = 0;
};

Status Parser::ParseCpu(const XMLElement* cpu) {
  CpuCtx ctx;
  ASSIGN_OR_RETURN(std::optional<long long> numaid, IntAttr(source_, cpu, "numaid"));
  // -1: NCCL could not read the node's NUMA id (it does so in VMs without NUMA in sysfs, e.g.
  // data/samples/measured's single-H200 VM file): the NUMA node is unknown, as when absent.
  if (numaid && *numaid != -1) {
    if (*numaid < 0 || *numaid > 1 << 16) return ElementError(source_, cpu, "bad numaid");
    ctx.numa = static_cast<int>(*numaid);
  }
  if (auto aff = Attr(cpu, "affinity"); aff && !aff->empty()) {
    auto cpus = ParseCpuMask(*aff);
    if (!cpus.ok()) return ElementError(source_, cpu, "affinity: " + cpus.status().message());
    ctx.cpus = *cpus;
  }
  HostBridge hb;
  hb.id = static_cast<int>(t_.host_bridges.size());
  hb.numa = ctx.numa;
  t_.host_bridges.push_back(hb);
  ctx.host_bridge = hb.id;
  if (ctx.numa) {
    auto it = std::find_if(t_.numa_nodes.begin(), t_.numa_nodes.end(),
                           [&](const NumaNode& n) { return n.id == *ctx.numa; });
    if (it == t_.numa_nodes.end()) {
      t_.numa_nodes.push_back(NumaNode{*ctx.numa, {}});
      it = t_.numa_nodes.end() - 1;
    }
    if (ctx.cpus) {
      it->cpus.insert(it->cpus.end(), ctx.cpus->begin(), ctx.cpus->end());
      std::sort(it->cpus.begin(), it->cpus.end());
      it->cpus.erase(std::unique(it->cpus.begin(), it->cpus.end()), it->cpus.end());
    }
  }
  PciePlacement at_cpu;
  at_cpu.host_bridge = ctx.host_bridge;
  for (const XMLElement* c = cpu->FirstChildElement(); c != nullptr; c = c->NextSiblingElement()) {
    if (std::strcmp(c->Name(), "pci") == 0) {
      RETURN_IF_ERROR(ParsePci(c, ctx, {}));
    } else if (std::strcmp(c->Name(), "nic") == 0) {
      RETURN_IF_ERROR(ParseNic(c, -1, "", ctx, at_cpu));
    }
  }
  return OkStatus();
}

Status Parser::ParsePci(const XMLElement* pci, const CpuCtx& cpu,
                        const std::vector<int>& switches) {
  const std::string busid = NormalizeBusId(Attr(pci, "busid").value_or(""));
  ASSIGN_OR_RETURN(std::optional<long long> cls, IntAttr(source_, pci, "class"));
  const XMLElement* first_pci = pci->FirstChildElement("pci");
  const XMLElement* gpu_elem = pci->FirstChildElement("gpu");
  const XMLElement* nic_elem = pci->FirstChildElement("nic");
  const long long base_sub = cls ? (*cls >> 8) & 0xffff : -1;

  PciePlacement placement;
  placement.switches = switches;
  placement.host_bridge = cpu.host_bridge;

  if (first_pci != nullptr || base_sub == 0x0604) {
    PcieSwitch sw;
    sw.id = static_cast<int>(t_.pcie_switches.size());
    sw.parent = switches.empty() ? -1 : switches.back();
    sw.host_bridge = cpu.host_bridge;
    sw.pci_bus_id = busid;
    sw.gen = PcieGenFromSpeed(Attr(pci, "link_speed").value_or(""));
    ASSIGN_OR_RETURN(std::optional<long long> width, IntAttr(source_, pci, "link_width"));
    sw.width = width && *width > 0 && *width <= 64 ? static_cast<int>(*width) : 0;
    t_.pcie_switches.push_back(sw);
    std::vector<int> below = switches;
    below.push_back(sw.id);
    for (const XMLElement* c = first_pci; c != nullptr; c = c->NextSiblingElement("pci")) {
      RETURN_IF_ERROR(ParsePci(c, cpu, below));
    }
    return OkStatus();
  }
  if (gpu_elem != nullptr || base_sub == 0x0300 || base_sub == 0x0302) {
    return ParseGpu(pci, gpu_elem, cpu, placement);
  }
  if (nic_elem != nullptr || (cls && ((*cls >> 16) & 0xff) == 0x02)) {
    if (nic_elem == nullptr) {
      NicRec rec = BaseNic(busid, cpu, placement);
      if (base_sub == 0x0207) rec.nic.link_layer = LinkLayer::kInfiniBand;
      nics_.push_back(std::move(rec));
      return OkStatus();
    }
    for (const XMLElement* n = nic_elem; n != nullptr; n = n->NextSiblingElement("nic")) {
      RETURN_IF_ERROR(ParseNic(n, cls.value_or(-1), busid, cpu, placement));
    }
  }
  return OkStatus();  // a device the file does not classify
}

Status Parser::ParseGpu(const XMLElement* pci, const XMLElement* gpu_elem, const CpuCtx& cpu,
                        const PciePlacement& placement) {
  GpuRec rec;
  rec.gpu.pci_bus_id = NormalizeBusId(Attr(pci, "busid").value_or(""));
  rec.gpu.numa = cpu.numa;
  rec.gpu.cpus = cpu.cpus;
  rec.gpu.pcie = placement;
  ASSIGN_OR_RETURN(std::optional<long long> vendor, IntAttr(source_, pci, "vendor"));
  ASSIGN_OR_RETURN(std::optional<long long> device, IntAttr(source_, pci, "device"));
  if (vendor && device) {
    for (const GpuIdModel& m : kGpuIds) {
      if (m.vendor == *vendor && m.device == *device) rec.gpu.model = m.model;
    }
  }
  if (gpu_elem != nullptr) {
    ASSIGN_OR_RETURN(rec.dev, IntAttr(source_, gpu_elem, "dev"));
    if (rec.dev && (*rec.dev < 0 || *rec.dev > 1 << 16)) {
      return ElementError(source_, gpu_elem, "bad dev");
    }
    if (rec.gpu.model.empty()) {
      auto gcn = Attr(gpu_elem, "gcn");
      auto sm = Attr(gpu_elem, "sm");
      if (gcn && !gcn->empty()) {
        rec.gpu.model = "AMD " + (StartsWith(*gcn, "gfx") ? *gcn : "gfx" + *gcn);
      } else if (sm && !sm->empty()) {
        rec.gpu.model = "sm_" + *sm;
      }
    }
    for (const XMLElement* l = gpu_elem->FirstChildElement(); l != nullptr;
         l = l->NextSiblingElement()) {
      if (std::strcmp(l->Name(), "nvlink") != 0 && std::strcmp(l->Name(), "xgmi") != 0) continue;
      LinkRef link;
      link.target = NormalizeBusId(Attr(l, "target").value_or(""));
      ASSIGN_OR_RETURN(std::optional<long long> count, IntAttr(source_, l, "count"));
      if (count && (*count < 0 || *count > 1024)) return ElementError(source_, l, "bad count");
      link.count = count ? static_cast<int>(*count) : 1;
      ASSIGN_OR_RETURN(std::optional<long long> tclass, IntAttr(source_, l, "tclass"));
      link.tclass = tclass.value_or(-1);
      if (link.target == rec.gpu.pci_bus_id) continue;  // self-loop (azhpc NCv4): no peer
      rec.links.push_back(link);
    }
  }
  gpus_.push_back(std::move(rec));
  return OkStatus();
}

NicRec Parser::BaseNic(const std::string& busid, const CpuCtx& cpu,
                       const PciePlacement& placement) {
  NicRec rec;
  rec.nic.pci_bus_id = busid;
  rec.nic.numa = cpu.numa;
  rec.nic.pcie = placement;
  rec.order = nic_order_++;
  return rec;
}

Status Parser::ParseNic(const XMLElement* nic, long long pci_class, const std::string& busid,
                        const CpuCtx& cpu, const PciePlacement& placement) {
  const XMLElement* net = nic->FirstChildElement("net");
  if (net == nullptr) {
    NicRec rec = BaseNic(busid, cpu, placement);
    if (((pci_class >> 8) & 0xffff) == 0x0207) rec.nic.link_layer = LinkLayer::kInfiniBand;
    nics_.push_back(std::move(rec));
    return OkStatus();
  }
  for (; net != nullptr; net = net->NextSiblingElement("net")) {
    NicRec rec = BaseNic(busid, cpu, placement);
    rec.nic.name = Attr(net, "name").value_or("");
    ASSIGN_OR_RETURN(rec.dev, IntAttr(source_, net, "dev"));
    ASSIGN_OR_RETURN(std::optional<long long> speed, IntAttr(source_, net, "speed"));
    if (speed && *speed > 0) rec.nic.rate_gbps = static_cast<double>(*speed) / 1000.0;
    ASSIGN_OR_RETURN(std::optional<long long> port, IntAttr(source_, net, "port"));
    if (port && *port >= 0 && *port < 1024) rec.nic.port = static_cast<int>(*port);
    if (pci_class >= 0 && ((pci_class >> 8) & 0xffff) == 0x0207) {
      rec.nic.link_layer = LinkLayer::kInfiniBand;
    } else if (StartsWith(rec.nic.name, "eth") || StartsWith(rec.nic.name, "en")) {
      rec.nic.link_layer = LinkLayer::kEthernet;
    }
    nics_.push_back(std::move(rec));
  }
  return OkStatus();
}

StatusOr<NodeTopology> Parser::Run(const XMLElement* system) {
  t_.source = "nccl-xml:" + source_;
  for (const XMLElement* c = system->FirstChildElement("cpu"); c != nullptr;
       c = c->NextSiblingElement("cpu")) {
    RETURN_IF_ERROR(ParseCpu(c));
  }
  std::sort(t_.numa_nodes.begin(), t_.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });

  // GPUs: <gpu dev> order when every GPU has a distinct dev, else bus-id order.
  std::set<long long> devs;
  bool use_dev = std::all_of(gpus_.begin(), gpus_.end(),
                             [&](const GpuRec& g) { return g.dev && devs.insert(*g.dev).second; });
  std::stable_sort(gpus_.begin(), gpus_.end(), [&](const GpuRec& a, const GpuRec& b) {
    return use_dev ? *a.dev < *b.dev : a.gpu.pci_bus_id < b.gpu.pci_bus_id;
  });
  const size_t n = gpus_.size();
  std::map<std::string, int> pos_of_bus;
  for (size_t i = 0; i < n; ++i) {
    gpus_[i].gpu.index = use_dev ? static_cast<int>(*gpus_[i].dev) : static_cast<int>(i);
    if (!gpus_[i].gpu.pci_bus_id.empty()) pos_of_bus[gpus_[i].gpu.pci_bus_id] = static_cast<int>(i);
  }

  std::vector<std::vector<int>> nvlinks(n, std::vector<int>(n, 0));
  std::vector<int> switch_links(n, 0), other_links(n, 0);
  bool any_link = false;
  for (size_t i = 0; i < n; ++i) {
    for (const LinkRef& l : gpus_[i].links) {
      any_link = true;
      auto it = pos_of_bus.find(l.target);
      if (l.tclass == 0x068000 || (it == pos_of_bus.end() && (l.tclass >> 8) == 0x0680)) {
        switch_links[i] += l.count;
      } else if (it != pos_of_bus.end()) {
        const int j = it->second;
        nvlinks[i][j] = std::max(nvlinks[i][j], l.count);
        nvlinks[j][i] = std::max(nvlinks[j][i], l.count);
      } else {
        other_links[i] += l.count;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    int direct = 0;
    for (size_t j = 0; j < n; ++j) direct += nvlinks[i][j];
    gpus_[i].gpu.nvlink_ports = direct + switch_links[i] + other_links[i];
    if (switch_links[i] > 0) t_.nvswitch = true;
  }
  if (t_.nvswitch) {
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < n; ++b) {
        if (a == b || switch_links[a] == 0 || switch_links[b] == 0) continue;
        nvlinks[a][b] += std::min(switch_links[a], switch_links[b]);
      }
    }
  }
  for (GpuRec& g : gpus_) t_.gpus.push_back(std::move(g.gpu));
  if (!t_.gpus.empty() && std::all_of(t_.gpus.begin(), t_.gpus.end(), [&](const Gpu& g) {
        return !g.model.empty() && g.model == t_.gpus[0].model;
      })) {
    t_.gpu_model = t_.gpus[0].model;
  }

  std::stable_sort(nics_.begin(), nics_.end(), [](const NicRec& a, const NicRec& b) {
    const long long da = a.dev.value_or(LLONG_MAX), db = b.dev.value_or(LLONG_MAX);
    if (da != db) return da < db;
    if (a.nic.pci_bus_id != b.nic.pci_bus_id) return a.nic.pci_bus_id < b.nic.pci_bus_id;
    return a.order < b.order;
  });
  for (size_t i = 0; i < nics_.size(); ++i) {
    Nic& nic = nics_[i].nic;
    nic.index = static_cast<int>(i);
    if (nic.name.empty()) nic.name = "NIC" + std::to_string(i);
    t_.nics.push_back(std::move(nic));
  }

  t_.ResetPaths();
  t_.DerivePathsFromStructure(nvlinks);
  if (!any_link) t_.InferNvSwitch();
  t_.nvlink_unknown = !any_link && t_.gpus.size() >= 2;
  t_.CompleteNumaNodes();
  Status s = t_.Validate();
  if (!s.ok()) return s.WithPrefix(source_);
  return std::move(t_);
}

}  // namespace

StatusOr<NodeTopology> ParseNcclXml(std::string_view text, const std::string& source) {
  if (text.size() > kMaxXmlBytes) return InvalidArgumentError(source + ": XML larger than 64 MiB");
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) {
    if (doc.ErrorID() == tinyxml2::XML_ERROR_EMPTY_DOCUMENT) {
      return InvalidArgumentError(source + ": empty document, expected NCCL topology XML");
    }
    return InvalidArgumentError(
        source + ":" + std::to_string(std::max(1, doc.ErrorLineNum())) +
        ": malformed XML: " + tinyxml2::XMLDocument::ErrorIDToName(doc.ErrorID()));
  }
  const XMLElement* root = doc.RootElement();
  if (root == nullptr) return InvalidArgumentError(source + ": no root element");
  if (std::strcmp(root->Name(), "graphs") == 0) {
    return InvalidArgumentError(source +
                                " is an NCCL graph file (<graphs>), not a topology (<system>)");
  }
  if (std::strcmp(root->Name(), "system") != 0) {
    return InvalidArgumentError(Where(source, root) + ": root element <" + root->Name() +
                                ">, expected <system> (NCCL topology XML)");
  }
  Parser parser(source);
  return parser.Run(root);
}

bool LooksLikeNcclXml(std::string_view text) {
  return text.find("<system") != std::string_view::npos ||
         text.find("<graphs") != std::string_view::npos;
}

}  // namespace toposched::topo::io
