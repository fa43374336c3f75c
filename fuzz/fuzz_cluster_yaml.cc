// libFuzzer target: the cluster spec (YAML) reader over any bytes. Profiles' topology files are
// resolved against data/clusters, so seeds from there read their real topologies.
#include <cstddef>
#include <cstdint>
#include <string>

#include "topo/io/cluster_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)toposched::topo::io::ParseClusterYaml(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz",
      std::string(TS_SOURCE_DIR) + "/data/clusters");
  return 0;
}
