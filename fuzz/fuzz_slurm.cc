// libFuzzer target: what the project reads from Slurm: topology.conf and gres.conf, and the
// outputs of `scontrol show node/job -o` (records, nodes, jobs) and a job's layout request.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "slurm/scontrol.h"
#include "topo/io/slurm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)toposched::topo::io::ParseTopologyConf(text, "fuzz");
  (void)toposched::topo::io::ParseGresConf(text, "fuzz");
  namespace slurm = toposched::slurm;
  (void)slurm::ParseRecords(text, "fuzz");
  (void)slurm::ParseNodes(text, "fuzz");
  (void)slurm::ParseJobs(text, "fuzz");
  (void)slurm::ParseGres(text);
  (void)slurm::ParseLayoutRequest(text);
  return 0;
}
