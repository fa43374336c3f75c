// libFuzzer target: the hwloc XML reader over any bytes.
#include <hwloc.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "topo/io/hwloc_xml.h"

namespace {
// hwloc loads its plugins (the libxml2 XML importer among them) with the first topology and
// unloads them with the last one destroyed. One topology kept for the whole run keeps them
// loaded, so that LeakSanitizer can name the plugin when a failed load leaks inside it
// (fuzz/lsan.supp) instead of reporting an unknown, unloaded module.
const bool kPluginsKept = [] {
  hwloc_topology_t t = nullptr;
  return hwloc_topology_init(&t) == 0;
}();
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kPluginsKept;
  (void)toposched::topo::io::ParseHwlocXml(std::string(reinterpret_cast<const char*>(data), size),
                                           "fuzz");
  return 0;
}
