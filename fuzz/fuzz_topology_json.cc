// libFuzzer target: the node topology JSON reader (what `topo import --format json` reads and
// what the daemon takes from `toposched agent`, POST /api/v1/nodes/{name}/topology) over any
// bytes; a topology it accepts must write back and read again to the same model.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "topo/io/json_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = toposched::topo::io::TopologyFromJson(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!t.ok()) return 0;
  auto again = toposched::topo::io::TopologyFromJson(toposched::topo::io::TopologyToJson(*t, -1),
                                                     "fuzz-again");
  if (!again.ok() || !(*again == *t)) std::abort();
  return 0;
}
