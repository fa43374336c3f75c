// libFuzzer target: the nvidia-smi readers (topo -m, topo -p2p, nvlink -s) over any bytes.
// A parse either fails with a Status or gives a model; it never crashes or reads out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topo/io/nvidia_smi.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace io = toposched::topo::io;
  (void)io::ParseNvidiaSmiTopo(text, "fuzz");
  (void)io::ParseNvidiaSmiP2p(text, "fuzz");
  (void)io::ParseNvidiaSmiNvlinkStatus(text, "fuzz");
  return 0;
}
