// libFuzzer target: the NCCL topology XML reader over any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topo/io/nccl_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)toposched::topo::io::ParseNcclXml(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  return 0;
}
