// Planted for scripts/check-unity-names.py's test: core declares Quote.
#pragma once
#include <string>
namespace toposched {
std::string Quote(const std::string& s);
}  // namespace toposched
