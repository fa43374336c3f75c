// libFuzzer target: the simulator's trace readers (Philly, OpenB, Tiresias, the generic CSV).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  namespace sim = toposched::sim;
  for (sim::TraceFormat f : {sim::TraceFormat::kPhilly, sim::TraceFormat::kOpenb,
                             sim::TraceFormat::kTiresias, sim::TraceFormat::kCsv}) {
    (void)sim::ParseTrace(text, "fuzz", f);
  }
  return 0;
}
