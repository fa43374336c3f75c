// libFuzzer target: the hwloc XML reader over any bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "topo/io/hwloc_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)toposched::topo::io::ParseHwlocXml(std::string(reinterpret_cast<const char*>(data), size),
                                           "fuzz");
  return 0;
}
