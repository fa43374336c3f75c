// Time units: the scheduler keeps every time as integer microseconds (int64); these are the
// factors between units, written once. A double divided by kUsPerS is the same double as one
// divided by 1e6 (the factor converts exactly), so callers keep their exact results.
#pragma once

#include <cstdint>

namespace toposched {

inline constexpr int64_t kUsPerMs = 1'000;
inline constexpr int64_t kUsPerS = 1'000'000;
inline constexpr int64_t kUsPerHour = 3'600 * kUsPerS;

// Seconds (a display value) of a microsecond count.
inline constexpr double SecondsOfUs(int64_t us) { return static_cast<double>(us) / kUsPerS; }

}  // namespace toposched
