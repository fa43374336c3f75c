// Random draws the simulator shares (the replay's failures, the trace generator): computed from
// the generator's raw 64-bit output, so that a seed gives the same numbers with every standard
// library (std::uniform_real_distribution's algorithm is left to each).
#pragma once

#include <random>

namespace toposched::sim {

// Uniform in (0, 1]: 53 random bits, never 0, so that log() of it is finite.
inline double Uniform01(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

}  // namespace toposched::sim
