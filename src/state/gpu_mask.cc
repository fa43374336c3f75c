#include "state/gpu_mask.h"

#include "core/strings.h"

namespace toposched::sched {

GpuMask GpuMask::FirstN(int n) {
  GpuMask m;
  for (int i = 0; i < n && i < kMaxGpus; ++i) m.set(i);
  return m;
}

GpuMask GpuMask::FromPositions(std::span<const int> positions) {
  GpuMask m;
  for (int p : positions) {
    if (p >= 0 && p < kMaxGpus) m.set(p);
  }
  return m;
}

std::vector<int> GpuMask::Positions() const {
  std::vector<int> out;
  out.reserve(count());
  for (int w = 0; w < 2; ++w) {
    for (uint64_t b = w_[w]; b; b &= b - 1) out.push_back(64 * w + std::countr_zero(b));
  }
  return out;
}

std::string GpuMask::ToString() const { return FormatIntList(Positions()); }

}  // namespace toposched::sched
