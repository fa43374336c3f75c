// libFuzzer target: the log readers of `diagnose` (NCCL, PyTorch, driver/Xid, Slurm,
// Kubernetes, scheduler logs) over any bytes, as one text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "diag/diagnose.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)toposched::diag::DiagnoseText(std::string_view(reinterpret_cast<const char*>(data), size),
                                      "fuzz", nullptr);
  return 0;
}
