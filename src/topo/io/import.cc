#include "topo/io/import.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "core/file.h"
#include "core/strings.h"
#include "topo/io/hwloc_xml.h"
#include "topo/io/json_io.h"
#include "topo/io/nccl_xml.h"
#include "topo/io/nvidia_smi.h"

namespace toposched::topo::io {

StatusOr<TopoFormat> ParseTopoFormat(std::string_view name) {
  std::string n = ToLower(Trim(name));
  if (n == "auto" || n.empty()) return TopoFormat::kAuto;
  if (n == "nvidia-smi" || n == "nvidia_smi" || n == "smi") return TopoFormat::kNvidiaSmi;
  if (n == "hwloc" || n == "hwloc-xml") return TopoFormat::kHwloc;
  if (n == "nccl-xml" || n == "nccl") return TopoFormat::kNcclXml;
  if (n == "json") return TopoFormat::kJson;
  return InvalidArgumentError("unknown format \"" + std::string(name) +
                              "\" (expected nvidia-smi, hwloc, nccl-xml, json or auto)");
}

StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes) {
  return ReadFileBounded(path, max_bytes, "this input");
}

namespace {

bool LooksLikeJson(std::string_view text) {
  std::string_view t = Trim(text);
  return !t.empty() && t.front() == '{';
}

}  // namespace

StatusOr<NodeTopology> ImportTopologyText(const std::string& text, const std::string& source,
                                          TopoFormat format) {
  if (format == TopoFormat::kAuto) {
    if (LooksLikeJson(text)) {
      format = TopoFormat::kJson;
    } else if (LooksLikeHwlocXml(text)) {
      format = TopoFormat::kHwloc;
    } else if (LooksLikeNcclXml(text)) {
      format = TopoFormat::kNcclXml;
    } else if (LooksLikeNvidiaSmiTopo(text)) {
      format = TopoFormat::kNvidiaSmi;
    } else if (LooksLikeNvidiaSmiP2p(text)) {
      return InvalidArgumentError(source +
                                  ": this is `nvidia-smi topo -p2p` output (P2P capability only); "
                                  "import the `nvidia-smi topo -m` matrix instead");
    } else if (LooksLikeNvidiaSmiNvlinkStatus(text)) {
      return InvalidArgumentError(source +
                                  ": this is `nvidia-smi nvlink -s` output (link rates only); "
                                  "import the `nvidia-smi topo -m` matrix instead");
    } else {
      return InvalidArgumentError(
          source +
          ": unrecognised topology format (expected nvidia-smi topo -m text, hwloc XML, "
          "NCCL topology XML or toposched JSON; use --format to force one)");
    }
  }
  switch (format) {
    case TopoFormat::kNvidiaSmi:
      return ParseNvidiaSmiTopo(text, source);
    case TopoFormat::kHwloc:
      return ParseHwlocXml(text, source);
    case TopoFormat::kNcclXml:
      return ParseNcclXml(text, source);
    case TopoFormat::kJson:
      return TopologyFromJson(text, source);
    case TopoFormat::kAuto:
      break;
  }
  return InternalError("unreachable format");
}

StatusOr<NodeTopology> ImportTopologyFile(const std::string& path, TopoFormat format) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ImportTopologyText(text, path, format);
}

}  // namespace toposched::topo::io
