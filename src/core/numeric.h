// Numeric constants shared across modules.
#pragma once

#include <limits>

namespace toposched {

// +infinity: a time or cost that cannot happen (no path, no bandwidth, an empty candidate).
inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace toposched
