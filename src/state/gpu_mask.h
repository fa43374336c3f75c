// A set of GPU positions of one node as a 128-bit mask (NodeTopology::gpus positions, < 128).
// Node selection works on masks: 64-bit words for speed, two words so a 72-GPU NVLink domain
// fits. Value type, trivially copyable; knows nothing of topologies or costs.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace toposched::sched {

class GpuMask {
 public:
  static constexpr int kMaxGpus = 128;

  constexpr GpuMask() = default;
  constexpr GpuMask(uint64_t lo, uint64_t hi) : w_{lo, hi} {}
  // Positions 0..n-1 (n ≤ 128).
  static GpuMask FirstN(int n);
  // Positions outside 0..127 are ignored.
  static GpuMask FromPositions(std::span<const int> positions);

  bool test(int pos) const { return (w_[pos >> 6] >> (pos & 63)) & 1u; }
  void set(int pos) { w_[pos >> 6] |= uint64_t{1} << (pos & 63); }
  void reset(int pos) { w_[pos >> 6] &= ~(uint64_t{1} << (pos & 63)); }
  int count() const { return std::popcount(w_[0]) + std::popcount(w_[1]); }
  bool empty() const { return (w_[0] | w_[1]) == 0; }
  // Lowest set position, -1 when empty.
  int lowest() const {
    if (w_[0]) return std::countr_zero(w_[0]);
    if (w_[1]) return 64 + std::countr_zero(w_[1]);
    return -1;
  }
  uint64_t lo() const { return w_[0]; }
  uint64_t hi() const { return w_[1]; }
  // Ascending positions.
  std::vector<int> Positions() const;
  // "0,2-5" (FormatIntList of Positions()).
  std::string ToString() const;

  GpuMask operator&(const GpuMask& o) const { return {w_[0] & o.w_[0], w_[1] & o.w_[1]}; }
  GpuMask operator|(const GpuMask& o) const { return {w_[0] | o.w_[0], w_[1] | o.w_[1]}; }
  GpuMask operator^(const GpuMask& o) const { return {w_[0] ^ o.w_[0], w_[1] ^ o.w_[1]}; }
  GpuMask operator~() const { return {~w_[0], ~w_[1]}; }
  bool operator==(const GpuMask& o) const = default;

  size_t Hash() const {
    uint64_t h = w_[0] * 0x9E3779B97F4A7C15ull ^ (w_[1] + 0x632BE59BD9B4E019ull);
    return static_cast<size_t>(h ^ (h >> 29));
  }

 private:
  uint64_t w_[2] = {0, 0};
};

}  // namespace toposched::sched
